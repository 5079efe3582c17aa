// Splitting a module at a loop into before/condition/body/after modules (see loop_split.h).
#include "src/ir/loop_split.h"

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"

namespace vkspmd::ir {
namespace {

// One module being written: an entry of new parameters and cloned instructions, and copies of
// the computations they call.
class StageWriter {
 public:
  StageWriter(const Module& source, const std::string& name)
      : module_(std::make_unique<Module>(name)) {
    module_->set_replica_count(source.replica_count());
    module_->set_partition_count(source.partition_count());
    entry_ = module_->AddComputation(std::make_unique<Computation>(name));
  }

  Instruction* Parameter(const Shape& shape, const std::string& name) {
    auto parameter =
        std::make_unique<Instruction>(Opcode::kParameter, shape, std::vector<Instruction*>{});
    parameter->attributes().parameter_number = parameter_count_++;
    parameter->set_name(name);
    return Add(std::move(parameter));
  }

  // `original` with `operands` (a parameter keeps its number); a get-tuple-element of a tuple
  // instruction is that element.
  Instruction* Clone(const Instruction& original, std::vector<Instruction*> operands) {
    if (original.opcode() == Opcode::kGetTupleElement && operands[0]->opcode() == Opcode::kTuple) {
      return operands[0]->operand(original.attributes().tuple_index);
    }
    return Add(Copied(original, std::move(operands)));
  }

  // `computation` written into the entry with its parameter bound to `argument`; its root.
  Instruction* Inline(const Computation& computation, Instruction* argument) {
    absl::flat_hash_map<const Instruction*, Instruction*> mapped;
    for (const auto& instruction : computation.instructions()) {
      if (instruction->opcode() == Opcode::kParameter) {
        mapped[instruction.get()] = argument;
        continue;
      }
      std::vector<Instruction*> operands;
      for (const Instruction* operand : instruction->operands()) {
        operands.push_back(mapped.at(operand));
      }
      mapped[instruction.get()] = Clone(*instruction, std::move(operands));
    }
    return mapped.at(computation.root());
  }

  Instruction* New(Opcode opcode, Shape shape, std::vector<Instruction*> operands,
                   const std::string& name) {
    auto instruction = std::make_unique<Instruction>(opcode, std::move(shape), std::move(operands));
    instruction->set_name(name);
    return Add(std::move(instruction));
  }

  Instruction* Element(Instruction* tuple, int64_t index) {
    if (tuple->opcode() == Opcode::kTuple) return tuple->operand(index);
    Instruction* element = New(Opcode::kGetTupleElement, tuple->shape().tuple_elements()[index],
                               {tuple}, "get-tuple-element");
    element->attributes().tuple_index = index;
    return element;
  }

  std::vector<Instruction*> Leaves(Instruction* value) {
    if (value->shape().IsArray()) return {value};
    std::vector<Instruction*> leaves;
    for (size_t i = 0; i < value->shape().tuple_elements().size(); ++i) {
      leaves.push_back(Element(value, static_cast<int64_t>(i)));
    }
    return leaves;
  }

  // The leaves as a value of `shape` (an array: the one leaf).
  Instruction* Pack(const std::vector<Instruction*>& leaves, const Shape& shape) {
    return shape.IsArray() ? leaves[0] : Tuple(leaves);
  }

  Instruction* Tuple(const std::vector<Instruction*>& leaves) {
    std::vector<Shape> shapes;
    for (const Instruction* leaf : leaves) shapes.push_back(leaf->shape());
    return New(Opcode::kTuple, Shape::Tuple(std::move(shapes)), leaves, "tuple");
  }

  std::unique_ptr<Module> Finish(Instruction* root) {
    entry_->set_root(root);
    entry_->RemoveUnreachable();
    module_->set_entry(entry_);
    return std::move(module_);
  }

 private:
  Instruction* Add(std::unique_ptr<Instruction> instruction) {
    std::string name = instruction->name();
    for (int64_t suffix = 1; names_.contains(name); ++suffix) {
      name = fmt::format("{}.{}", instruction->name(), suffix);
    }
    names_.insert(name);
    instruction->set_name(std::move(name));
    return entry_->AddInstruction(std::move(instruction));
  }

  // A copy of `original` whose called computations are this module's copies.
  std::unique_ptr<Instruction> Copied(const Instruction& original,
                                      std::vector<Instruction*> operands) {
    auto clone =
        std::make_unique<Instruction>(original.opcode(), original.shape(), std::move(operands));
    clone->attributes() = original.attributes();
    if (clone->attributes().to_apply != nullptr) {
      clone->attributes().to_apply = Copy(*clone->attributes().to_apply);
    }
    for (Computation*& called : clone->attributes().called) called = Copy(*called);
    clone->set_name(original.name());
    clone->set_sharding(original.sharding());
    clone->set_location(original.location());
    return clone;
  }

  Computation* Copy(const Computation& computation) {
    if (auto found = copies_.find(&computation); found != copies_.end()) return found->second;
    auto copy = std::make_unique<Computation>(computation.name());
    absl::flat_hash_map<const Instruction*, Instruction*> mapped;
    for (const auto& instruction : computation.instructions()) {
      std::vector<Instruction*> operands;
      for (const Instruction* operand : instruction->operands()) {
        operands.push_back(mapped.at(operand));
      }
      mapped[instruction.get()] = copy->AddInstruction(Copied(*instruction, std::move(operands)));
    }
    copy->set_root(mapped.at(computation.root()));
    Computation* added = module_->AddComputation(std::move(copy));
    copies_[&computation] = added;
    return added;
  }

  std::unique_ptr<Module> module_;
  Computation* entry_ = nullptr;
  int64_t parameter_count_ = 0;
  absl::flat_hash_set<std::string> names_;
  absl::flat_hash_map<const Computation*, Computation*> copies_;
};

bool IsFlatState(const Shape& shape) {
  if (shape.IsArray()) return true;
  for (const Shape& element : shape.tuple_elements()) {
    if (!element.IsArray()) return false;
  }
  return true;
}

// The leaves of a state of `shape`.
std::vector<Shape> LeafShapes(const Shape& shape) {
  return shape.IsArray() ? std::vector<Shape>{shape} : shape.tuple_elements();
}

// The initial leaves, with the while's sharding of each (a tuple sharding per element, any
// other for every leaf) as an annotated copy.
std::vector<Instruction*> ShardedInitialLeaves(StageWriter& writer, const Instruction& loop,
                                               Instruction* initial) {
  std::vector<Instruction*> leaves = writer.Leaves(initial);
  if (!loop.sharding().has_value()) return leaves;
  const Sharding& sharding = *loop.sharding();
  const bool per_leaf = sharding.kind() == Sharding::Kind::kTuple;
  if (per_leaf && sharding.tuple_elements().size() != leaves.size()) return leaves;
  for (size_t i = 0; i < leaves.size(); ++i) {
    Instruction* copy =
        writer.New(Opcode::kCopy, leaves[i]->shape(), {leaves[i]}, fmt::format("state.{}", i));
    copy->set_sharding(per_leaf ? sharding.tuple_elements()[i] : sharding);
    leaves[i] = copy;
  }
  return leaves;
}

}  // namespace

const Instruction* FirstEntryLoop(const Module& module) {
  for (const auto& instruction : module.entry()->instructions()) {
    if (instruction->opcode() == Opcode::kWhile) return instruction.get();
  }
  return nullptr;
}

absl::StatusOr<LoopSplit> SplitAtLoop(const Module& module, const Instruction& loop) {
  const Computation& entry = *module.entry();
  LoopSplit split;
  split.loop = loop.Describe();
  if (!IsFlatState(loop.shape())) {
    return absl::UnimplementedError(fmt::format(
        "while {}: a host-driven loop needs its state to be an array or a tuple of arrays",
        split.loop));
  }
  const std::vector<Shape> leaf_shapes = LeafShapes(loop.shape());
  split.state_count = static_cast<int64_t>(leaf_shapes.size());
  // The loop and everything that depends on it run after it; the rest before.
  absl::flat_hash_set<const Instruction*> later = {&loop};
  std::vector<const Instruction*> carried;
  absl::flat_hash_set<const Instruction*> is_carried;
  for (const auto& instruction : entry.instructions()) {
    if (instruction.get() == &loop) continue;
    bool depends = false;
    for (const Instruction* operand : instruction->operands()) depends |= later.contains(operand);
    if (!depends) continue;
    later.insert(instruction.get());
    for (const Instruction* operand : instruction->operands()) {
      if (later.contains(operand) || is_carried.contains(operand)) continue;
      if (!operand->shape().IsArray()) {
        return absl::UnimplementedError(fmt::format(
            "while {}: {} is a tuple used after the loop; a host-driven loop carries only arrays "
            "past it",
            split.loop, operand->Describe()));
      }
      is_carried.insert(operand);
      carried.push_back(operand);
    }
  }
  if (!later.contains(entry.root())) {
    return absl::InternalError(
        fmt::format("while {}: the entry's root does not use it", split.loop));
  }

  StageWriter before(module, module.name() + ".before");
  absl::flat_hash_map<const Instruction*, Instruction*> mapped;
  for (const auto& instruction : entry.instructions()) {
    if (later.contains(instruction.get())) continue;
    std::vector<Instruction*> operands;
    for (const Instruction* operand : instruction->operands())
      operands.push_back(mapped.at(operand));
    mapped[instruction.get()] = before.Clone(*instruction, std::move(operands));
  }
  std::vector<Instruction*> outputs =
      ShardedInitialLeaves(before, loop, mapped.at(loop.operand(0)));
  for (const Instruction* value : carried) outputs.push_back(mapped.at(value));
  split.before = before.Finish(before.Tuple(outputs));

  const std::vector<Computation*>& called = loop.attributes().called;
  for (const bool is_body : {false, true}) {
    StageWriter writer(module, fmt::format("{}.{}", module.name(), called[is_body]->name()));
    std::vector<Instruction*> state;
    for (size_t i = 0; i < leaf_shapes.size(); ++i) {
      state.push_back(writer.Parameter(leaf_shapes[i], fmt::format("state.{}", i)));
    }
    Instruction* result = writer.Inline(*called[is_body], writer.Pack(state, loop.shape()));
    if (is_body) {
      split.body = writer.Finish(writer.Tuple(writer.Leaves(result)));
    } else {
      split.condition = writer.Finish(result);
    }
  }

  StageWriter after(module, module.name() + ".after");
  mapped.clear();
  std::vector<Instruction*> result;
  for (size_t i = 0; i < leaf_shapes.size(); ++i) {
    result.push_back(after.Parameter(leaf_shapes[i], fmt::format("result.{}", i)));
  }
  mapped[&loop] = after.Pack(result, loop.shape());
  for (const Instruction* value : carried) {
    mapped[value] = after.Parameter(value->shape(), value->name());
  }
  for (const auto& instruction : entry.instructions()) {
    if (!later.contains(instruction.get()) || instruction.get() == &loop) continue;
    std::vector<Instruction*> operands;
    for (const Instruction* operand : instruction->operands())
      operands.push_back(mapped.at(operand));
    mapped[instruction.get()] = after.Clone(*instruction, std::move(operands));
  }
  split.after = after.Finish(mapped.at(entry.root()));
  return split;
}

}  // namespace vkspmd::ir
