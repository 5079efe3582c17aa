// Trip counts of counted while loops (see trip_count.h).
#include "src/ir/trip_count.h"

#include <limits>
#include <utility>

#include "absl/numeric/int128.h"

namespace vkspmd::ir {
namespace {

// The integer value of a scalar integer constant (or of a copy of one, as compiled dumps write
// a loop's initial state).
std::optional<int64_t> ScalarInteger(const Instruction& instruction) {
  if (instruction.opcode() == Opcode::kCopy) return ScalarInteger(*instruction.operand(0));
  if (instruction.opcode() != Opcode::kConstant || !instruction.shape().IsArray() ||
      instruction.shape().rank() != 0 || !IsInteger(instruction.shape().dtype())) {
    return std::nullopt;
  }
  const DType type = instruction.shape().dtype();
  // u64 values above int64's range are not counters this analysis handles.
  if (type == DType::kU64 && instruction.attributes().literal->GetAsUint64(0) >
                                 static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return std::nullopt;
  }
  return instruction.attributes().literal->GetAsInt64(0);
}

// Element `index` of the computation's parameter 0?
bool IsStateElement(const Instruction& instruction, const Computation& computation, int64_t index) {
  return instruction.opcode() == Opcode::kGetTupleElement &&
         instruction.attributes().tuple_index == index && computation.parameter_count() == 1 &&
         instruction.operand(0) == computation.parameter(0);
}

// The largest value of an integer type that int64 holds.
int64_t MaxValue(DType type) {
  switch (type) {
    case DType::kS8:
      return std::numeric_limits<int8_t>::max();
    case DType::kS16:
      return std::numeric_limits<int16_t>::max();
    case DType::kS32:
      return std::numeric_limits<int32_t>::max();
    case DType::kU8:
      return std::numeric_limits<uint8_t>::max();
    case DType::kU16:
      return std::numeric_limits<uint16_t>::max();
    case DType::kU32:
      return std::numeric_limits<uint32_t>::max();
    default:
      return std::numeric_limits<int64_t>::max();
  }
}

ComparisonDirection Mirrored(ComparisonDirection direction) {
  switch (direction) {
    case ComparisonDirection::kLt:
      return ComparisonDirection::kGt;
    case ComparisonDirection::kLe:
      return ComparisonDirection::kGe;
    case ComparisonDirection::kGt:
      return ComparisonDirection::kLt;
    case ComparisonDirection::kGe:
      return ComparisonDirection::kLe;
    default:
      return direction;
  }
}

}  // namespace

std::optional<int64_t> CountedLoopTripCount(const Computation& condition, const Computation& body,
                                            const Instruction& init) {
  const Instruction* compare = condition.root();
  const Instruction* next = body.root();
  if (compare == nullptr || compare->opcode() != Opcode::kCompare ||
      compare->attributes().total_order || init.opcode() != Opcode::kTuple || next == nullptr ||
      next->opcode() != Opcode::kTuple) {
    return std::nullopt;
  }
  // The state element the body increments: its index and step.
  auto increment = [&](const Instruction& counter) -> std::optional<std::pair<int64_t, int64_t>> {
    if (counter.opcode() != Opcode::kGetTupleElement) return std::nullopt;
    const int64_t index = counter.attributes().tuple_index;
    if (!IsStateElement(counter, condition, index) || index >= next->operand_count() ||
        index >= init.operand_count() || next->operand(index)->opcode() != Opcode::kAdd) {
      return std::nullopt;
    }
    const Instruction* add = next->operand(index);
    for (int which : {0, 1}) {
      if (!IsStateElement(*add->operand(which), body, index)) continue;
      const std::optional<int64_t> step = ScalarInteger(*add->operand(1 - which));
      if (step.has_value() && *step > 0) return std::pair{index, *step};
    }
    return std::nullopt;
  };
  // A constant, or a state element the body passes on unchanged from a constant (a fori_loop's
  // upper bound carried in the state).
  auto invariant = [&](const Instruction& value) -> std::optional<int64_t> {
    if (value.opcode() != Opcode::kGetTupleElement) return ScalarInteger(value);
    const int64_t index = value.attributes().tuple_index;
    if (!IsStateElement(value, condition, index) || index >= next->operand_count() ||
        index >= init.operand_count() || !IsStateElement(*next->operand(index), body, index)) {
      return std::nullopt;
    }
    return ScalarInteger(*init.operand(index));
  };
  // Counter on the left: counter DIRECTION bound.
  ComparisonDirection direction = compare->attributes().direction;
  const Instruction* counter = compare->operand(0);
  std::optional<std::pair<int64_t, int64_t>> counted = increment(*counter);
  std::optional<int64_t> bound = invariant(*compare->operand(1));
  if (!counted.has_value() || !bound.has_value()) {
    counter = compare->operand(1);
    counted = increment(*counter);
    bound = invariant(*compare->operand(0));
    direction = Mirrored(direction);
  }
  if (!counted.has_value() || !bound.has_value()) return std::nullopt;
  const std::optional<int64_t> start = ScalarInteger(*init.operand(counted->first));
  if (!start.has_value()) return std::nullopt;
  // Iterations until the counter fails the comparison, in 128 bits so that s64 bounds cannot
  // overflow the arithmetic.
  const absl::int128 first = *start, last = *bound, stride = counted->second;
  absl::int128 trips = 0;
  switch (direction) {
    case ComparisonDirection::kLt:
      trips = first >= last ? 0 : (last - first + stride - 1) / stride;
      break;
    case ComparisonDirection::kLe:
      trips = first > last ? 0 : (last - first) / stride + 1;
      break;
    case ComparisonDirection::kNe:
      if (first > last || (last - first) % stride != 0) return std::nullopt;
      trips = (last - first) / stride;
      break;
    default:
      return std::nullopt;
  }
  // The counter's last value must not wrap around its type.
  const DType type = counter->shape().dtype();
  if (trips > 0 && first + trips * stride - stride > MaxValue(type) - stride) return std::nullopt;
  if (trips > std::numeric_limits<int64_t>::max()) return std::nullopt;
  return static_cast<int64_t>(trips);
}

}  // namespace vkspmd::ir
