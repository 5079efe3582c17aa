// Compilation dumps (see program_dump.h).
#include "src/exec/program_dump.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "src/base/environment.h"
#include "src/base/status_macros.h"
#include "src/ir/printer.h"

namespace vkspmd::exec {
namespace {

std::string FileSafe(std::string name) {
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !std::isalnum(c) && c != '.' && c != '_'; },
      '_');
  return name;
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text;
  file.close();
  if (!file.good()) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::Status MakeDirectory(const std::string& directory) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error)
    return absl::InternalError(absl::StrCat("cannot create ", directory, ": ", error.message()));
  return absl::OkStatus();
}

}  // namespace

absl::Status DumpKernels(const codegen::ProgramPlan& plan, const std::string& directory) {
  VKSPMD_RETURN_IF_ERROR(MakeDirectory(directory));
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    const codegen::KernelPlan& kernel = plan.kernels[k];
    std::string text = kernel.glsl.empty()
                           ? absl::StrCat("// ", kernel.name, ": a collective, run by the host\n")
                           : kernel.glsl;
    VKSPMD_RETURN_IF_ERROR(
        WriteFile(absl::StrFormat("%s/%02d-%s.comp", directory, k, FileSafe(kernel.name)), text));
  }
  return absl::OkStatus();
}

absl::Status DumpCompilationIfRequested(const ir::Module& module, const codegen::ProgramPlan& plan,
                                        int mesh_index) {
  std::optional<std::string> root = base::EnvironmentValue("VKSPMD_DUMP_DIR");
  if (!root.has_value() || root->empty()) return absl::OkStatus();
  const std::string text = ir::PrintModule(module);
  const std::string directory =
      absl::StrFormat("%s/%s-%016x-device%d", *root, FileSafe(module.name()),
                      std::hash<std::string>{}(text), mesh_index);
  VKSPMD_RETURN_IF_ERROR(MakeDirectory(directory));
  VKSPMD_RETURN_IF_ERROR(WriteFile(directory + "/module.hlo", text));
  std::string listing;
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    const codegen::KernelPlan& kernel = plan.kernels[k];
    std::vector<std::string> reads, writes;
    for (int buffer : kernel.inputs) reads.push_back(plan.buffers[buffer].name);
    for (int buffer : kernel.outputs()) writes.push_back(plan.buffers[buffer].name);
    absl::StrAppendFormat(
        &listing, "%3d %-28s %-28s invocations %-8d reads %d buffer(s)  [%s -> %s]\n", k,
        codegen::KernelKindName(kernel.kind), kernel.name, kernel.invocations, kernel.inputs.size(),
        absl::StrJoin(reads, " "), absl::StrJoin(writes, " "));
  }
  VKSPMD_RETURN_IF_ERROR(WriteFile(directory + "/kernels.txt", listing));
  return DumpKernels(plan, directory);
}

absl::Status DumpPartitionInputIfRequested(const ir::Module& module, const spmd::Mesh& mesh) {
  std::optional<std::string> root = base::EnvironmentValue("VKSPMD_DUMP_DIR");
  if (!root.has_value() || root->empty()) return absl::OkStatus();
  const std::string text = ir::PrintModule(module);
  const std::string directory = absl::StrFormat("%s/%s-%016x-gspmd", *root, FileSafe(module.name()),
                                                std::hash<std::string>{}(text));
  VKSPMD_RETURN_IF_ERROR(MakeDirectory(directory));
  VKSPMD_RETURN_IF_ERROR(WriteFile(directory + "/mesh.txt", mesh.ToString() + "\n"));
  return WriteFile(directory + "/module.hlo", text);
}

}  // namespace vkspmd::exec
