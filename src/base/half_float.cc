// Half and bfloat16 conversions (see half_float.h).
#include "src/base/half_float.h"

#include <cmath>
#include <cstring>

namespace vkspmd::base {

uint16_t FloatToHalfBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) {  // inf or nan; keep nan quiet
    return static_cast<uint16_t>(sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u : 0u));
  }
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow
  if (magnitude < 0x38800000u) {  // subnormal half or zero: scale by 2^24 and round
    const float scaled = std::fabs(value) * 16777216.0f;
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled)));
  }
  const uint32_t rounding = 0xfffu + ((magnitude >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((magnitude - 0x38000000u + rounding) >> 13));
}

float HalfBitsToFloat(uint16_t bits) {
  const uint32_t sign = (bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    magnitude = mantissa == 0 ? INFINITY : NAN;
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u), static_cast<int>(exponent) - 25);
  }
  uint32_t result;
  std::memcpy(&result, &magnitude, 4);
  result |= sign;
  float value;
  std::memcpy(&value, &result, 4);
  return value;
}

uint16_t FloatToBFloat16Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

float BFloat16BitsToFloat(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, 4);
  return value;
}

}  // namespace vkspmd::base
