// Gradient rules of the elementwise ops: unary math, binary arithmetic, select, clamp, convert.
// Conventions follow JAX: maximum/minimum split the gradient evenly between tied operands, clamp
// passes it only strictly inside the bounds, power's exponent gradient is 0 where the base is 0.
#include <cmath>
#include <utility>

#include "src/autodiff/gradient_rules.h"
#include "src/base/status_macros.h"

namespace vkspmd::autodiff {
namespace {

using ir::ComparisonDirection;
using ir::Instruction;
using ir::Opcode;

// g * f where f is built from forward values.
absl::StatusOr<OperandAdjoints> Scaled(GradientEmitter& emit, Instruction* adjoint,
                                       Instruction* factor) {
  VKSPMD_ASSIGN_OR_RETURN(Instruction * product, emit.Binary(Opcode::kMultiply, adjoint, factor));
  return OperandAdjoints{product};
}

absl::StatusOr<OperandAdjoints> UnaryGradient(const RuleInput& input, GradientEmitter& emit) {
  Instruction* g = input.adjoint;
  Instruction* x = input.forward.operand(0);
  Instruction* y = const_cast<Instruction*>(&input.forward);
  switch (input.forward.opcode()) {
    case Opcode::kNegate: {
      VKSPMD_ASSIGN_OR_RETURN(Instruction * negated, emit.Unary(Opcode::kNegate, g));
      return OperandAdjoints{negated};
    }
    case Opcode::kCopy:
      return OperandAdjoints{g};
    case Opcode::kAbs: {
      VKSPMD_ASSIGN_OR_RETURN(Instruction * sign, emit.Unary(Opcode::kSign, x));
      return Scaled(emit, g, sign);
    }
    case Opcode::kExp:
      return Scaled(emit, g, y);
    case Opcode::kExpm1: {
      VKSPMD_ASSIGN_OR_RETURN(Instruction * exp, emit.BinaryWithScalar(Opcode::kAdd, y, 1));
      return Scaled(emit, g, exp);
    }
    case Opcode::kLog: {
      VKSPMD_ASSIGN_OR_RETURN(Instruction * quotient, emit.Binary(Opcode::kDivide, g, x));
      return OperandAdjoints{quotient};
    }
    case Opcode::kLog1p: {
      VKSPMD_ASSIGN_OR_RETURN(Instruction * one_plus, emit.BinaryWithScalar(Opcode::kAdd, x, 1));
      VKSPMD_ASSIGN_OR_RETURN(Instruction * quotient, emit.Binary(Opcode::kDivide, g, one_plus));
      return OperandAdjoints{quotient};
    }
    case Opcode::kSqrt: {  // d sqrt(x) = 0.5 / sqrt(x)
      VKSPMD_ASSIGN_OR_RETURN(Instruction * twice, emit.BinaryWithScalar(Opcode::kMultiply, y, 2));
      VKSPMD_ASSIGN_OR_RETURN(Instruction * quotient, emit.Binary(Opcode::kDivide, g, twice));
      return OperandAdjoints{quotient};
    }
    case Opcode::kRsqrt: {  // d x^-1/2 = -0.5 * y / x
      VKSPMD_ASSIGN_OR_RETURN(Instruction * ratio, emit.Binary(Opcode::kDivide, y, x));
      VKSPMD_ASSIGN_OR_RETURN(Instruction * factor,
                              emit.BinaryWithScalar(Opcode::kMultiply, ratio, -0.5));
      return Scaled(emit, g, factor);
    }
    case Opcode::kTanh: {  // 1 - y^2
      VKSPMD_ASSIGN_OR_RETURN(Instruction * square, emit.Binary(Opcode::kMultiply, y, y));
      VKSPMD_ASSIGN_OR_RETURN(Instruction * one, emit.Full(1, y->shape()));
      VKSPMD_ASSIGN_OR_RETURN(Instruction * factor, emit.Binary(Opcode::kSubtract, one, square));
      return Scaled(emit, g, factor);
    }
    case Opcode::kLogistic: {  // y (1 - y)
      VKSPMD_ASSIGN_OR_RETURN(Instruction * one, emit.Full(1, y->shape()));
      VKSPMD_ASSIGN_OR_RETURN(Instruction * complement, emit.Binary(Opcode::kSubtract, one, y));
      VKSPMD_ASSIGN_OR_RETURN(Instruction * factor, emit.Binary(Opcode::kMultiply, y, complement));
      return Scaled(emit, g, factor);
    }
    case Opcode::kSine: {
      VKSPMD_ASSIGN_OR_RETURN(Instruction * cosine, emit.Unary(Opcode::kCosine, x));
      return Scaled(emit, g, cosine);
    }
    case Opcode::kCosine: {
      VKSPMD_ASSIGN_OR_RETURN(Instruction * sine, emit.Unary(Opcode::kSine, x));
      VKSPMD_ASSIGN_OR_RETURN(Instruction * negated, emit.Unary(Opcode::kNegate, sine));
      return Scaled(emit, g, negated);
    }
    case Opcode::kErf: {  // 2/sqrt(pi) * exp(-x^2)
      VKSPMD_ASSIGN_OR_RETURN(Instruction * square, emit.Binary(Opcode::kMultiply, x, x));
      VKSPMD_ASSIGN_OR_RETURN(Instruction * negated, emit.Unary(Opcode::kNegate, square));
      VKSPMD_ASSIGN_OR_RETURN(Instruction * exp, emit.Unary(Opcode::kExp, negated));
      VKSPMD_ASSIGN_OR_RETURN(Instruction * factor,
                              emit.BinaryWithScalar(Opcode::kMultiply, exp, 2 / std::sqrt(M_PI)));
      return Scaled(emit, g, factor);
    }
    default:
      return absl::UnimplementedError("no gradient rule for " +
                                      std::string(ir::OpcodeName(input.forward.opcode())));
  }
}

// The share of the gradient of maximum/minimum(a, b) that goes to `a`: where a wins, all of it;
// where they tie, half (JAX's convention); elsewhere none.
absl::StatusOr<Instruction*> ChooserShare(GradientEmitter& emit, Instruction* g, Instruction* a,
                                          Instruction* b, ComparisonDirection wins) {
  VKSPMD_ASSIGN_OR_RETURN(Instruction * zero, emit.Zeros(g->shape()));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * half, emit.BinaryWithScalar(Opcode::kMultiply, g, 0.5));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * tie, emit.Compare(a, b, ComparisonDirection::kEq));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * tied_share, emit.Select(tie, half, zero));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * win, emit.Compare(a, b, wins));
  return emit.Select(win, g, tied_share);
}

// trunc(q) = q >= 0 ? floor(q) : ceil(q), which XLA has no op for.
absl::StatusOr<Instruction*> Truncate(GradientEmitter& emit, Instruction* q) {
  VKSPMD_ASSIGN_OR_RETURN(Instruction * zero, emit.Zeros(q->shape()));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * non_negative,
                          emit.Compare(q, zero, ComparisonDirection::kGe));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * floor, emit.Unary(Opcode::kFloor, q));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * ceil, emit.Unary(Opcode::kCeil, q));
  return emit.Select(non_negative, floor, ceil);
}

absl::StatusOr<OperandAdjoints> BinaryGradient(const RuleInput& input, GradientEmitter& emit) {
  Instruction* g = input.adjoint;
  Instruction* a = input.forward.operand(0);
  Instruction* b = input.forward.operand(1);
  Instruction* y = const_cast<Instruction*>(&input.forward);
  OperandAdjoints result(2, nullptr);
  const bool want_a = input.wanted[0];
  const bool want_b = input.wanted[1];
  switch (input.forward.opcode()) {
    case Opcode::kAdd:
      return OperandAdjoints{g, g};
    case Opcode::kSubtract:
      result[0] = g;
      if (want_b) {
        VKSPMD_ASSIGN_OR_RETURN(result[1], emit.Unary(Opcode::kNegate, g));
      }
      return result;
    case Opcode::kMultiply:
      if (want_a) {
        VKSPMD_ASSIGN_OR_RETURN(result[0], emit.Binary(Opcode::kMultiply, g, b));
      }
      if (want_b) {
        VKSPMD_ASSIGN_OR_RETURN(result[1], emit.Binary(Opcode::kMultiply, g, a));
      }
      return result;
    case Opcode::kDivide: {  // d/da = g / b, d/db = -g * y / b
      VKSPMD_ASSIGN_OR_RETURN(Instruction * g_over_b, emit.Binary(Opcode::kDivide, g, b));
      result[0] = g_over_b;
      if (want_b) {
        VKSPMD_ASSIGN_OR_RETURN(Instruction * scaled, emit.Binary(Opcode::kMultiply, g_over_b, y));
        VKSPMD_ASSIGN_OR_RETURN(result[1], emit.Unary(Opcode::kNegate, scaled));
      }
      return result;
    }
    case Opcode::kRemainder: {  // a - b * trunc(a / b)
      result[0] = g;
      if (want_b) {
        VKSPMD_ASSIGN_OR_RETURN(Instruction * quotient, emit.Binary(Opcode::kDivide, a, b));
        VKSPMD_ASSIGN_OR_RETURN(Instruction * truncated, Truncate(emit, quotient));
        VKSPMD_ASSIGN_OR_RETURN(Instruction * scaled, emit.Binary(Opcode::kMultiply, g, truncated));
        VKSPMD_ASSIGN_OR_RETURN(result[1], emit.Unary(Opcode::kNegate, scaled));
      }
      return result;
    }
    case Opcode::kMaximum:
    case Opcode::kMinimum: {
      // Each operand wins where it compares GT (maximum) or LT (minimum) against the other.
      ComparisonDirection wins = input.forward.opcode() == Opcode::kMaximum
                                     ? ComparisonDirection::kGt
                                     : ComparisonDirection::kLt;
      if (want_a) {
        VKSPMD_ASSIGN_OR_RETURN(result[0], ChooserShare(emit, g, a, b, wins));
      }
      if (want_b) {
        VKSPMD_ASSIGN_OR_RETURN(result[1], ChooserShare(emit, g, b, a, wins));
      }
      return result;
    }
    case Opcode::kPower: {  // d/da = b a^(b-1) (0 where b == 0); d/db = y log(a) (0 where a == 0)
      VKSPMD_ASSIGN_OR_RETURN(Instruction * zero, emit.Zeros(g->shape()));
      if (want_a) {
        VKSPMD_ASSIGN_OR_RETURN(Instruction * b_minus_one,
                                emit.BinaryWithScalar(Opcode::kSubtract, b, 1));
        VKSPMD_ASSIGN_OR_RETURN(Instruction * power, emit.Binary(Opcode::kPower, a, b_minus_one));
        VKSPMD_ASSIGN_OR_RETURN(Instruction * slope, emit.Binary(Opcode::kMultiply, b, power));
        VKSPMD_ASSIGN_OR_RETURN(Instruction * b_zero,
                                emit.Compare(b, zero, ComparisonDirection::kEq));
        VKSPMD_ASSIGN_OR_RETURN(Instruction * safe, emit.Select(b_zero, zero, slope));
        VKSPMD_ASSIGN_OR_RETURN(result[0], emit.Binary(Opcode::kMultiply, g, safe));
      }
      if (want_b) {
        VKSPMD_ASSIGN_OR_RETURN(Instruction * one, emit.Full(1, a->shape()));
        VKSPMD_ASSIGN_OR_RETURN(Instruction * a_zero,
                                emit.Compare(a, zero, ComparisonDirection::kEq));
        VKSPMD_ASSIGN_OR_RETURN(Instruction * safe_a, emit.Select(a_zero, one, a));
        VKSPMD_ASSIGN_OR_RETURN(Instruction * log, emit.Unary(Opcode::kLog, safe_a));
        VKSPMD_ASSIGN_OR_RETURN(Instruction * slope, emit.Binary(Opcode::kMultiply, y, log));
        VKSPMD_ASSIGN_OR_RETURN(result[1], emit.Binary(Opcode::kMultiply, g, slope));
      }
      return result;
    }
    case Opcode::kAtan2: {  // atan2(a, b): d/da = b / (a²+b²), d/db = -a / (a²+b²)
      VKSPMD_ASSIGN_OR_RETURN(Instruction * a2, emit.Binary(Opcode::kMultiply, a, a));
      VKSPMD_ASSIGN_OR_RETURN(Instruction * b2, emit.Binary(Opcode::kMultiply, b, b));
      VKSPMD_ASSIGN_OR_RETURN(Instruction * norm, emit.Binary(Opcode::kAdd, a2, b2));
      VKSPMD_ASSIGN_OR_RETURN(Instruction * g_over, emit.Binary(Opcode::kDivide, g, norm));
      if (want_a) {
        VKSPMD_ASSIGN_OR_RETURN(result[0], emit.Binary(Opcode::kMultiply, g_over, b));
      }
      if (want_b) {
        VKSPMD_ASSIGN_OR_RETURN(Instruction * scaled, emit.Binary(Opcode::kMultiply, g_over, a));
        VKSPMD_ASSIGN_OR_RETURN(result[1], emit.Unary(Opcode::kNegate, scaled));
      }
      return result;
    }
    default:
      return absl::UnimplementedError("no gradient rule for " +
                                      std::string(ir::OpcodeName(input.forward.opcode())));
  }
}

absl::StatusOr<OperandAdjoints> SelectGradient(const RuleInput& input, GradientEmitter& emit) {
  Instruction* g = input.adjoint;
  Instruction* predicate = input.forward.operand(0);
  OperandAdjoints result(3, nullptr);
  VKSPMD_ASSIGN_OR_RETURN(Instruction * zero, emit.Zeros(g->shape()));
  if (input.wanted[1]) {
    VKSPMD_ASSIGN_OR_RETURN(result[1], emit.Select(predicate, g, zero));
  }
  if (input.wanted[2]) {
    VKSPMD_ASSIGN_OR_RETURN(result[2], emit.Select(predicate, zero, g));
  }
  return result;
}

// clamp(low, x, high), where low and high may be scalars.
absl::StatusOr<OperandAdjoints> ClampGradient(const RuleInput& input, GradientEmitter& emit) {
  Instruction* g = input.adjoint;
  Instruction* low = input.forward.operand(0);
  Instruction* x = input.forward.operand(1);
  Instruction* high = input.forward.operand(2);
  VKSPMD_ASSIGN_OR_RETURN(Instruction * zero, emit.Zeros(g->shape()));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * low_full, emit.Broadcast(low, x->shape(), {}));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * high_full, emit.Broadcast(high, x->shape(), {}));
  OperandAdjoints result(3, nullptr);
  VKSPMD_ASSIGN_OR_RETURN(Instruction * above_low,
                          emit.Compare(x, low_full, ComparisonDirection::kGt));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * below_high,
                          emit.Compare(x, high_full, ComparisonDirection::kLt));
  if (input.wanted[1]) {
    VKSPMD_ASSIGN_OR_RETURN(Instruction * inside, emit.Binary(Opcode::kAnd, above_low, below_high));
    VKSPMD_ASSIGN_OR_RETURN(result[1], emit.Select(inside, g, zero));
  }
  if (input.wanted[0]) {  // low wins where x < low and low < high (JAX's rule)
    VKSPMD_ASSIGN_OR_RETURN(Instruction * x_below,
                            emit.Compare(low_full, x, ComparisonDirection::kGt));
    VKSPMD_ASSIGN_OR_RETURN(Instruction * ordered,
                            emit.Compare(low_full, high_full, ComparisonDirection::kLt));
    VKSPMD_ASSIGN_OR_RETURN(Instruction * chosen, emit.Binary(Opcode::kAnd, x_below, ordered));
    VKSPMD_ASSIGN_OR_RETURN(Instruction * share, emit.Select(chosen, g, zero));
    VKSPMD_ASSIGN_OR_RETURN(result[0], emit.SumToShape(share, low->shape()));
  }
  if (input.wanted[2]) {  // high wins where high < x
    VKSPMD_ASSIGN_OR_RETURN(Instruction * x_above,
                            emit.Compare(high_full, x, ComparisonDirection::kLt));
    VKSPMD_ASSIGN_OR_RETURN(Instruction * share, emit.Select(x_above, g, zero));
    VKSPMD_ASSIGN_OR_RETURN(result[2], emit.SumToShape(share, high->shape()));
  }
  return result;
}

}  // namespace

absl::StatusOr<OperandAdjoints> ElementwiseGradient(const RuleInput& input, GradientEmitter& emit) {
  Opcode opcode = input.forward.opcode();
  if (opcode == Opcode::kSelect) return SelectGradient(input, emit);
  if (opcode == Opcode::kClamp) return ClampGradient(input, emit);
  if (opcode == Opcode::kConvert) {
    // Only float → float conversions are on a gradient path; convert the adjoint back.
    VKSPMD_ASSIGN_OR_RETURN(
        Instruction * back,
        emit.builder().Convert(input.adjoint, input.forward.operand(0)->shape().dtype()));
    return OperandAdjoints{back};
  }
  if (opcode == Opcode::kReducePrecision) {
    // As JAX's rule (reduce_precision is linear there): the adjoint is rounded the same way, so
    // a value kept in bf16 or f16 precision also gets a gradient of that precision, rather than
    // the zero that the rounding's piecewise-constant derivative would give.
    ir::InstructionAttributes attributes;
    attributes.exponent_bits = input.forward.attributes().exponent_bits;
    attributes.mantissa_bits = input.forward.attributes().mantissa_bits;
    VKSPMD_ASSIGN_OR_RETURN(
        Instruction * rounded,
        emit.builder().Add(Opcode::kReducePrecision, {input.adjoint}, std::move(attributes)));
    return OperandAdjoints{rounded};
  }
  if (ir::IsElementwiseBinary(opcode)) return BinaryGradient(input, emit);
  return UnaryGradient(input, emit);
}

}  // namespace vkspmd::autodiff
