// bitcast-convert and reduce-precision on the CPU reference.
#pragma once

#include "absl/status/statusor.h"
#include "src/ir/literal.h"

namespace vkspmd::interp {

// The same bytes as `type` (whose width must equal the operand's): f32 <-> s32/u32,
// f16/bf16 <-> s16/u16, f64 <-> s64/u64, and so on.
absl::StatusOr<ir::Literal> BitcastConvert(const ir::Literal& operand, ir::DType type);

// XLA's reduce-precision: each float rounded (to nearest, ties to even) to `mantissa_bits`
// explicit mantissa bits, then set to +-inf above and to +-0 at or below the range of
// `exponent_bits` exponent bits (no denormals); NaN stays NaN (inf when mantissa_bits is 0).
// Computed on the element's own bits, for f16, bf16, f32 and f64 alike.
absl::StatusOr<ir::Literal> ReducePrecision(const ir::Literal& operand, int64_t exponent_bits,
                                            int64_t mantissa_bits);

// The same on one f32 and one f64 value.
float ReducePrecision(float value, int exponent_bits, int mantissa_bits);
double ReducePrecision(double value, int exponent_bits, int mantissa_bits);

}  // namespace vkspmd::interp
