// Typed combine loops. Integer sums and products wrap (computed in the unsigned type of the same
// width, which C++ defines); float min/max follow XLA (NaN wins, max(-0, +0) = +0); predicates are
// bytes of 0/1 where sum and max mean "or" and product and min mean "and"; f16/bf16 combine in
// f32, rounded per step.
#include "src/collectives/host_reduce.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "src/base/half_float.h"

namespace vkspmd::collectives {
namespace {

template <typename T>
T Combine(T a, T b, ReduceOp op) {
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case ReduceOp::kSum:
        return a + b;
      case ReduceOp::kProduct:
        return a * b;
      case ReduceOp::kMax:
        if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
        if (a == b) return std::signbit(a) ? b : a;
        return a > b ? a : b;
      default:  // kMin; and/or were refused before.
        if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
        if (a == b) return std::signbit(a) ? a : b;
        return a < b ? a : b;
    }
  } else {
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case ReduceOp::kSum:
        return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      case ReduceOp::kProduct:
        // Promotion of narrow unsigned types to int could overflow; multiply in 64 bits.
        return static_cast<T>(static_cast<uint64_t>(static_cast<U>(a)) *
                              static_cast<uint64_t>(static_cast<U>(b)));
      case ReduceOp::kMax:
        return a > b ? a : b;
      case ReduceOp::kMin:
        return a < b ? a : b;
      case ReduceOp::kAnd:
        return static_cast<T>(a & b);
      default:
        return static_cast<T>(a | b);
    }
  }
}

// One loop per (T, op): `op` is a template argument so each instantiation is a plain loop.
template <typename T, ReduceOp kOp>
void CombineLoop(std::byte* accumulator, const std::byte* operand, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    T a, b;
    std::memcpy(&a, accumulator + i * sizeof(T), sizeof(T));
    std::memcpy(&b, operand + i * sizeof(T), sizeof(T));
    T c = Combine(a, b, kOp);
    std::memcpy(accumulator + i * sizeof(T), &c, sizeof(T));
  }
}

template <typename T>
void CombineTyped(std::byte* accumulator, const std::byte* operand, size_t count, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return CombineLoop<T, ReduceOp::kSum>(accumulator, operand, count);
    case ReduceOp::kProduct:
      return CombineLoop<T, ReduceOp::kProduct>(accumulator, operand, count);
    case ReduceOp::kMin:
      return CombineLoop<T, ReduceOp::kMin>(accumulator, operand, count);
    case ReduceOp::kMax:
      return CombineLoop<T, ReduceOp::kMax>(accumulator, operand, count);
    case ReduceOp::kAnd:
      if constexpr (!std::is_floating_point_v<T>) {
        return CombineLoop<T, ReduceOp::kAnd>(accumulator, operand, count);
      }
      return;
    case ReduceOp::kOr:
      if constexpr (!std::is_floating_point_v<T>) {
        return CombineLoop<T, ReduceOp::kOr>(accumulator, operand, count);
      }
      return;
  }
}

// f16 and bf16: each pair is combined in f32 and rounded back to nearest even, one rounding per
// step in the members' order, exactly as the CPU reference's all-reduce combines them (its double
// sum of two 16-bit floats rounds to the same f32).
template <bool kBFloat16, ReduceOp kOp>
void CombineHalfLoop(std::byte* accumulator, const std::byte* operand, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    uint16_t a, b;
    std::memcpy(&a, accumulator + i * 2, 2);
    std::memcpy(&b, operand + i * 2, 2);
    const float x = kBFloat16 ? base::BFloat16BitsToFloat(a) : base::HalfBitsToFloat(a);
    const float y = kBFloat16 ? base::BFloat16BitsToFloat(b) : base::HalfBitsToFloat(b);
    const float c = Combine(x, y, kOp);
    const uint16_t bits = kBFloat16 ? base::FloatToBFloat16Bits(c) : base::FloatToHalfBits(c);
    std::memcpy(accumulator + i * 2, &bits, 2);
  }
}

template <bool kBFloat16>
void CombineHalf(std::byte* accumulator, const std::byte* operand, size_t count, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return CombineHalfLoop<kBFloat16, ReduceOp::kSum>(accumulator, operand, count);
    case ReduceOp::kProduct:
      return CombineHalfLoop<kBFloat16, ReduceOp::kProduct>(accumulator, operand, count);
    case ReduceOp::kMin:
      return CombineHalfLoop<kBFloat16, ReduceOp::kMin>(accumulator, operand, count);
    case ReduceOp::kMax:
      return CombineHalfLoop<kBFloat16, ReduceOp::kMax>(accumulator, operand, count);
    default:  // and/or were refused before.
      return;
  }
}

}  // namespace

bool ReductionApplies(ElementType type, ReduceOp op) {
  const bool is_float = type == ElementType::kF32 || type == ElementType::kF64 ||
                        type == ElementType::kF16 || type == ElementType::kBF16;
  return !(is_float && (op == ReduceOp::kAnd || op == ReduceOp::kOr));
}

absl::Status CombineInto(std::span<std::byte> accumulator, std::span<const std::byte> operand,
                         ElementType type, ReduceOp op) {
  const size_t size = ElementSize(type);
  if (accumulator.size() != operand.size() || accumulator.size() % size != 0) {
    return absl::InvalidArgumentError(absl::StrCat("combining ", operand.size(), " bytes into ",
                                                   accumulator.size(), " bytes of ",
                                                   ElementTypeName(type)));
  }
  if (!ReductionApplies(type, op)) {
    return absl::InvalidArgumentError(
        absl::StrCat(ReduceOpName(op), " does not apply to ", ElementTypeName(type)));
  }
  const size_t count = accumulator.size() / size;
  std::byte* a = accumulator.data();
  const std::byte* b = operand.data();
  switch (type) {
    case ElementType::kPred: {
      // 0/1 bytes: sum and max are "or", product and min are "and".
      const bool any = op == ReduceOp::kSum || op == ReduceOp::kMax || op == ReduceOp::kOr;
      CombineTyped<uint8_t>(a, b, count, any ? ReduceOp::kOr : ReduceOp::kAnd);
      break;
    }
    case ElementType::kS8:
      CombineTyped<int8_t>(a, b, count, op);
      break;
    case ElementType::kU8:
      CombineTyped<uint8_t>(a, b, count, op);
      break;
    case ElementType::kS16:
      CombineTyped<int16_t>(a, b, count, op);
      break;
    case ElementType::kU16:
      CombineTyped<uint16_t>(a, b, count, op);
      break;
    case ElementType::kS32:
      CombineTyped<int32_t>(a, b, count, op);
      break;
    case ElementType::kU32:
      CombineTyped<uint32_t>(a, b, count, op);
      break;
    case ElementType::kS64:
      CombineTyped<int64_t>(a, b, count, op);
      break;
    case ElementType::kU64:
      CombineTyped<uint64_t>(a, b, count, op);
      break;
    case ElementType::kF32:
      CombineTyped<float>(a, b, count, op);
      break;
    case ElementType::kF64:
      CombineTyped<double>(a, b, count, op);
      break;
    case ElementType::kF16:
      CombineHalf<false>(a, b, count, op);
      break;
    case ElementType::kBF16:
      CombineHalf<true>(a, b, count, op);
      break;
  }
  return absl::OkStatus();
}

}  // namespace vkspmd::collectives
