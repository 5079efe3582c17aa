// Rewrites that turn what XLA's front and back ends emit into the IR's op set while a module is
// read: a called computation (fusion, call, async-start) copied into its caller, a scalar
// computation mapped over arrays (map), and a layout-dependent bitcast as transposes and a
// reshape. The parser runs them as it meets those ops, so every loader gets them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "src/ir/module.h"

namespace vkspmd::ir {

// Adds a new instruction to the caller (naming it uniquely) and returns it.
using AddInstructionFn = std::function<Instruction*(std::unique_ptr<Instruction>)>;

// Copies `callee` into the caller through `add`, with parameter(i) replaced by arguments[i];
// returns what its root became (an argument when the root is a parameter). Arguments must match
// the parameters' shapes; instructions keep their names, attributes, shardings and locations.
absl::StatusOr<Instruction*> InlineComputation(const Computation& callee,
                                               absl::Span<Instruction* const> arguments,
                                               const AddInstructionFn& add);

// map(arguments...), to_apply=callee: the scalar computation applied elementwise over the
// arguments' common dimensions. Every callee op must be elementwise or a scalar constant.
absl::StatusOr<Instruction*> MapComputation(const Computation& callee,
                                            absl::Span<Instruction* const> arguments,
                                            const AddInstructionFn& add);

// bitcast of `operand` (laid out minor-to-major as `operand_layout`) to `shape` (laid out as
// `result_layout`): the same bytes read in another logical order, i.e. a transpose to the
// operand's physical order, a reshape, and a transpose from the result's physical order (each
// left out when it is the identity). Returns `operand` itself when nothing changes.
absl::StatusOr<Instruction*> BitcastAsShapeOps(Instruction* operand,
                                               absl::Span<const int64_t> operand_layout,
                                               const Shape& shape,
                                               absl::Span<const int64_t> result_layout,
                                               const AddInstructionFn& add);

}  // namespace vkspmd::ir
