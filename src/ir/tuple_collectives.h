// Collectives over several operands, as XLA's combiners write them (all-reduce(a, b) returning
// (a', b')), read while a module is parsed as one collective per operand and a tuple.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "src/ir/inline_calls.h"
#include "src/ir/instruction.h"

namespace vkspmd::ir {

// Whether `instruction` is a collective with several operands or a tuple result.
bool IsTupleCollective(const Instruction& instruction);

// The tuple of one collective per operand of `collective` (added through `add`), each with the
// collective's attributes and its element of the sharding (a tuple sharding needs one element per
// operand): the values XLA computes, since each operand is combined on its own. An all-to-all
// without dimensions= (operand i goes to the i-th device of each group, which must have as many
// devices as operands of one shape; replica_groups={} is one group of all the module's replicas
// or partitions, as for any collective) stacks its operands along a new leading dim, exchanges
// along it and takes the pieces apart.
absl::StatusOr<Instruction*> CollectivePerOperand(const Instruction& collective,
                                                  int64_t replica_count, int64_t partition_count,
                                                  const AddInstructionFn& add);

}  // namespace vkspmd::ir
