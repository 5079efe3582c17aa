// Elementwise public ops: arithmetic, math functions, comparisons, where, conversion.
#include <cmath>
#include <numbers>

#include "src/api/api_support.h"
#include "src/lazy/trace_ops.h"
#include "vkspmd/ops.h"

namespace vkspmd {
namespace {

using ir::Opcode;
using lazy::NodeOf;
using lazy::NodePtr;
using lazy::Unwrap;
using lazy::Wrap;

Tensor BinaryOp(Opcode opcode, const Tensor& a, const Tensor& b, const char* op) {
  return Wrap(lazy::trace::Binary(opcode, NodeOf(a, op), NodeOf(b, op), op));
}

Tensor BinaryOp(Opcode opcode, const Tensor& a, Scalar b, const char* op) {
  NodePtr x = NodeOf(a, op);
  return Wrap(lazy::trace::Binary(opcode, x, lazy::ScalarFor(b, x->shape().dtype()), op));
}

Tensor BinaryOp(Opcode opcode, Scalar a, const Tensor& b, const char* op) {
  NodePtr y = NodeOf(b, op);
  return Wrap(lazy::trace::Binary(opcode, lazy::ScalarFor(a, y->shape().dtype()), y, op));
}

// True division: integer operands divide as float32, as in PyTorch.
NodePtr FloatOf(const NodePtr& x) { return Unwrap(lazy::trace::ToFloat(x)); }

Tensor Divide(NodePtr a, NodePtr b) {
  return Wrap(lazy::trace::Binary(Opcode::kDivide, FloatOf(a), FloatOf(b), "div"));
}

// Math functions compute in float32 for integer inputs, as in PyTorch.
Tensor FloatUnary(Opcode opcode, const Tensor& x, const char* op) {
  return Wrap(lazy::trace::Unary(opcode, FloatOf(NodeOf(x, op))));
}

Tensor Compare(ir::ComparisonDirection direction, const Tensor& a, const Tensor& b,
               const char* op) {
  return Wrap(lazy::trace::Compare(direction, NodeOf(a, op), NodeOf(b, op), op));
}

Tensor Compare(ir::ComparisonDirection direction, const Tensor& a, Scalar b, const char* op) {
  NodePtr x = NodeOf(a, op);
  return Wrap(lazy::trace::Compare(direction, x, lazy::ScalarFor(b, x->shape().dtype()), op));
}

NodePtr ConstantLike(double value, const NodePtr& x) {
  return lazy::trace::Constant(value, x->shape().dtype());
}

NodePtr Mul(NodePtr a, NodePtr b) {
  return Unwrap(lazy::trace::Binary(Opcode::kMultiply, std::move(a), std::move(b), "mul"));
}
NodePtr Add(NodePtr a, NodePtr b) {
  return Unwrap(lazy::trace::Binary(Opcode::kAdd, std::move(a), std::move(b), "add"));
}

}  // namespace

Tensor operator+(const Tensor& a, const Tensor& b) { return BinaryOp(Opcode::kAdd, a, b, "add"); }
Tensor operator-(const Tensor& a, const Tensor& b) {
  return BinaryOp(Opcode::kSubtract, a, b, "sub");
}
Tensor operator*(const Tensor& a, const Tensor& b) {
  return BinaryOp(Opcode::kMultiply, a, b, "mul");
}
Tensor operator/(const Tensor& a, const Tensor& b) {
  return Divide(NodeOf(a, "div"), NodeOf(b, "div"));
}
Tensor operator+(const Tensor& a, Scalar b) { return BinaryOp(Opcode::kAdd, a, b, "add"); }
Tensor operator-(const Tensor& a, Scalar b) { return BinaryOp(Opcode::kSubtract, a, b, "sub"); }
Tensor operator*(const Tensor& a, Scalar b) { return BinaryOp(Opcode::kMultiply, a, b, "mul"); }
Tensor operator/(const Tensor& a, Scalar b) {
  NodePtr x = NodeOf(a, "div");
  return Divide(x, lazy::ScalarFor(b, x->shape().dtype()));
}
Tensor operator+(Scalar a, const Tensor& b) { return BinaryOp(Opcode::kAdd, a, b, "add"); }
Tensor operator-(Scalar a, const Tensor& b) { return BinaryOp(Opcode::kSubtract, a, b, "sub"); }
Tensor operator*(Scalar a, const Tensor& b) { return BinaryOp(Opcode::kMultiply, a, b, "mul"); }
Tensor operator/(Scalar a, const Tensor& b) {
  NodePtr y = NodeOf(b, "div");
  return Divide(lazy::ScalarFor(a, y->shape().dtype()), y);
}
Tensor operator-(const Tensor& a) { return neg(a); }

Tensor neg(const Tensor& x) { return Wrap(lazy::trace::Unary(Opcode::kNegate, NodeOf(x, "neg"))); }
Tensor abs(const Tensor& x) { return Wrap(lazy::trace::Unary(Opcode::kAbs, NodeOf(x, "abs"))); }
Tensor exp(const Tensor& x) { return FloatUnary(Opcode::kExp, x, "exp"); }
Tensor log(const Tensor& x) { return FloatUnary(Opcode::kLog, x, "log"); }
Tensor sqrt(const Tensor& x) { return FloatUnary(Opcode::kSqrt, x, "sqrt"); }
Tensor rsqrt(const Tensor& x) { return FloatUnary(Opcode::kRsqrt, x, "rsqrt"); }
Tensor tanh(const Tensor& x) { return FloatUnary(Opcode::kTanh, x, "tanh"); }
Tensor sigmoid(const Tensor& x) { return FloatUnary(Opcode::kLogistic, x, "sigmoid"); }

Tensor relu(const Tensor& x) {
  NodePtr node = NodeOf(x, "relu");
  return Wrap(lazy::trace::Binary(Opcode::kMaximum, node, ConstantLike(0, node), "relu"));
}

Tensor gelu(const Tensor& x, const std::string& approximate) {
  NodePtr node = FloatOf(NodeOf(x, "gelu"));
  NodePtr inner;
  if (approximate == "none") {
    // x * Φ(x) = 0.5 x (1 + erf(x / sqrt(2))).
    inner = Unwrap(
        lazy::trace::Unary(Opcode::kErf, Mul(node, ConstantLike(1 / std::numbers::sqrt2, node))));
  } else if (approximate == "tanh") {
    // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
    NodePtr cube = Mul(Mul(node, node), node);
    NodePtr sum = Add(node, Mul(cube, ConstantLike(0.044715, node)));
    inner = Unwrap(lazy::trace::Unary(
        Opcode::kTanh, Mul(sum, ConstantLike(std::sqrt(2 / std::numbers::pi), node))));
  } else {
    throw Error(ErrorCode::kInvalidArgument,
                "gelu: approximate must be \"none\" or \"tanh\", not \"" + approximate + "\"");
  }
  NodePtr half_x = Mul(node, ConstantLike(0.5, node));
  return Wrap(
      lazy::trace::Binary(Opcode::kMultiply, half_x, Add(inner, ConstantLike(1, node)), "gelu"));
}

Tensor pow(const Tensor& x, const Tensor& exponent) {
  return BinaryOp(Opcode::kPower, x, exponent, "pow");
}
Tensor pow(const Tensor& x, Scalar exponent) {
  return BinaryOp(Opcode::kPower, x, exponent, "pow");
}
Tensor maximum(const Tensor& a, const Tensor& b) {
  return BinaryOp(Opcode::kMaximum, a, b, "maximum");
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return BinaryOp(Opcode::kMinimum, a, b, "minimum");
}

// Each comparison with a tensor and with a scalar on the right.
#define VKSPMD_COMPARISON(name, direction)                           \
  Tensor name(const Tensor& a, const Tensor& b) {                    \
    return Compare(ir::ComparisonDirection::direction, a, b, #name); \
  }                                                                  \
  Tensor name(const Tensor& a, Scalar b) {                           \
    return Compare(ir::ComparisonDirection::direction, a, b, #name); \
  }
VKSPMD_COMPARISON(eq, kEq)
VKSPMD_COMPARISON(ne, kNe)
VKSPMD_COMPARISON(lt, kLt)
VKSPMD_COMPARISON(le, kLe)
VKSPMD_COMPARISON(gt, kGt)
VKSPMD_COMPARISON(ge, kGe)
#undef VKSPMD_COMPARISON

Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator<(const Tensor& a, Scalar b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, Scalar b) { return le(a, b); }
Tensor operator>(const Tensor& a, Scalar b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, Scalar b) { return ge(a, b); }

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  return Wrap(
      lazy::trace::Select(NodeOf(condition, "where"), NodeOf(a, "where"), NodeOf(b, "where")));
}

Tensor where(const Tensor& condition, const Tensor& a, Scalar b) {
  NodePtr x = NodeOf(a, "where");
  return Wrap(
      lazy::trace::Select(NodeOf(condition, "where"), x, lazy::ScalarFor(b, x->shape().dtype())));
}

Tensor to_dtype(const Tensor& x, DType dtype) {
  return Wrap(lazy::trace::Convert(NodeOf(x, "to_dtype"), lazy::ToIrType(dtype)));
}

}  // namespace vkspmd
