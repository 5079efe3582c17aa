// Sort and total-order compare (see sort.h). A comparator that is one compare of the first
// operand's two parameters is evaluated directly; any other calls the computation per comparison.
#include "src/interp/sort.h"

#include <algorithm>
#include <numeric>

#include "src/base/status_macros.h"
#include "src/interp/elementwise.h"
#include "src/interp/shape_ops.h"
#include "src/ir/module.h"

namespace vkspmd::interp {
namespace {

using ir::Literal;

// The total-order key of a float element: its bits as a signed integer, negative values flipped
// so that integer order is XLA's total order. Non-floats keep their value.
int64_t TotalOrderKey(const Literal& literal, int64_t index) {
  switch (literal.dtype()) {
    case ir::DType::kF32: {
      const int32_t bits = literal.Get<int32_t>(index);
      return bits < 0 ? bits ^ 0x7fffffff : bits;
    }
    case ir::DType::kF64: {
      const int64_t bits = literal.Get<int64_t>(index);
      return bits < 0 ? bits ^ 0x7fffffffffffffff : bits;
    }
    case ir::DType::kF16:
    case ir::DType::kBF16: {
      const int16_t bits = literal.Get<int16_t>(index);
      return bits < 0 ? bits ^ 0x7fff : bits;
    }
    default:
      return literal.GetAsInt64(index);
  }
}

bool Holds(ir::ComparisonDirection direction, int64_t a, int64_t b) {
  switch (direction) {
    case ir::ComparisonDirection::kEq:
      return a == b;
    case ir::ComparisonDirection::kNe:
      return a != b;
    case ir::ComparisonDirection::kLt:
      return a < b;
    case ir::ComparisonDirection::kLe:
      return a <= b;
    case ir::ComparisonDirection::kGt:
      return a > b;
    case ir::ComparisonDirection::kGe:
      return a >= b;
  }
  return false;
}

// A comparator `compare(p0, p1)` (or of p1, p0) over the first operand: returns it, else null.
const ir::Instruction* SimpleComparator(const ir::Computation& comparator) {
  const ir::Instruction* root = comparator.root();
  if (root->opcode() != ir::Opcode::kCompare) return nullptr;
  const ir::Instruction* lhs = root->operand(0);
  const ir::Instruction* rhs = root->operand(1);
  const bool parameters =
      lhs->opcode() == ir::Opcode::kParameter && rhs->opcode() == ir::Opcode::kParameter;
  if (!parameters || lhs == rhs) return nullptr;
  const int64_t a = lhs->attributes().parameter_number, b = rhs->attributes().parameter_number;
  return (a < 2 && b < 2) ? root : nullptr;
}

}  // namespace

Literal EvaluateTotalOrderCompare(ir::ComparisonDirection direction, const Literal& lhs,
                                  const Literal& rhs) {
  if (!ir::IsFloat(lhs.dtype())) return EvaluateCompare(direction, lhs, rhs);
  Literal result(ir::Shape(ir::DType::kPred, lhs.shape().dimensions()));
  for (int64_t i = 0; i < result.ElementCount(); ++i) {
    result.SetFromInt64(i, Holds(direction, TotalOrderKey(lhs, i), TotalOrderKey(rhs, i)));
  }
  return result;
}

absl::StatusOr<Literal> EvaluateSort(const ir::Instruction& instruction,
                                     const std::vector<const Literal*>& operands,
                                     const ComputationCaller& call) {
  const ir::Computation& comparator = *instruction.attributes().to_apply;
  const ir::Shape& shape = operands[0]->shape();
  const int64_t dimension = instruction.attributes().dimensions[0];
  const int64_t length = shape.dimension(dimension);
  const int64_t stride = ir::RowMajorStrides(shape.dimensions())[dimension];
  std::vector<Literal> results;
  for (const Literal* operand : operands) results.push_back(*operand);
  const ir::Instruction* simple = SimpleComparator(comparator);
  absl::Status status;
  // less(a, b) for elements at linear indices a and b.
  const auto less = [&](int64_t a, int64_t b) -> bool {
    if (simple != nullptr) {
      const bool swapped = simple->operand(0)->attributes().parameter_number == 1;
      const int64_t x = swapped ? b : a, y = swapped ? a : b;
      const Literal& keys = *operands[0];
      if (simple->attributes().total_order || !ir::IsFloat(keys.dtype())) {
        return Holds(simple->attributes().direction, TotalOrderKey(keys, x),
                     TotalOrderKey(keys, y));
      }
      const double u = keys.GetAsDouble(x), v = keys.GetAsDouble(y);
      switch (simple->attributes().direction) {
        case ir::ComparisonDirection::kLt:
          return u < v;
        case ir::ComparisonDirection::kGt:
          return u > v;
        case ir::ComparisonDirection::kLe:
          return u <= v;
        case ir::ComparisonDirection::kGe:
          return u >= v;
        case ir::ComparisonDirection::kEq:
          return u == v;
        case ir::ComparisonDirection::kNe:
          return u != v;
      }
    }
    if (!status.ok()) return false;
    std::vector<Literal> arguments;
    for (const Literal* operand : operands) {
      for (int64_t index : {a, b}) {
        Literal scalar(ir::Shape::Scalar(operand->dtype()));
        CopyElement(*operand, index, scalar, 0);
        arguments.push_back(std::move(scalar));
      }
    }
    absl::StatusOr<Literal> verdict = call(comparator, std::move(arguments));
    if (!verdict.ok()) {
      status = verdict.status();
      return false;
    }
    return verdict->GetAsInt64(0) != 0;
  };
  // Every row along `dimension`: its first element's linear index, then the sorted order.
  std::vector<int64_t> outer = shape.dimensions();
  outer[dimension] = 1;
  std::vector<int64_t> order(length);
  ForEachIndex(ir::Shape(shape.dtype(), outer), [&](const std::vector<int64_t>& index, int64_t) {
    const int64_t first = LinearIndex(index, ir::RowMajorStrides(shape.dimensions()));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return less(first + a * stride, first + b * stride);
    });
    for (size_t k = 0; k < operands.size(); ++k) {
      for (int64_t position = 0; position < length; ++position) {
        CopyElement(*operands[k], first + order[position] * stride, results[k],
                    first + position * stride);
      }
    }
  });
  VKSPMD_RETURN_IF_ERROR(status);
  if (results.size() == 1) return std::move(results[0]);
  return Literal::Tuple(std::move(results));
}

}  // namespace vkspmd::interp
