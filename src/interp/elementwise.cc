// Elementwise semantics. Floats of every width are computed in double and rounded once to the
// result type (exact for + - * / sqrt of f32 and f16); integers are computed in 64 bits and
// truncated to their width, which gives two's-complement wrap-around.
#include "src/interp/elementwise.h"

#include <cmath>
#include <limits>

#include "fmt/format.h"

namespace vkspmd::interp {
namespace {

using ir::DType;
using ir::Literal;
using ir::Opcode;

int BitWidth(DType type) { return static_cast<int>(ir::DTypeByteSize(type)) * 8; }

uint64_t WidthMask(DType type) {
  const int bits = BitWidth(type);
  return bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
}

double FloatUnary(Opcode opcode, double x) {
  switch (opcode) {
    case Opcode::kNegate:
      return -x;
    case Opcode::kAbs:
      return std::fabs(x);
    case Opcode::kSign:
      return std::isnan(x) || x == 0 ? x : std::copysign(1.0, x);
    case Opcode::kExp:
      return std::exp(x);
    case Opcode::kExpm1:
      return std::expm1(x);
    case Opcode::kLog:
      return std::log(x);
    case Opcode::kLog1p:
      return std::log1p(x);
    case Opcode::kSqrt:
      return std::sqrt(x);
    case Opcode::kRsqrt:
      return 1.0 / std::sqrt(x);
    case Opcode::kTanh:
      return std::tanh(x);
    case Opcode::kLogistic:
      return 1.0 / (1.0 + std::exp(-x));
    case Opcode::kSine:
      return std::sin(x);
    case Opcode::kCosine:
      return std::cos(x);
    case Opcode::kFloor:
      return std::floor(x);
    case Opcode::kCeil:
      return std::ceil(x);
    case Opcode::kRoundNearestEven:
      return std::nearbyint(x);
    case Opcode::kErf:
      return std::erf(x);
    case Opcode::kIsFinite:
      return std::isfinite(x) ? 1 : 0;
    default:
      return x;
  }
}

uint64_t IntegerUnary(Opcode opcode, DType type, const Literal& operand, int64_t i) {
  const bool is_signed = ir::IsSignedInteger(type);
  const int64_t value = operand.GetAsInt64(i);
  switch (opcode) {
    case Opcode::kNegate:
      return uint64_t{0} - static_cast<uint64_t>(value);
    case Opcode::kAbs:
      return is_signed && value < 0 ? uint64_t{0} - static_cast<uint64_t>(value)
                                    : static_cast<uint64_t>(value);
    case Opcode::kSign:
      if (!is_signed) return operand.GetAsUint64(i) != 0 ? 1 : 0;
      return value > 0 ? 1 : (value < 0 ? ~uint64_t{0} : 0);
    case Opcode::kNot:
      if (type == DType::kPred) return operand.GetAsUint64(i) == 0 ? 1 : 0;
      return ~static_cast<uint64_t>(value);
    default:
      return static_cast<uint64_t>(value);
  }
}

// Maximum/minimum propagate NaN; for equal values (+0 and -0) maximum prefers +0, minimum -0, so
// the result does not depend on operand order.
double FloatMaximum(double a, double b, bool maximum) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  if (a == b) return (std::signbit(a) == maximum) ? b : a;
  return (a > b) == maximum ? a : b;
}

double FloatBinary(Opcode opcode, double a, double b) {
  switch (opcode) {
    case Opcode::kAdd:
      return a + b;
    case Opcode::kSubtract:
      return a - b;
    case Opcode::kMultiply:
      return a * b;
    case Opcode::kDivide:
      return a / b;
    case Opcode::kRemainder:
      return std::fmod(a, b);
    case Opcode::kMaximum:
      return FloatMaximum(a, b, true);
    case Opcode::kMinimum:
      return FloatMaximum(a, b, false);
    case Opcode::kPower:
      return std::pow(a, b);
    case Opcode::kAtan2:
      return std::atan2(a, b);
    default:
      return 0;
  }
}

// Integer power by squaring with wrap-around; a negative exponent gives the truncated result
// (1 for base 1, +-1 for base -1, 0 otherwise).
uint64_t IntegerPower(int64_t base, int64_t exponent, bool is_signed) {
  if (is_signed && exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exponent % 2 == 0) ? 1 : ~uint64_t{0};
    return 0;
  }
  uint64_t result = 1, square = static_cast<uint64_t>(base);
  for (uint64_t e = static_cast<uint64_t>(exponent); e != 0; e >>= 1) {
    if (e & 1) result *= square;
    square *= square;
  }
  return result;
}

uint64_t SignedBinary(Opcode opcode, int64_t a, int64_t b, int bits) {
  const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (opcode) {
    case Opcode::kAdd:
      return ua + ub;
    case Opcode::kSubtract:
      return ua - ub;
    case Opcode::kMultiply:
      return ua * ub;
    case Opcode::kDivide:
      if (b == 0) return ~uint64_t{0};       // x / 0 = -1
      if (b == -1) return uint64_t{0} - ua;  // INT_MIN / -1 wraps to INT_MIN
      return static_cast<uint64_t>(a / b);
    case Opcode::kRemainder:
      if (b == 0) return ua;  // x % 0 = x
      if (b == -1) return 0;
      return static_cast<uint64_t>(a % b);
    case Opcode::kMaximum:
      return static_cast<uint64_t>(std::max(a, b));
    case Opcode::kMinimum:
      return static_cast<uint64_t>(std::min(a, b));
    case Opcode::kPower:
      return IntegerPower(a, b, true);
    case Opcode::kShiftLeft:
      return ub >= static_cast<uint64_t>(bits) ? 0 : ua << ub;
    case Opcode::kShiftRightArithmetic:
      if (ub >= static_cast<uint64_t>(bits)) return a < 0 ? ~uint64_t{0} : 0;
      return static_cast<uint64_t>(a >> ub);
    default:
      return 0;
  }
}

uint64_t UnsignedBinary(Opcode opcode, uint64_t a, uint64_t b, int bits) {
  switch (opcode) {
    case Opcode::kAdd:
      return a + b;
    case Opcode::kSubtract:
      return a - b;
    case Opcode::kMultiply:
      return a * b;
    case Opcode::kDivide:
      return b == 0 ? ~uint64_t{0} : a / b;  // x / 0 = all ones
    case Opcode::kRemainder:
      return b == 0 ? a : a % b;
    case Opcode::kMaximum:
      return std::max(a, b);
    case Opcode::kMinimum:
      return std::min(a, b);
    case Opcode::kPower:
      return IntegerPower(static_cast<int64_t>(a), static_cast<int64_t>(b), false);
    case Opcode::kShiftLeft:
      return b >= static_cast<uint64_t>(bits) ? 0 : a << b;
    case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical:
      return b >= static_cast<uint64_t>(bits) ? 0 : a >> b;
    default:
      return 0;
  }
}

}  // namespace

void ApplyBinaryElement(Opcode opcode, const Literal& lhs, int64_t lhs_index, const Literal& rhs,
                        int64_t rhs_index, Literal& out, int64_t out_index) {
  const DType type = lhs.dtype();
  if (ir::IsFloat(type)) {
    out.SetFromDouble(out_index,
                      FloatBinary(opcode, lhs.GetAsDouble(lhs_index), rhs.GetAsDouble(rhs_index)));
    return;
  }
  const uint64_t mask = WidthMask(type);
  const uint64_t a = lhs.GetAsUint64(lhs_index) & mask, b = rhs.GetAsUint64(rhs_index) & mask;
  switch (opcode) {
    case Opcode::kAnd:
      return out.SetFromUint64(out_index, a & b);
    case Opcode::kOr:
      return out.SetFromUint64(out_index, a | b);
    case Opcode::kXor:
      return out.SetFromUint64(out_index, a ^ b);
    case Opcode::kShiftRightLogical:
      return out.SetFromUint64(
          out_index, UnsignedBinary(opcode, a, b, ir::IsInteger(type) ? BitWidth(type) : 1));
    default:
      break;
  }
  if (ir::IsSignedInteger(type)) {
    // A shift amount is read as unsigned, so negative amounts are out of range.
    const bool is_shift = opcode == Opcode::kShiftLeft || opcode == Opcode::kShiftRightArithmetic;
    out.SetFromUint64(out_index,
                      SignedBinary(opcode, lhs.GetAsInt64(lhs_index),
                                   is_shift ? static_cast<int64_t>(std::min<uint64_t>(b, 64))
                                            : rhs.GetAsInt64(rhs_index),
                                   BitWidth(type)));
    return;
  }
  out.SetFromUint64(out_index,
                    UnsignedBinary(opcode, a, b, type == DType::kPred ? 1 : BitWidth(type)));
}

absl::StatusOr<Literal> EvaluateUnary(const ir::Instruction& instruction, const Literal& operand) {
  Literal result(instruction.shape());
  const Opcode opcode = instruction.opcode();
  const DType type = operand.dtype();
  const int64_t count = operand.ElementCount();
  for (int64_t i = 0; i < count; ++i) {
    if (ir::IsFloat(type)) {
      result.SetFromDouble(i, FloatUnary(opcode, operand.GetAsDouble(i)));
    } else {
      result.SetFromUint64(i, IntegerUnary(opcode, type, operand, i));
    }
  }
  return result;
}

absl::StatusOr<Literal> EvaluateBinary(const ir::Instruction& instruction, const Literal& lhs,
                                       const Literal& rhs) {
  Literal result(instruction.shape());
  const int64_t count = lhs.ElementCount();
  for (int64_t i = 0; i < count; ++i) {
    ApplyBinaryElement(instruction.opcode(), lhs, i, rhs, i, result, i);
  }
  return result;
}

Literal EvaluateCompare(ir::ComparisonDirection direction, const Literal& lhs, const Literal& rhs) {
  Literal result(ir::Shape(DType::kPred, lhs.shape().dimensions()));
  const DType type = lhs.dtype();
  for (int64_t i = 0; i < lhs.ElementCount(); ++i) {
    // -1: less, 0: equal, 1: greater, 2: unordered (NaN involved).
    int order;
    if (ir::IsFloat(type)) {
      const double a = lhs.GetAsDouble(i), b = rhs.GetAsDouble(i);
      order = std::isnan(a) || std::isnan(b) ? 2 : (a < b ? -1 : (a > b ? 1 : 0));
    } else if (ir::IsSignedInteger(type)) {
      const int64_t a = lhs.GetAsInt64(i), b = rhs.GetAsInt64(i);
      order = a < b ? -1 : (a > b ? 1 : 0);
    } else {
      const uint64_t a = lhs.GetAsUint64(i), b = rhs.GetAsUint64(i);
      order = a < b ? -1 : (a > b ? 1 : 0);
    }
    bool value = false;
    switch (direction) {
      case ir::ComparisonDirection::kEq:
        value = order == 0;
        break;
      case ir::ComparisonDirection::kNe:
        value = order != 0;
        break;
      case ir::ComparisonDirection::kLt:
        value = order == -1;
        break;
      case ir::ComparisonDirection::kLe:
        value = order == -1 || order == 0;
        break;
      case ir::ComparisonDirection::kGt:
        value = order == 1;
        break;
      case ir::ComparisonDirection::kGe:
        value = order == 1 || order == 0;
        break;
    }
    result.SetFromUint64(i, value ? 1 : 0);
  }
  return result;
}

Literal EvaluateSelect(const Literal& predicate, const Literal& on_true, const Literal& on_false) {
  Literal result(on_true.shape());
  const int64_t size = ir::DTypeByteSize(on_true.dtype());
  const bool scalar_predicate = predicate.shape().rank() == 0;
  for (int64_t i = 0; i < on_true.ElementCount(); ++i) {
    const bool take_true = predicate.GetAsUint64(scalar_predicate ? 0 : i) != 0;
    const Literal& source = take_true ? on_true : on_false;
    std::memcpy(result.bytes().data() + i * size, source.bytes().data() + i * size, size);
  }
  return result;
}

Literal EvaluateClamp(const Literal& minimum, const Literal& operand, const Literal& maximum) {
  Literal result(operand.shape());
  Literal lowered(operand.shape());
  const bool scalar_minimum = minimum.shape().rank() == 0;
  const bool scalar_maximum = maximum.shape().rank() == 0;
  for (int64_t i = 0; i < operand.ElementCount(); ++i) {
    ApplyBinaryElement(Opcode::kMaximum, operand, i, minimum, scalar_minimum ? 0 : i, lowered, i);
    ApplyBinaryElement(Opcode::kMinimum, lowered, i, maximum, scalar_maximum ? 0 : i, result, i);
  }
  return result;
}

Literal Convert(const Literal& operand, DType type) {
  Literal result(ir::Shape(type, operand.shape().dimensions()));
  const DType from = operand.dtype();
  for (int64_t i = 0; i < operand.ElementCount(); ++i) {
    if (type == DType::kPred) {
      result.SetFromUint64(
          i, ir::IsFloat(from) ? (operand.GetAsDouble(i) != 0) : (operand.GetAsUint64(i) != 0));
    } else if (ir::IsFloat(type)) {
      result.SetFromDouble(i, operand.GetAsDouble(i));
    } else if (ir::IsFloat(from)) {
      const double value = std::trunc(operand.GetAsDouble(i));
      const int bits = BitWidth(type);
      if (std::isnan(value)) {
        result.SetFromUint64(i, 0);
      } else if (ir::IsSignedInteger(type)) {
        const double low = -std::ldexp(1.0, bits - 1), high = std::ldexp(1.0, bits - 1);
        if (value < low)
          result.SetFromUint64(i, uint64_t{1} << (bits - 1));
        else if (value >= high)
          result.SetFromUint64(i, (uint64_t{1} << (bits - 1)) - 1);
        else
          result.SetFromInt64(i, static_cast<int64_t>(value));
      } else {
        const double high = std::ldexp(1.0, bits);
        if (value <= 0)
          result.SetFromUint64(i, 0);
        else if (value >= high)
          result.SetFromUint64(i, WidthMask(type));
        else
          result.SetFromUint64(i, static_cast<uint64_t>(value));
      }
    } else if (ir::IsSignedInteger(from)) {
      result.SetFromInt64(i, operand.GetAsInt64(i));
    } else {
      result.SetFromUint64(i, operand.GetAsUint64(i));
    }
  }
  return result;
}

}  // namespace vkspmd::interp
