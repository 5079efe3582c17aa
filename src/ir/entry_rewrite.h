// A copy of a module whose entry instructions may each be replaced by other instructions: the
// frame of the device compiler's expansions (rng-bit-generator as Philox ops, long sorts as
// merging networks), which keep every other instruction and called computation as it is.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/inline_calls.h"
#include "src/ir/module.h"

namespace vkspmd::ir {

// The replacement of `original` (its operands already rewritten), written through `add`; nullptr
// keeps a copy of the instruction.
using EntryExpansion = std::function<absl::StatusOr<Instruction*>(
    const Instruction& original, const std::vector<Instruction*>& operands,
    const AddInstructionFn& add)>;

// `module` with each entry instruction replaced as `expand` says; a get-tuple-element of a
// replacement that is a tuple becomes that element, and what nothing uses any more is removed.
absl::StatusOr<std::unique_ptr<Module>> RewriteEntry(const Module& module,
                                                     const EntryExpansion& expand);

// Writes an expansion's instructions through `add`, each named after the instruction it replaces
// ("%sort.slice") and given its location, so errors and dumps point at the original op.
class ExpansionBuilder {
 public:
  ExpansionBuilder(const Instruction& original, const AddInstructionFn& add)
      : original_(original), add_(add) {}

  const Instruction& original() const { return original_; }
  Instruction* New(Opcode opcode, Shape shape, std::vector<Instruction*> operands,
                   InstructionAttributes attributes = {});
  // The scalar constant `value` of the integer type `type`.
  Instruction* Scalar(DType type, int64_t value);
  // A constant of `type` broadcast to `dims`.
  Instruction* Splat(DType type, int64_t value, const std::vector<int64_t>& dims);
  // An s32 iota of `dims` along `dim`.
  Instruction* Iota(const std::vector<int64_t>& dims, int64_t dim);
  Instruction* Reshape(Instruction* value, std::vector<int64_t> dims);
  Instruction* Convert(Instruction* value, DType type);
  // value[..., begin:end] along `dim`, the other dims whole.
  Instruction* Slice(Instruction* value, int64_t dim, int64_t begin, int64_t end);

 private:
  const Instruction& original_;
  const AddInstructionFn& add_;
};

}  // namespace vkspmd::ir
