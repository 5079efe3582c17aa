// GLSL for bitcast-convert and reduce-precision, the elementwise ops that work on a value's bits.
#pragma once

#include <cstdint>
#include <string>

#include "src/ir/dtype.h"

namespace vkspmd::codegen {

// The expression reinterpreting the bits of `x` (of type `from`, in its compute type, see
// glsl_types.h) as `to`; "" when the pair is not supported on devices. Supported: any pair of
// f32, s32, u32, of f16, bf16, s16, u16, of f64, s64, u64, and s8/u8. A 16-bit float result is
// exactly the value of those bits (xla_f16_value / xla_bf16_value), NaN payloads and signaling NaNs
// included, so it needs no rounding (WrapToWidth) after it; a 16-bit float operand's bits are those
// its store would write (xla_f16_store / xla_bf16_store), so every bit pattern round-trips.
std::string BitcastConvertCode(ir::DType from, ir::DType to, const std::string& x);

// XLA's total order of the float `x` (f32, f16 or bf16, in its compute type) as a signed
// integer expression: its bits (sign-extended for 16-bit types), the magnitude bits of negative
// ones flipped, so that -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN. "" for other types.
std::string TotalOrderKeyCode(ir::DType type, const std::string& x);

// Statements computing XLA's reduce-precision of the local `x` (of the float type `type`: f32,
// f16 or bf16) into the float local `result`, on the element's own bits, bit for bit as the CPU
// reference (interp/bit_ops.h): a NaN stays the input NaN, payload included (or is +inf when no
// mantissa bit is left). For f16 and bf16 the result is exactly a value of the type (no
// WrapToWidth after it). "" for other types.
std::string ReducePrecisionCode(ir::DType type, const std::string& x, const std::string& result,
                                int64_t exponent_bits, int64_t mantissa_bits);

}  // namespace vkspmd::codegen
