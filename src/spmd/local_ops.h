// The local form of one op in the per-device program: given operands already brought to the
// shardings of the chosen factor assignment, masks padding where it would change the result,
// emits the op on shard shapes and combines partial results (all-reduce or reduce-scatter).
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "src/spmd/factor_sharding.h"
#include "src/spmd/reshard.h"

namespace vkspmd::spmd {

struct LocalOp {
  const ir::Instruction* instruction = nullptr;
  const OpRule* rule = nullptr;
  FactorAxes factors;
  std::vector<PartitionedValue> operands;  // one per rule operand, in the projected shardings
  ir::Computation* to_apply = nullptr;     // reduce's reducer in the output module
  // The wanted result shardings: partial sums are reduce-scattered straight into a dim split
  // further than the op's own result where the reduction axes allow it.
  std::vector<AxisSharding> result_targets;
};

// One value per result leaf, in the sharding the op produced (before resharding to the target).
absl::StatusOr<std::vector<PartitionedValue>> EmitLocalOp(SpmdBuilder& builder, const LocalOp& op);

}  // namespace vkspmd::spmd
