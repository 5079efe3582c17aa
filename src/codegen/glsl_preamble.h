// GLSL helper functions every generated kernel includes: XLA's semantics for the cases GLSL leaves
// undefined or rounds differently (NaN-propagating max/min, integer division by zero, shifts past
// the width, saturating float→int converts, accurate expm1/log1p, erf).
#pragma once

namespace vkspmd::codegen {

inline constexpr char kGlslPreamble[] = R"(
float xla_max(float a, float b) {
  if (isnan(a) || isnan(b)) return uintBitsToFloat(0x7fc00000u);
  if (a == b) return (floatBitsToUint(a) >> 31) != 0u ? b : a;
  return a > b ? a : b;
}
float xla_min(float a, float b) {
  if (isnan(a) || isnan(b)) return uintBitsToFloat(0x7fc00000u);
  if (a == b) return (floatBitsToUint(a) >> 31) != 0u ? a : b;
  return a < b ? a : b;
}
int xla_max(int a, int b) { return max(a, b); }
int xla_min(int a, int b) { return min(a, b); }
uint xla_max(uint a, uint b) { return max(a, b); }
uint xla_min(uint a, uint b) { return min(a, b); }
int xla_div(int a, int b) {
  if (b == 0) return -1;
  if (b == -1) return 0 - a;
  return a / b;
}
uint xla_div(uint a, uint b) { return b == 0u ? 0xffffffffu : a / b; }
int xla_rem(int a, int b) {
  if (b == 0) return a;
  if (b == -1) return 0;
  return a - (a / b) * b;
}
uint xla_rem(uint a, uint b) { return b == 0u ? a : a % b; }
float xla_rem(float a, float b) {
  if (isinf(b) && !isinf(a)) return a;
  float q = a / b;
  return a - b * trunc(q);
}
int xla_shl(int a, int b) { return uint(b) >= 32u ? 0 : a << b; }
uint xla_shl(uint a, uint b) { return b >= 32u ? 0u : a << b; }
int xla_sra(int a, int b) { return uint(b) >= 32u ? (a < 0 ? -1 : 0) : a >> b; }
uint xla_sra(uint a, uint b) { return b >= 32u ? 0u : a >> b; }
int xla_srl(int a, int b) { return uint(b) >= 32u ? 0 : int(uint(a) >> uint(b)); }
uint xla_srl(uint a, uint b) { return b >= 32u ? 0u : a >> b; }
int xla_pow(int base, int exponent) {
  if (exponent < 0) return base == 1 ? 1 : (base == -1 ? ((exponent & 1) == 0 ? 1 : -1) : 0);
  int result = 1;
  for (int bit = 0; bit < 32 && (exponent >> bit) != 0; ++bit) {
    if (((exponent >> bit) & 1) != 0) result *= base;
    base *= base;
  }
  return result;
}
uint xla_pow(uint base, uint exponent) {
  uint result = 1u;
  for (uint bit = 0u; bit < 32u && (exponent >> bit) != 0u; ++bit) {
    if (((exponent >> bit) & 1u) != 0u) result *= base;
    base *= base;
  }
  return result;
}
float xla_pow(float a, float b) {
  if (b == 0.0) return 1.0;
  if (a == 1.0) return 1.0;
  if (isnan(a) || isnan(b)) return uintBitsToFloat(0x7fc00000u);
  if (a < 0.0) {
    if (trunc(b) != b) return uintBitsToFloat(0x7fc00000u);
    float magnitude = pow(-a, b);
    return mod(b, 2.0) == 1.0 ? -magnitude : magnitude;
  }
  if (a == 0.0) return b > 0.0 ? 0.0 : uintBitsToFloat(0x7f800000u);
  return pow(a, b);
}
float xla_sign(float x) { return (isnan(x) || x == 0.0) ? x : (x > 0.0 ? 1.0 : -1.0); }
int xla_sign(int x) { return x > 0 ? 1 : (x < 0 ? -1 : 0); }
uint xla_sign(uint x) { return x != 0u ? 1u : 0u; }
float xla_expm1(float x) {
  float u = exp(x);
  if (u == 1.0) return x;
  float um1 = u - 1.0;
  if (um1 == -1.0) return -1.0;
  if (isinf(u)) return u;
  return um1 * x / log(u);
}
float xla_log1p(float x) {
  float u = 1.0 + x;
  if (u == 1.0) return x;
  if (isinf(u)) return u;
  return log(u) * x / (u - 1.0);
}
float xla_logistic(float x) { return 1.0 / (1.0 + exp(-x)); }
float xla_erf(float x) {
  // Abramowitz and Stegun 7.1.26 refined with one Newton step on erf's derivative is not needed
  // for f32 tolerances: the series below has absolute error below 1.2e-7.
  float t = 1.0 / (1.0 + 0.5 * abs(x));
  float y = 1.0 - t * exp(-x * x - 1.26551223 + t * (1.00002368 + t * (0.37409196 +
            t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 +
            t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0.0 ? y : -y;
}
float xla_tanh(float x) {
  // One exponential instead of the driver's tanh (faster on lavapipe) where 1 - 2 / (e^2x + 1)
  // keeps full precision (|x| >= 0.55, the result at least 0.5); below that drivers' tanh loses
  // relative precision (lavapipe's returns 0 for tiny x), so a series near 0 and an accurate
  // expm1 in between.
  float a = abs(x);
  if (a > 9.0) return sign(x);
  if (a < 0.1) {
    float x2 = x * x;  // Series to x^5: error below 1e-8 relative here.
    return x * (1.0 - x2 * (1.0 / 3.0 - x2 * (2.0 / 15.0)));
  }
  if (a < 0.55) {
    float m = xla_expm1(2.0 * a);
    return sign(x) * (m / (m + 2.0));
  }
  float e = exp(2.0 * a);
  return sign(x) * (1.0 - 2.0 / (e + 1.0));
}
int xla_f2s(float x) {
  if (isnan(x)) return 0;
  if (x <= -2147483648.0) return int(0x80000000u);
  if (x >= 2147483648.0) return 0x7fffffff;
  return int(x);
}
uint xla_f2u(float x) {
  if (isnan(x) || x <= 0.0) return 0u;
  if (x >= 4294967296.0) return 0xffffffffu;
  return uint(x);
}
)";

}  // namespace vkspmd::codegen
