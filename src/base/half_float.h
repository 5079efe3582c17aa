// IEEE half (f16) and bfloat16 conversions with round-to-nearest-even: the one definition the CPU
// reference (ir::Literal), the host collectives and tests share, so all round alike.
#pragma once

#include <cstdint>

namespace vkspmd::base {

// Overflow gives infinity; NaN stays a quiet NaN of the same sign.
uint16_t FloatToHalfBits(float value);
float HalfBitsToFloat(uint16_t bits);
uint16_t FloatToBFloat16Bits(float value);
float BFloat16BitsToFloat(uint16_t bits);

}  // namespace vkspmd::base
