// Mesh assignment: annotations pin values to meshes; the assignment flows along operands.
#include "src/spmd/mesh_assignment.h"

#include <algorithm>
#include <optional>
#include <set>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "src/spmd/axis_sharding.h"

namespace vkspmd::spmd {
namespace {

// The devices that hold data under a (non-tuple) sharding; empty for replicated and manual.
std::set<int64_t> DevicesOf(const ir::Sharding& sharding) {
  if (sharding.kind() == ir::Sharding::Kind::kMaximal) return {sharding.maximal_device()};
  if (sharding.kind() != ir::Sharding::Kind::kTiled) return {};
  const std::vector<int64_t> ids = sharding.tile_assignment().Flatten();
  return std::set<int64_t>(ids.begin(), ids.end());
}

absl::StatusOr<int64_t> MeshOfSharding(const ir::Instruction& instruction,
                                       const ir::Sharding& sharding,
                                       const std::vector<Mesh>& meshes) {
  const std::set<int64_t> devices = DevicesOf(sharding);
  if (devices.empty()) return -1;
  // Meshes over the same devices differ in their axes: prefer one that expresses the sharding.
  std::optional<int64_t> same_devices;
  for (size_t m = 0; m < meshes.size(); ++m) {
    const std::vector<int64_t>& ids = meshes[m].device_ids();
    const std::set<int64_t> mesh_devices(ids.begin(), ids.end());
    const bool fits = sharding.kind() == ir::Sharding::Kind::kMaximal
                          ? mesh_devices.contains(*devices.begin())
                          : mesh_devices == devices;
    if (!fits) continue;
    const int64_t rank = sharding.kind() == ir::Sharding::Kind::kTiled ? sharding.TiledDataRank()
                                                                       : instruction.shape().rank();
    if (FromHloSharding(sharding, meshes[m], rank).ok()) return static_cast<int64_t>(m);
    if (!same_devices.has_value()) same_devices = m;
  }
  if (same_devices.has_value()) return *same_devices;
  std::vector<std::string> listed;
  for (const Mesh& mesh : meshes) listed.push_back(mesh.ToString());
  return absl::InvalidArgumentError(
      fmt::format("{}: sharding {} uses devices {{{}}}, which are not those of any mesh ({})",
                  instruction.Describe(), sharding.ToString(), absl::StrJoin(devices, ","),
                  absl::StrJoin(listed, "; ")));
}

}  // namespace

absl::StatusOr<absl::flat_hash_map<const ir::Instruction*, int64_t>> AssignMeshes(
    const ir::Module& module, const std::vector<Mesh>& meshes) {
  absl::flat_hash_map<const ir::Instruction*, int64_t> assigned;
  for (const auto& instruction : module.entry()->instructions()) {
    int64_t mesh = -1;
    const ir::Instruction* pinned_by = nullptr;
    if (instruction->sharding().has_value()) {
      const ir::Sharding& sharding = *instruction->sharding();
      const std::vector<ir::Sharding> leaves = sharding.kind() == ir::Sharding::Kind::kTuple
                                                   ? sharding.tuple_elements()
                                                   : std::vector<ir::Sharding>{sharding};
      for (const ir::Sharding& leaf : leaves) {
        absl::StatusOr<int64_t> leaf_mesh = MeshOfSharding(*instruction, leaf, meshes);
        if (!leaf_mesh.ok()) return leaf_mesh.status();
        if (*leaf_mesh >= 0) mesh = *leaf_mesh;
      }
      if (mesh >= 0) pinned_by = instruction.get();
    }
    for (const ir::Instruction* operand : instruction->operands()) {
      const int64_t operand_mesh = assigned.at(operand);
      if (operand_mesh < 0) continue;
      if (mesh < 0) {
        mesh = operand_mesh;
        pinned_by = operand;
      } else if (mesh != operand_mesh) {
        return absl::InvalidArgumentError(
            fmt::format("{} ({}): %{} lives on mesh {} but %{} on mesh {}", instruction->Describe(),
                        ir::OpcodeName(instruction->opcode()), pinned_by->name(),
                        meshes[mesh].ToString(), operand->name(), meshes[operand_mesh].ToString()));
      }
    }
    assigned[instruction.get()] = mesh;
  }
  return assigned;
}

}  // namespace vkspmd::spmd
