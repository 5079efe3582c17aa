// Copying a module with its entry rewritten (see entry_rewrite.h).
#include "src/ir/entry_rewrite.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/ir/unique_names.h"

namespace vkspmd::ir {

absl::StatusOr<std::unique_ptr<Module>> RewriteEntry(const Module& module,
                                                     const EntryExpansion& expand) {
  if (module.entry() == nullptr) return absl::InvalidArgumentError("the module has no entry");
  auto result = std::make_unique<Module>(module.name());
  result->set_replica_count(module.replica_count());
  result->set_partition_count(module.partition_count());
  result->input_output_aliases() = module.input_output_aliases();
  // Called computations (reducers, sort comparators) are copied as they are.
  absl::flat_hash_map<const Computation*, Computation*> copies;
  absl::flat_hash_map<const Instruction*, Instruction*> mapped;
  auto copy_computation = [&](const Computation& computation) -> Computation* {
    auto copy = std::make_unique<Computation>(computation.name());
    absl::flat_hash_map<const Instruction*, Instruction*> local;
    for (const auto& instruction : computation.instructions()) {
      std::vector<Instruction*> operands;
      for (const Instruction* operand : instruction->operands()) operands.push_back(local[operand]);
      auto clone = std::make_unique<Instruction>(instruction->opcode(), instruction->shape(),
                                                 std::move(operands));
      clone->attributes() = instruction->attributes();
      clone->set_name(instruction->name());
      local[instruction.get()] = copy->AddInstruction(std::move(clone));
    }
    copy->set_root(local.at(computation.root()));
    return result->AddComputation(std::move(copy));
  };
  for (const auto& computation : module.computations()) {
    if (computation.get() == module.entry()) continue;
    copies[computation.get()] = copy_computation(*computation);
  }
  for (const auto& [original, copy] : copies) {
    for (const auto& instruction : copy->instructions()) {
      InstructionAttributes& attributes = instruction->attributes();
      if (attributes.to_apply != nullptr) attributes.to_apply = copies.at(attributes.to_apply);
      for (Computation*& called : attributes.called) called = copies.at(called);
    }
  }
  const Computation& entry = *module.entry();
  auto owned = std::make_unique<Computation>(entry.name());
  UniqueNames names;
  const AddInstructionFn add = [&](std::unique_ptr<Instruction> instruction) {
    instruction->set_name(names.Take(instruction->name()));
    return owned->AddInstruction(std::move(instruction));
  };
  for (const auto& instruction : entry.instructions()) {
    std::vector<Instruction*> operands;
    for (const Instruction* operand : instruction->operands()) operands.push_back(mapped[operand]);
    VKSPMD_ASSIGN_OR_RETURN(Instruction * replacement, expand(*instruction, operands, add));
    if (replacement != nullptr) {
      mapped[instruction.get()] = replacement;
      continue;
    }
    if (instruction->opcode() == Opcode::kGetTupleElement &&
        operands[0]->opcode() == Opcode::kTuple) {
      mapped[instruction.get()] = operands[0]->operand(instruction->attributes().tuple_index);
      continue;
    }
    auto clone = std::make_unique<Instruction>(instruction->opcode(), instruction->shape(),
                                               std::move(operands));
    clone->attributes() = instruction->attributes();
    InstructionAttributes& attributes = clone->attributes();
    if (attributes.to_apply != nullptr) attributes.to_apply = copies.at(attributes.to_apply);
    for (Computation*& called : attributes.called) called = copies.at(called);
    clone->set_name(instruction->name());
    clone->set_sharding(instruction->sharding());
    clone->set_location(instruction->location());
    mapped[instruction.get()] = add(std::move(clone));
  }
  owned->set_root(mapped.at(entry.root()));
  owned->RemoveUnreachable();
  result->set_entry(result->AddComputation(std::move(owned)));
  return result;
}

Instruction* ExpansionBuilder::New(Opcode opcode, Shape shape, std::vector<Instruction*> operands,
                                   InstructionAttributes attributes) {
  auto instruction = std::make_unique<Instruction>(opcode, std::move(shape), std::move(operands));
  instruction->set_attributes(std::move(attributes));
  instruction->set_name(fmt::format("{}.{}", original_.name(), OpcodeName(opcode)));
  instruction->set_location(original_.location());
  return add_(std::move(instruction));
}

Instruction* ExpansionBuilder::Scalar(DType type, int64_t value) {
  Literal literal(Shape::Scalar(type));
  literal.SetFromInt64(0, value);
  InstructionAttributes attributes;
  attributes.literal = std::move(literal);
  return New(Opcode::kConstant, Shape::Scalar(type), {}, std::move(attributes));
}

Instruction* ExpansionBuilder::Splat(DType type, int64_t value, const std::vector<int64_t>& dims) {
  return New(Opcode::kBroadcast, Shape(type, dims), {Scalar(type, value)});
}

Instruction* ExpansionBuilder::Iota(const std::vector<int64_t>& dims, int64_t dim) {
  InstructionAttributes attributes;
  attributes.iota_dimension = dim;
  return New(Opcode::kIota, Shape(DType::kS32, dims), {}, std::move(attributes));
}

Instruction* ExpansionBuilder::Reshape(Instruction* value, std::vector<int64_t> dims) {
  return New(Opcode::kReshape, Shape(value->shape().dtype(), std::move(dims)), {value});
}

Instruction* ExpansionBuilder::Convert(Instruction* value, DType type) {
  return New(Opcode::kConvert, Shape(type, value->shape().dimensions()), {value});
}

Instruction* ExpansionBuilder::Slice(Instruction* value, int64_t dim, int64_t begin, int64_t end) {
  InstructionAttributes attributes;
  std::vector<int64_t> dims = value->shape().dimensions();
  for (int64_t d = 0; d < value->shape().rank(); ++d) {
    attributes.slice.push_back({d == dim ? begin : 0, d == dim ? end : dims[d], 1});
  }
  dims[dim] = end - begin;
  return New(Opcode::kSlice, Shape(value->shape().dtype(), std::move(dims)), {value},
             std::move(attributes));
}

}  // namespace vkspmd::ir
