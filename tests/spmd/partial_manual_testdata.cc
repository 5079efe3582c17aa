// Reading issue 19's partially manual testdata programs (see partial_manual_testdata.h).
#include "tests/spmd/partial_manual_testdata.h"

#include <cstdio>
#include <filesystem>

#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/io/npy.h"
#include "src/ir/parser.h"

namespace vkspmd::spmd::testing {
namespace {

absl::StatusOr<std::string> ReadText(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return absl::NotFoundError(path);
  std::string text;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), file)) > 0;) text.append(buffer, n);
  std::fclose(file);
  return text;
}

}  // namespace

const std::vector<std::string>& PartialManualProgramNames() {
  static const std::vector<std::string> names = {"shard_map_auto_all_gather",
                                                 "shard_map_auto_reduce_scatter",
                                                 "shard_map_auto_all_to_all",
                                                 "shard_map_auto_partition_id",
                                                 "shard_map_auto_permuted_groups",
                                                 "shard_map_auto_permuted_8",
                                                 "sharding_unspecified_dims",
                                                 "shard_map_auto_tuple_collectives",
                                                 "shard_map_auto_halo"};
  return names;
}

absl::StatusOr<PartialManualProgram> ReadPartialManualProgram(const std::string& name) {
  const std::string base = std::string(VKSPMD_TESTDATA_DIR) + "/" + name;
  PartialManualProgram program;
  VKSPMD_ASSIGN_OR_RETURN(std::string text, ReadText(base + ".hlo"));
  VKSPMD_ASSIGN_OR_RETURN(program.module, ir::ParseAndVerifyModule(text));
  // generate.py writes per-device files for the programs whose devices it evaluates apart.
  const std::string stem = std::filesystem::exists(base + ".dev0.out.npy") ? base + ".dev0" : base;
  for (int64_t k = 0; k < program.module->entry()->parameter_count(); ++k) {
    VKSPMD_ASSIGN_OR_RETURN(ir::Literal argument,
                            io::ReadNpyFile(fmt::format("{}.arg{}.npy", stem, k)));
    program.arguments.push_back(std::move(argument));
  }
  VKSPMD_ASSIGN_OR_RETURN(program.expected, io::ReadNpyFile(stem + ".out.npy"));
  return program;
}

std::vector<Mesh> MeshesFor(const ir::Module& module) {
  std::vector<std::vector<int64_t>> shapes = {{4}, {2, 2}};
  if (module.partition_count() == 8) shapes = {{8}, {2, 4}, {2, 2, 2}};
  std::vector<Mesh> meshes;
  for (std::vector<int64_t>& shape : shapes) meshes.push_back(*Mesh::Create(std::move(shape)));
  return meshes;
}

}  // namespace vkspmd::spmd::testing
