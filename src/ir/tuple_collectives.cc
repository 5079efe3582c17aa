// One collective per operand of a multi-operand collective (see tuple_collectives.h).
#include "src/ir/tuple_collectives.h"

#include <memory>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "src/ir/collective_groups.h"
#include "src/ir/opcode.h"

namespace vkspmd::ir {
namespace {

Instruction* AddLike(const Instruction& collective, Opcode opcode, Shape shape,
                     std::vector<Instruction*> operands, InstructionAttributes attributes,
                     const AddInstructionFn& add) {
  auto instruction = std::make_unique<Instruction>(opcode, std::move(shape), std::move(operands));
  instruction->set_attributes(std::move(attributes));
  instruction->set_name(collective.name());
  instruction->set_location(collective.location());
  return add(std::move(instruction));
}

// The element `leaf` of the collective's sharding: its tuple element (CollectivePerOperand has
// checked there is one per operand), or the sharding itself where one is given for every element.
std::optional<Sharding> ElementSharding(const Instruction& collective, size_t leaf) {
  const std::optional<Sharding>& sharding = collective.sharding();
  if (!sharding.has_value() || sharding->kind() != Sharding::Kind::kTuple) return sharding;
  return sharding->tuple_elements()[leaf];
}

// all-to-all(x0, ..., xn-1) without dimensions=: each group's device j receives operand j of
// every member, as result element i from member i. Stacked as s = [x0; ...; xn-1] (a leading dim
// of n), an all-to-all along that dim hands device j block j (= xj) of member i as its block i.
absl::StatusOr<std::vector<Instruction*>> StackedAllToAll(const Instruction& collective,
                                                          int64_t replica_count,
                                                          int64_t partition_count,
                                                          const AddInstructionFn& add) {
  const int64_t count = collective.operand_count();
  const Shape& element = collective.operand(0)->shape();
  std::vector<std::vector<int64_t>> groups = collective.attributes().replica_groups.Expand();
  if (groups.empty()) {
    // No groups listed: one group of every replica or partition (by channel_id), as the
    // collective of one operand reads them.
    absl::StatusOr<std::vector<std::vector<int64_t>>> all =
        CollectiveDeviceGroups(collective, replica_count, partition_count);
    if (!all.ok()) {
      return absl::InvalidArgumentError(fmt::format("all-to-all %{}: {}", collective.name(),
                                                    std::string(all.status().message())));
    }
    groups = *std::move(all);
  }
  for (const std::vector<int64_t>& group : groups) {
    if (static_cast<int64_t>(group.size()) == count) continue;
    return absl::InvalidArgumentError(fmt::format(
        "all-to-all %{} of {} operands without dimensions= sends operand i to the i-th device of "
        "each group, but a group has {} devices",
        collective.name(), count, group.size()));
  }
  std::vector<int64_t> stacked_dims = {count};
  std::vector<int64_t> one_dims = {1};
  for (int64_t size : element.dimensions()) {
    stacked_dims.push_back(size);
    one_dims.push_back(size);
  }
  std::vector<Instruction*> rows;
  for (Instruction* operand : collective.operands()) {
    if (operand->shape() != element) {
      return absl::InvalidArgumentError(
          fmt::format("all-to-all %{} without dimensions= needs operands of one shape: %{} is "
                      "{}, %{} is {}",
                      collective.name(), collective.operand(0)->name(), element.ToString(),
                      operand->name(), operand->shape().ToString()));
    }
    rows.push_back(AddLike(collective, Opcode::kReshape, Shape(element.dtype(), one_dims),
                           {operand}, {}, add));
  }
  InstructionAttributes along_rows;
  along_rows.dimensions = {0};
  Instruction* stacked = AddLike(collective, Opcode::kConcatenate,
                                 Shape(element.dtype(), stacked_dims), rows, along_rows, add);
  InstructionAttributes exchange = collective.attributes();
  exchange.dimensions = {0};
  Instruction* exchanged = AddLike(collective, Opcode::kAllToAll,
                                   Shape(element.dtype(), stacked_dims), {stacked}, exchange, add);
  std::vector<Instruction*> pieces;
  for (int64_t i = 0; i < count; ++i) {
    InstructionAttributes row;
    row.slice.push_back({i, i + 1, 1});
    for (int64_t size : element.dimensions()) row.slice.push_back({0, size, 1});
    Instruction* sliced = AddLike(collective, Opcode::kSlice, Shape(element.dtype(), one_dims),
                                  {exchanged}, row, add);
    pieces.push_back(AddLike(collective, Opcode::kReshape, element, {sliced}, {}, add));
  }
  return pieces;
}

}  // namespace

bool IsTupleCollective(const Instruction& instruction) {
  return IsCollective(instruction.opcode()) &&
         (instruction.operand_count() != 1 || instruction.shape().IsTuple());
}

absl::StatusOr<Instruction*> CollectivePerOperand(const Instruction& collective,
                                                  int64_t replica_count, int64_t partition_count,
                                                  const AddInstructionFn& add) {
  const Shape& shape = collective.shape();
  const int64_t count = collective.operand_count();
  if (count == 0 || !shape.IsTuple() ||
      static_cast<int64_t>(shape.tuple_elements().size()) != count) {
    return absl::InvalidArgumentError(fmt::format(
        "{} %{} of {} operands must return a tuple of {} arrays, not {}",
        OpcodeName(collective.opcode()), collective.name(), count, count, shape.ToString()));
  }
  for (const Shape& element : shape.tuple_elements()) {
    if (element.IsTuple()) {
      return absl::InvalidArgumentError(fmt::format("{} %{} returns nested tuples ({})",
                                                    OpcodeName(collective.opcode()),
                                                    collective.name(), shape.ToString()));
    }
  }
  const std::optional<Sharding>& sharding = collective.sharding();
  if (sharding.has_value() && sharding->kind() == Sharding::Kind::kTuple &&
      static_cast<int64_t>(sharding->tuple_elements().size()) != count) {
    return absl::InvalidArgumentError(fmt::format(
        "{} %{} of {} operands has a tuple sharding of {} elements ({}): it needs one per operand",
        OpcodeName(collective.opcode()), collective.name(), count,
        sharding->tuple_elements().size(), sharding->ToString()));
  }
  std::vector<Instruction*> pieces;
  if (collective.opcode() == Opcode::kAllToAll && collective.attributes().dimensions.empty()) {
    absl::StatusOr<std::vector<Instruction*>> stacked =
        StackedAllToAll(collective, replica_count, partition_count, add);
    if (!stacked.ok()) return stacked.status();
    pieces = *std::move(stacked);
  } else {
    for (int64_t i = 0; i < count; ++i) {
      pieces.push_back(AddLike(collective, collective.opcode(), shape.tuple_elements()[i],
                               {collective.operand(i)}, collective.attributes(), add));
    }
  }
  for (size_t i = 0; i < pieces.size(); ++i)
    pieces[i]->set_sharding(ElementSharding(collective, i));
  Instruction* tuple = AddLike(collective, Opcode::kTuple, shape, pieces, {}, add);
  if (sharding.has_value()) {
    std::vector<Sharding> elements;
    for (size_t i = 0; i < pieces.size(); ++i) elements.push_back(*ElementSharding(collective, i));
    tuple->set_sharding(Sharding::Tuple(std::move(elements)));
  }
  return tuple;
}

}  // namespace vkspmd::ir
