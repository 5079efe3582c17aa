// Sharding propagation (GSPMD-NOTES 2): forward and backward over the entry computation until a
// fixed point, driven by the factor rules. User annotations are never changed.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "src/ir/module.h"
#include "src/spmd/axis_sharding.h"
#include "src/spmd/mesh.h"

namespace vkspmd::spmd {

// One sharding per leaf of each instruction's value (one for arrays).
using ShardingMap = absl::flat_hash_map<const ir::Instruction*, std::vector<AxisSharding>>;

struct PropagationResult {
  ShardingMap shardings;  // every entry instruction, unannotated leftovers replicated
  absl::flat_hash_set<const ir::Instruction*> annotated;  // had sharding= in the input
  int64_t iterations = 0;
};

// Conflicts on a factor are settled in this order (documented priority):
//   1. a user annotation (sharding= on a parameter, an op or a Sharding custom-call) wins;
//   2. the candidate most of the op's tensors are already split along (fewest reshards: the
//      operand that avoids communication);
//   3. the longer axis list (more tiles), then the larger tensor, then the earlier operand.
// A tensor's sharding only ever grows (a dim's axes extend), so the iteration terminates.
absl::StatusOr<PropagationResult> PropagateShardings(const ir::Module& module, const Mesh& mesh);

// Writes the propagated shardings as sharding= on every entry instruction.
void AnnotateModule(ir::Module& module, const ShardingMap& shardings, const Mesh& mesh);

// The sharding of each leaf an instruction's sharding= gives (tuple shardings per element);
// device orders in `preferred_orders` are tried first where the mesh's own does not fit
// (FromHloSharding).
absl::StatusOr<std::vector<AxisSharding>> LeafShardings(
    const ir::Instruction& instruction, const Mesh& mesh,
    const std::vector<std::vector<int64_t>>& preferred_orders = {});

}  // namespace vkspmd::spmd
