// Trip counts of counted while loops (see trip_count.h).
#include "src/ir/trip_count.h"

#include <limits>

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
  if (compare == nullptr || compare->opcode() != Opcode::kCompare ||
      compare->attributes().total_order || init.opcode() != Opcode::kTuple) {
    return std::nullopt;
  }
  // Counter on the left: counter DIRECTION bound.
  ComparisonDirection direction = compare->attributes().direction;
  const Instruction* counter = compare->operand(0);
  std::optional<int64_t> bound = ScalarInteger(*compare->operand(1));
  if (!bound.has_value()) {
    counter = compare->operand(1);
    bound = ScalarInteger(*compare->operand(0));
    direction = Mirrored(direction);
  }
  if (!bound.has_value() || counter->opcode() != Opcode::kGetTupleElement) return std::nullopt;
  const int64_t index = counter->attributes().tuple_index;
  if (!IsStateElement(*counter, condition, index) || index >= init.operand_count()) {
    return std::nullopt;
  }
  const std::optional<int64_t> start = ScalarInteger(*init.operand(index));
  const Instruction* next = body.root();
  if (!start.has_value() || next == nullptr || next->opcode() != Opcode::kTuple ||
      index >= next->operand_count() || next->operand(index)->opcode() != Opcode::kAdd) {
    return std::nullopt;
  }
  const Instruction* add = next->operand(index);
  const int which = IsStateElement(*add->operand(0), body, index)   ? 0
                    : IsStateElement(*add->operand(1), body, index) ? 1
                                                                    : -1;
  if (which < 0) return std::nullopt;
  const std::optional<int64_t> step = ScalarInteger(*add->operand(1 - which));
  if (!step.has_value() || *step <= 0) return std::nullopt;
  // Iterations until the counter fails the comparison, in 128 bits so that s64 bounds cannot
  // overflow the arithmetic.
  const absl::int128 first = *start, last = *bound, stride = *step;
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
