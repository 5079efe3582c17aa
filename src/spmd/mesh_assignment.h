// Several meshes at once: which mesh each value of a program lives on, from its annotations, and
// the error for an op whose operands live on different meshes (naming both).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "src/ir/module.h"
#include "src/spmd/mesh.h"

namespace vkspmd::spmd {

// Per entry instruction, the index of its mesh in `meshes`, or -1 when nothing ties it to one
// (unannotated values computed from such values, replicated annotations). A tiled sharding lives
// on the mesh whose devices it uses exactly; a maximal one on the mesh holding its device (the
// first, when several do). Values inherit their operands' mesh.
absl::StatusOr<absl::flat_hash_map<const ir::Instruction*, int64_t>> AssignMeshes(
    const ir::Module& module, const std::vector<Mesh>& meshes);

}  // namespace vkspmd::spmd
