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

}  // namespace vkspmd::ir
