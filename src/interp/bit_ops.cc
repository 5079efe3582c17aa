// bitcast-convert and reduce-precision (see bit_ops.h). reduce-precision follows XLA's evaluator
// bit for bit: round the mantissa on the integer bits, then clamp the exponent.
#include "src/interp/bit_ops.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>

#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/ir/shape_inference.h"

namespace vkspmd::interp {
namespace {

// One element's bits in a float format of `total_bits` bits with `source_mantissa_bits` explicit
// mantissa bits (f16: 16/10, bf16: 16/7, f32: 32/23, f64: 64/52).
uint64_t ReducePrecisionBits(uint64_t bits, int total_bits, int source_mantissa_bits,
                             int exponent_bits, int mantissa_bits) {
  const int source_exponent_bits = total_bits - 1 - source_mantissa_bits;
  const uint64_t all_bits = total_bits == 64 ? ~uint64_t{0} : (uint64_t{1} << total_bits) - 1;
  const uint64_t exponent_mask = ((uint64_t{1} << source_exponent_bits) - 1)
                                 << source_mantissa_bits;
  const uint64_t mantissa_mask = (uint64_t{1} << source_mantissa_bits) - 1;
  const bool is_nan = (bits & exponent_mask) == exponent_mask && (bits & mantissa_mask) != 0;
  const uint64_t input = bits;
  if (mantissa_bits < source_mantissa_bits) {
    const uint64_t last_mantissa_bit_mask = uint64_t{1} << (source_mantissa_bits - mantissa_bits);
    // Round to nearest, ties to even: add half a unit less one, plus the last kept bit.
    const uint64_t base_rounding_bias = (last_mantissa_bit_mask >> 1) - 1;
    const uint64_t last_kept_bit =
        (bits & last_mantissa_bit_mask) >> (source_mantissa_bits - mantissa_bits);
    const uint64_t truncation_mask = ~(last_mantissa_bit_mask - 1);
    bits = ((bits + last_kept_bit + base_rounding_bias) & truncation_mask) & all_bits;
  }
  if (exponent_bits < source_exponent_bits) {
    const uint64_t sign_mask = uint64_t{1} << (total_bits - 1);
    const uint64_t exponent = bits & exponent_mask;
    const uint64_t bias = (uint64_t{1} << (source_exponent_bits - 1)) - 1;
    const uint64_t reduced_bias = (uint64_t{1} << (exponent_bits - 1)) - 1;
    const uint64_t reduced_max_exponent = bias + reduced_bias;
    const uint64_t reduced_min_exponent = bias - reduced_bias;
    const uint64_t signed_zero = bits & sign_mask;
    if (exponent > (reduced_max_exponent << source_mantissa_bits)) {
      bits = signed_zero | exponent_mask;
    } else if (exponent <= (reduced_min_exponent << source_mantissa_bits)) {
      bits = signed_zero;
    }
  }
  // NaN stays the input NaN, or becomes +inf when no mantissa bit is left to carry it.
  if (is_nan) bits = mantissa_bits > 0 ? input : exponent_mask;
  return bits;
}

template <typename Bits, typename Float>
Float ReduceOne(Float value, int source_mantissa_bits, int exponent_bits, int mantissa_bits) {
  Bits bits;
  std::memcpy(&bits, &value, sizeof(bits));
  bits = static_cast<Bits>(ReducePrecisionBits(bits, sizeof(Bits) * 8, source_mantissa_bits,
                                               exponent_bits, mantissa_bits));
  std::memcpy(&value, &bits, sizeof(bits));
  return value;
}

}  // namespace

float ReducePrecision(float value, int exponent_bits, int mantissa_bits) {
  return ReduceOne<uint32_t>(value, 23, exponent_bits, mantissa_bits);
}

double ReducePrecision(double value, int exponent_bits, int mantissa_bits) {
  return ReduceOne<uint64_t>(value, 52, exponent_bits, mantissa_bits);
}

absl::StatusOr<ir::Literal> BitcastConvert(const ir::Literal& operand, ir::DType type) {
  if (operand.dtype() == ir::DType::kPred || type == ir::DType::kPred) {
    return absl::InvalidArgumentError(
        fmt::format("bitcast-convert from {} to {}: pred has no width",
                    ir::DTypeName(operand.dtype()), ir::DTypeName(type)));
  }
  // XLA's bitcast-convert is a memory cast; literals hold elements in the host's order, so on a
  // little-endian host a width change is the same bytes with the narrow elements lowest first,
  // as XLA's CPU backend gives them.
  static_assert(std::endian::native == std::endian::little,
                "bitcast-convert's byte order is defined for little-endian hosts");
  VKSPMD_ASSIGN_OR_RETURN(ir::Shape shape, ir::BitcastConvertShape(operand.shape(), type));
  ir::Literal result(shape);
  result.bytes() = operand.bytes();
  return result;
}

absl::StatusOr<ir::Literal> ReducePrecision(const ir::Literal& operand, int64_t exponent_bits,
                                            int64_t mantissa_bits) {
  if (!ir::IsFloat(operand.dtype()) || exponent_bits < 1 || mantissa_bits < 0) {
    return absl::InvalidArgumentError(
        fmt::format("reduce-precision of {} with exponent_bits={} mantissa_bits={}",
                    ir::DTypeName(operand.dtype()), exponent_bits, mantissa_bits));
  }
  ir::Literal result(operand.shape());
  const int exponent = static_cast<int>(std::min<int64_t>(exponent_bits, 64));
  const int mantissa = static_cast<int>(std::min<int64_t>(mantissa_bits, 64));
  const ir::DType type = operand.dtype();
  const int source_mantissa = type == ir::DType::kF16    ? 10
                              : type == ir::DType::kBF16 ? 7
                              : type == ir::DType::kF32  ? 23
                                                         : 52;
  for (int64_t i = 0; i < operand.ElementCount(); ++i) {
    switch (ir::DTypeByteSize(type)) {
      case 2:
        result.Set<uint16_t>(
            i, static_cast<uint16_t>(ReducePrecisionBits(operand.Get<uint16_t>(i), 16,
                                                         source_mantissa, exponent, mantissa)));
        break;
      case 4:
        result.Set<uint32_t>(
            i, static_cast<uint32_t>(ReducePrecisionBits(operand.Get<uint32_t>(i), 32,
                                                         source_mantissa, exponent, mantissa)));
        break;
      default:
        result.Set<uint64_t>(i, ReducePrecisionBits(operand.Get<uint64_t>(i), 64, source_mantissa,
                                                    exponent, mantissa));
        break;
    }
  }
  return result;
}

}  // namespace vkspmd::interp
