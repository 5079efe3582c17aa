// GLSL for bitcast-convert and reduce-precision, the elementwise ops that work on a value's bits.
#pragma once

#include <cstdint>
#include <string>

#include "src/ir/dtype.h"

namespace vkspmd::codegen {

// The expression reinterpreting the bits of `x` (of type `from`) as `to`; "" when the pair is
// not supported on devices (only 32-bit types are: f32, s32, u32).
std::string BitcastConvertCode(ir::DType from, ir::DType to, const std::string& x);

// Statements computing XLA's reduce-precision of the f32 local `x` into the float local
// `result`, bit for bit as the CPU reference (interp/bit_ops.h).
std::string ReducePrecisionCode(const std::string& x, const std::string& result,
                                int64_t exponent_bits, int64_t mantissa_bits);

}  // namespace vkspmd::codegen
