// Splitting a module at a loop or conditional into the modules the host runs (see loop_split.h).
#include "src/ir/loop_split.h"

#include <functional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/ir/unique_names.h"

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

  // The array leaves of `value`, depth first.
  std::vector<Instruction*> Leaves(Instruction* value) {
    if (value->shape().IsArray()) return {value};
    std::vector<Instruction*> leaves;
    for (size_t i = 0; i < value->shape().tuple_elements().size(); ++i) {
      for (Instruction* leaf : Leaves(Element(value, static_cast<int64_t>(i)))) {
        leaves.push_back(leaf);
      }
    }
    return leaves;
  }

  // Leaves `next`, `next` + 1, ... as a value of `shape` (an array: the one leaf).
  Instruction* Pack(const std::vector<Instruction*>& leaves, const Shape& shape, size_t& next) {
    if (shape.IsArray()) return leaves.at(next++);
    std::vector<Instruction*> elements;
    for (const Shape& element : shape.tuple_elements()) {
      elements.push_back(Pack(leaves, element, next));
    }
    return Tuple(elements);
  }

  // New parameters for the leaves of `shape`, packed as a value of it.
  Instruction* Parameters(const Shape& shape, const std::string& name) {
    std::vector<Instruction*> leaves;
    for (const Shape& leaf : LeafShapes(shape)) {
      leaves.push_back(Parameter(leaf, fmt::format("{}.{}", name, leaves.size())));
    }
    size_t next = 0;
    return Pack(leaves, shape, next);
  }

  Instruction* Tuple(const std::vector<Instruction*>& elements) {
    std::vector<Shape> shapes;
    for (const Instruction* element : elements) shapes.push_back(element->shape());
    return New(Opcode::kTuple, Shape::Tuple(std::move(shapes)), elements, "tuple");
  }

  std::unique_ptr<Module> Finish(Instruction* root) {
    entry_->set_root(root);
    entry_->RemoveUnreachable();
    module_->set_entry(entry_);
    return std::move(module_);
  }

 private:
  Instruction* Add(std::unique_ptr<Instruction> instruction) {
    instruction->set_name(names_.Take(instruction->name()));
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
  UniqueNames names_;
  absl::flat_hash_map<const Computation*, Computation*> copies_;
};

// The initial leaves, with the while's sharding of each (a tuple sharding lists one per leaf,
// as XLA's do; any other is every leaf's) as an annotated copy.
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

// The entry cut at `at`: `at` and everything that depends on it run after it, the rest before;
// `carried` are the values computed before that the code after reads.
struct Cut {
  absl::flat_hash_set<const Instruction*> later;
  std::vector<const Instruction*> carried;
};

absl::StatusOr<Cut> CutAt(const Computation& entry, const Instruction& at) {
  Cut cut;
  cut.later.insert(&at);
  absl::flat_hash_set<const Instruction*> is_carried;
  for (const auto& instruction : entry.instructions()) {
    if (instruction.get() == &at) continue;
    bool depends = false;
    for (const Instruction* operand : instruction->operands()) {
      depends |= cut.later.contains(operand);
    }
    if (!depends) continue;
    cut.later.insert(instruction.get());
    for (const Instruction* operand : instruction->operands()) {
      if (cut.later.contains(operand) || !is_carried.insert(operand).second) continue;
      cut.carried.push_back(operand);
    }
  }
  if (!cut.later.contains(entry.root())) {
    return absl::InternalError(fmt::format("{}: the entry's root does not use it", at.Describe()));
  }
  return cut;
}

// The code before the cut → tuple(`inputs`' leaves, the carried leaves); `inputs` picks the
// values handed to the split instruction from the cloned entry.
using InputLeaves = std::function<std::vector<Instruction*>(
    StageWriter&, const absl::flat_hash_map<const Instruction*, Instruction*>&)>;

std::unique_ptr<Module> WriteBefore(const Module& module, const Cut& cut,
                                    const InputLeaves& inputs) {
  StageWriter before(module, module.name() + ".before");
  absl::flat_hash_map<const Instruction*, Instruction*> mapped;
  for (const auto& instruction : module.entry()->instructions()) {
    if (cut.later.contains(instruction.get())) continue;
    std::vector<Instruction*> operands;
    for (const Instruction* operand : instruction->operands()) {
      operands.push_back(mapped.at(operand));
    }
    mapped[instruction.get()] = before.Clone(*instruction, std::move(operands));
  }
  std::vector<Instruction*> outputs = inputs(before, mapped);
  for (const Instruction* value : cut.carried) {
    for (Instruction* leaf : before.Leaves(mapped.at(value))) outputs.push_back(leaf);
  }
  return before.Finish(before.Tuple(outputs));
}

// The split instruction's result leaves and the carried leaves → the entry's root, whose leaves
// are one flat tuple when it nests tuples (the programs return arrays or a tuple of them).
std::unique_ptr<Module> WriteAfter(const Module& module, const Cut& cut, const Instruction& at) {
  StageWriter after(module, module.name() + ".after");
  absl::flat_hash_map<const Instruction*, Instruction*> mapped;
  mapped[&at] = after.Parameters(at.shape(), "result");
  for (const Instruction* value : cut.carried) {
    mapped[value] = after.Parameters(value->shape(), value->name());
  }
  const Computation& entry = *module.entry();
  for (const auto& instruction : entry.instructions()) {
    if (!cut.later.contains(instruction.get()) || instruction.get() == &at) continue;
    std::vector<Instruction*> operands;
    for (const Instruction* operand : instruction->operands()) {
      operands.push_back(mapped.at(operand));
    }
    mapped[instruction.get()] = after.Clone(*instruction, std::move(operands));
  }
  Instruction* root = mapped.at(entry.root());
  const Shape& shape = root->shape();
  const bool nested = shape.IsTuple() && LeafShapes(shape).size() != shape.tuple_elements().size();
  if (!nested) return after.Finish(root);
  Instruction* flat = after.Tuple(after.Leaves(root));
  // A tuple sharding lists the leaves' shardings, so it fits the flat tuple as it is.
  if (entry.root()->sharding().has_value()) flat->set_sharding(entry.root()->sharding());
  return after.Finish(flat);
}

// `computation` (one parameter) as a module of its own: the leaves of `argument` → tuple(the
// leaves of its result).
std::unique_ptr<Module> WriteCalled(const Module& module, const Computation& computation,
                                    const Shape& argument, bool flat_result) {
  StageWriter writer(module, fmt::format("{}.{}", module.name(), computation.name()));
  Instruction* result = writer.Inline(computation, writer.Parameters(argument, "state"));
  return writer.Finish(flat_result ? writer.Tuple(writer.Leaves(result)) : result);
}

}  // namespace

std::vector<Shape> LeafShapes(const Shape& shape) {
  if (shape.IsArray()) return {shape};
  std::vector<Shape> leaves;
  for (const Shape& element : shape.tuple_elements()) {
    for (Shape& leaf : LeafShapes(element)) leaves.push_back(std::move(leaf));
  }
  return leaves;
}

const Instruction* FirstHostControlFlow(const Module& module) {
  for (const auto& instruction : module.entry()->instructions()) {
    if (instruction->opcode() == Opcode::kWhile || instruction->opcode() == Opcode::kConditional) {
      return instruction.get();
    }
  }
  return nullptr;
}

absl::StatusOr<LoopSplit> SplitAtLoop(const Module& module, const Instruction& loop) {
  LoopSplit split;
  split.loop = loop.Describe();
  split.state_count = static_cast<int64_t>(LeafShapes(loop.shape()).size());
  VKSPMD_ASSIGN_OR_RETURN(const Cut cut, CutAt(*module.entry(), loop));
  split.before = WriteBefore(module, cut, [&](StageWriter& before, const auto& mapped) {
    return ShardedInitialLeaves(before, loop, mapped.at(loop.operand(0)));
  });
  const std::vector<Computation*>& called = loop.attributes().called;
  split.condition = WriteCalled(module, *called[0], loop.shape(), /*flat_result=*/false);
  split.body = WriteCalled(module, *called[1], loop.shape(), /*flat_result=*/true);
  split.after = WriteAfter(module, cut, loop);
  return split;
}

absl::StatusOr<ConditionalSplit> SplitAtConditional(const Module& module,
                                                    const Instruction& conditional) {
  ConditionalSplit split;
  split.conditional = conditional.Describe();
  const std::vector<Computation*>& branches = conditional.attributes().called;
  const Shape& selector = conditional.operand(0)->shape();
  if (!selector.IsArray() || selector.rank() != 0 ||
      (selector.dtype() != DType::kPred && selector.dtype() != DType::kS32)) {
    return absl::InvalidArgumentError(
        fmt::format("conditional {}: its selector must be pred[] or s32[]", split.conditional));
  }
  VKSPMD_ASSIGN_OR_RETURN(const Cut cut, CutAt(*module.entry(), conditional));
  split.before = WriteBefore(module, cut, [&](StageWriter& before, const auto& mapped) {
    std::vector<Instruction*> inputs = {mapped.at(conditional.operand(0))};
    for (size_t i = 0; i < branches.size(); ++i) {
      for (Instruction* leaf : before.Leaves(mapped.at(conditional.operand(i + 1)))) {
        inputs.push_back(leaf);
      }
    }
    return inputs;
  });
  for (size_t i = 0; i < branches.size(); ++i) {
    const Shape& operand = conditional.operand(i + 1)->shape();
    split.operand_counts.push_back(static_cast<int64_t>(LeafShapes(operand).size()));
    split.branches.push_back(WriteCalled(module, *branches[i], operand, /*flat_result=*/true));
  }
  split.result_count = static_cast<int64_t>(LeafShapes(conditional.shape()).size());
  split.after = WriteAfter(module, cut, conditional);
  return split;
}

}  // namespace vkspmd::ir
