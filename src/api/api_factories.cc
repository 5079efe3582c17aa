// Tensor factories: constants, ranges, random values and host data.
#include <cmath>
#include <numbers>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "src/api/api_support.h"
#include "src/interp/rng.h"
#include "src/io/npy.h"
#include "src/lazy/context.h"
#include "src/lazy/trace_ops.h"
#include "vkspmd/ops.h"
#include "vkspmd/tensor.h"

namespace vkspmd {
namespace {

using lazy::NodePtr;
using lazy::Unwrap;

void CheckShape(const std::vector<int64_t>& shape, const char* op) {
  for (int64_t dim : shape) {
    if (dim < 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  absl::StrCat(op, ": negative dim ", dim, " in the shape"));
    }
  }
}

Tensor Filled(NodePtr scalar, std::vector<int64_t> shape, const char* op) {
  CheckShape(shape, op);
  return lazy::Wrap(lazy::trace::BroadcastTo(scalar, shape));
}

// `count` random 32-bit words from Philox4x32-10 keyed by the seed, at fresh counters.
ir::Literal RandomBits(int64_t count) {
  const uint64_t blocks = static_cast<uint64_t>(count + 3) / 4;
  lazy::Context& context = lazy::Context::Get();
  const uint64_t seed = context.seed();
  const uint64_t counter = context.TakeRandomCounter(blocks);
  ir::Instruction generator(
      ir::Opcode::kRngBitGenerator,
      ir::Shape::Tuple({ir::Shape(ir::DType::kU64, {3}), ir::Shape(ir::DType::kU32, {count})}), {});
  generator.attributes().rng_algorithm = ir::RngAlgorithm::kPhilox;
  ir::Literal state = ir::Literal::Create<uint64_t>(ir::DType::kU64, {3}, {seed, counter, 0});
  ir::Literal result = Unwrap(interp::EvaluateRngBitGenerator(generator, state));
  return std::move(result.tuple_elements()[1]);
}

// A float32 literal's values rounded to `dtype` (a floating type), as a host leaf.
Tensor FloatLeaf(ir::Literal values, DType dtype, const char* op) {
  if (!is_floating_point(dtype)) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat(op, ": dtype ", dtype_name(dtype), " is not a floating-point type"));
  }
  const ir::DType type = lazy::ToIrType(dtype);
  if (type == values.dtype()) return lazy::Wrap(lazy::MakeHostLeaf(std::move(values)));
  ir::Literal rounded(ir::Shape(type, values.shape().dimensions()));
  for (int64_t i = 0; i < values.ElementCount(); ++i) {
    rounded.SetFromDouble(i, values.GetAsDouble(i));
  }
  return lazy::Wrap(lazy::MakeHostLeaf(std::move(rounded)));
}

// A word's top 24 bits as a float in [0, 1).
float Uniform(uint32_t bits) { return static_cast<float>(bits >> 8) * 0x1p-24f; }

// Host values of `type` (a float type rounds them) as a host leaf.
template <typename T>
Tensor FromSpan(std::span<const T> values, std::vector<int64_t> shape, ir::DType type) {
  if (shape.empty()) shape = {static_cast<int64_t>(values.size())};
  CheckShape(shape, "tensor");
  ir::Literal literal(ir::Shape(type, shape));
  if (literal.ElementCount() != static_cast<int64_t>(values.size())) {
    throw Error(
        ErrorCode::kInvalidArgument,
        absl::StrCat("tensor: ", values.size(), " values for shape ", literal.shape().ToString()));
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      literal.SetFromDouble(static_cast<int64_t>(i), values[i]);
    } else {
      literal.Set<T>(static_cast<int64_t>(i), values[i]);
    }
  }
  return lazy::Wrap(lazy::MakeHostLeaf(std::move(literal)));
}

}  // namespace

Tensor zeros(std::vector<int64_t> shape, DType dtype) {
  return Filled(lazy::trace::Constant(0, lazy::ToIrType(dtype)), std::move(shape), "zeros");
}

Tensor ones(std::vector<int64_t> shape, DType dtype) {
  return Filled(lazy::trace::Constant(1, lazy::ToIrType(dtype)), std::move(shape), "ones");
}

Tensor full(std::vector<int64_t> shape, Scalar value, DType dtype) {
  NodePtr scalar = Unwrap(
      lazy::trace::Convert(lazy::ScalarFor(value, lazy::ToIrType(dtype)), lazy::ToIrType(dtype)));
  return Filled(scalar, std::move(shape), "full");
}

Tensor zeros_like(const Tensor& tensor) { return zeros(tensor.shape(), tensor.dtype()); }
Tensor ones_like(const Tensor& tensor) { return ones(tensor.shape(), tensor.dtype()); }

Tensor scalar(Scalar value, DType dtype) {
  ir::Literal literal(ir::Shape::Scalar(lazy::ToIrType(dtype)));
  if (ir::IsFloat(literal.dtype())) {
    literal.SetFromDouble(0, value.value());
  } else {
    literal.SetFromInt64(0, static_cast<int64_t>(value.value()));
  }
  return lazy::Wrap(lazy::MakeHostLeaf(std::move(literal)));
}

Tensor arange(Scalar end) { return arange(0, end, 1); }

Tensor arange(Scalar start, Scalar end, Scalar step) {
  if (step.value() == 0) throw Error(ErrorCode::kInvalidArgument, "arange: step must not be 0");
  const bool floating = start.is_floating() || end.is_floating() || step.is_floating();
  const ir::DType type = floating ? ir::DType::kF32 : ir::DType::kS32;
  const int64_t count = std::max<int64_t>(
      0, static_cast<int64_t>(std::ceil((end.value() - start.value()) / step.value())));
  NodePtr iota = Unwrap(lazy::trace::Iota(type, {count}, 0));
  NodePtr scaled = Unwrap(lazy::trace::Binary(ir::Opcode::kMultiply, iota,
                                              lazy::trace::Constant(step.value(), type), "arange"));
  return lazy::Wrap(lazy::trace::Binary(ir::Opcode::kAdd, scaled,
                                        lazy::trace::Constant(start.value(), type), "arange"));
}

Tensor rand(std::vector<int64_t> shape, DType dtype) {
  CheckShape(shape, "rand");
  ir::Literal values(ir::Shape(ir::DType::kF32, shape));
  ir::Literal bits = RandomBits(values.ElementCount());
  for (int64_t i = 0; i < values.ElementCount(); ++i) {
    values.Set<float>(i, Uniform(bits.Get<uint32_t>(i)));
  }
  return FloatLeaf(std::move(values), dtype, "rand");
}

Tensor randn(std::vector<int64_t> shape, DType dtype) {
  CheckShape(shape, "randn");
  ir::Literal values(ir::Shape(ir::DType::kF32, shape));
  const int64_t count = values.ElementCount();
  ir::Literal bits = RandomBits(count + count % 2);
  // Box-Muller: each pair of uniforms gives two normals; 1 - u keeps the logarithm finite.
  for (int64_t i = 0; i < count; i += 2) {
    const double radius = std::sqrt(-2.0 * std::log(1.0 - Uniform(bits.Get<uint32_t>(i))));
    const double angle = 2.0 * std::numbers::pi * Uniform(bits.Get<uint32_t>(i + 1));
    values.Set<float>(i, static_cast<float>(radius * std::cos(angle)));
    if (i + 1 < count) values.Set<float>(i + 1, static_cast<float>(radius * std::sin(angle)));
  }
  return FloatLeaf(std::move(values), dtype, "randn");
}

void manual_seed(uint64_t seed) { lazy::Context::Get().SetSeed(seed); }

RngState get_rng_state() {
  lazy::Context& context = lazy::Context::Get();
  return RngState{context.seed(), context.random_counter()};
}

void set_rng_state(const RngState& state) {
  lazy::Context::Get().SetRandomState(state.seed, state.offset);
}

Tensor tensor(std::span<const float> values, std::vector<int64_t> shape, DType dtype) {
  if (!is_floating_point(dtype)) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("tensor: float values cannot be stored as ", dtype_name(dtype)));
  }
  return FromSpan(values, std::move(shape), lazy::ToIrType(dtype));
}
Tensor tensor(std::span<const int32_t> values, std::vector<int64_t> shape) {
  return FromSpan(values, std::move(shape), ir::DType::kS32);
}
Tensor tensor(std::span<const uint32_t> values, std::vector<int64_t> shape) {
  return FromSpan(values, std::move(shape), ir::DType::kU32);
}
Tensor tensor(const std::vector<bool>& values, std::vector<int64_t> shape) {
  std::vector<uint8_t> bytes(values.begin(), values.end());
  return FromSpan(std::span<const uint8_t>(bytes), std::move(shape), ir::DType::kPred);
}

Tensor from_host(const HostTensor& value) {
  return lazy::Wrap(lazy::MakeHostLeaf(lazy::FromHostTensor(value)));
}

Tensor from_npy(const std::string& path) {
  ir::Literal literal = Unwrap(io::ReadNpyFile(path));
  lazy::FromIrType(literal.dtype());  // Throws for types the API cannot hold.
  return lazy::Wrap(lazy::MakeHostLeaf(std::move(literal)));
}

}  // namespace vkspmd
