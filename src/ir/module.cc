// Computation and Module: ownership of instructions and computations, and lookups.
// Names are not required to be unique here; the parser and builder keep them unique.
#include "src/ir/module.h"

#include <set>

namespace vkspmd::ir {

Instruction* Computation::AddInstruction(std::unique_ptr<Instruction> instruction) {
  instruction->set_parent(this);
  Instruction* added = instruction.get();
  instructions_.push_back(std::move(instruction));
  if (added->opcode() == Opcode::kParameter) {
    const int64_t number = added->attributes().parameter_number;
    if (number >= static_cast<int64_t>(parameters_.size())) parameters_.resize(number + 1);
    parameters_[number] = added;
  }
  return added;
}

Instruction* Computation::root() const {
  if (root_ != nullptr) return root_;
  return instructions_.empty() ? nullptr : instructions_.back().get();
}

int64_t Computation::RemoveUnreachable() {
  Instruction* const kept_root = root();
  if (kept_root == nullptr) return 0;
  std::set<const Instruction*> live = {kept_root};
  // Users follow their operands, so one backward sweep finds every live instruction.
  for (auto it = instructions_.rbegin(); it != instructions_.rend(); ++it) {
    if (!live.count(it->get())) continue;
    for (const Instruction* operand : (*it)->operands()) live.insert(operand);
  }
  const size_t before = instructions_.size();
  std::erase_if(instructions_, [&](const std::unique_ptr<Instruction>& instruction) {
    return instruction->opcode() != Opcode::kParameter && !live.count(instruction.get());
  });
  root_ = kept_root;
  return static_cast<int64_t>(before - instructions_.size());
}

Computation* Module::AddComputation(std::unique_ptr<Computation> computation) {
  computations_.push_back(std::move(computation));
  return computations_.back().get();
}

Computation* Module::FindComputation(std::string_view name) const {
  for (const auto& computation : computations_) {
    if (computation->name() == name) return computation.get();
  }
  return nullptr;
}

}  // namespace vkspmd::ir
