// GLSL helper functions every generated kernel includes: XLA's semantics for the cases GLSL leaves
// undefined or rounds differently (NaN-propagating max/min, integer division by zero, shifts past
// the width, saturating float→int converts, accurate expm1/log1p, erf).
#pragma once

namespace vkspmd::codegen {

inline constexpr char kGlslPreamble[] = R"(
// Branch-free (CPU drivers run both sides of a divergent branch): ties pick +0 over -0 for max
// and -0 for min by combining the sign bits, and NaN in either operand gives NaN.
float xla_max(float a, float b) {
  float m = a > b ? a : b;
  m = a == b ? uintBitsToFloat(floatBitsToUint(a) & floatBitsToUint(b)) : m;
  return (isnan(a) || isnan(b)) ? uintBitsToFloat(0x7fc00000u) : m;
}
float xla_min(float a, float b) {
  float m = a < b ? a : b;
  m = a == b ? uintBitsToFloat(floatBitsToUint(a) | floatBitsToUint(b)) : m;
  return (isnan(a) || isnan(b)) ? uintBitsToFloat(0x7fc00000u) : m;
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
// Vulkan lets GPUs divide as a * (1 / b) within 2.5 ulp, and only for |b| in [2^-126, 2^126]:
// beyond 2^126 the reciprocal flushes to zero (-inf / 3e38 gave NaN on NVIDIA). Scaling both
// operands by 1/4 there is exact and brings b back into range.
float xla_fdiv(float a, float b) {
  bool huge = abs(b) > 8.50705917e37;
  return (huge ? a * 0.25 : a) / (huge ? b * 0.25 : b);
}
// fmod: the quotient from an inexact division can be one off where a / b is (close to) an
// integer, so the remainder is brought back to fmod's range (|r| < |b|, the sign of a), with a
// zero remainder signed like a.
float xla_rem(float a, float b) {
  if (isinf(b) && !isinf(a)) return a;
  float r = fma(-b, trunc(xla_fdiv(a, b)), a);
  float size = abs(b);
  r = abs(r) >= size ? r - sign(r) * size : r;
  r = (r != 0.0 && (r < 0.0) != (a < 0.0)) ? r + sign(a) * size : r;
  return r == 0.0 ? uintBitsToFloat(floatBitsToUint(a) & 0x80000000u) : r;
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
  // Both forms are computed and one selected, without branches. For |x| >= 0.55 (results of at
  // least 0.5) 1 - 2 / (e^2|x| + 1) keeps full precision; below that, where drivers' tanh loses
  // relative precision (lavapipe's returns 0 for tiny x), Lambert's continued fraction
  // x / (1 + x^2 / (3 + x^2 / (5 + x^2 / (7 + x^2 / 9)))), whose truncation error there is below
  // 1e-8 relative. Large |x| gives e = inf and exactly +-1; NaN stays NaN.
  float a = abs(x);
  float x2 = x * x;
  float small = x / (1.0 + x2 / (3.0 + x2 / (5.0 + x2 / (7.0 + x2 / 9.0))));
  float e = exp(2.0 * a);
  float large = sign(x) * (1.0 - 2.0 / (e + 1.0));
  return a < 0.55 ? small : large;
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

// The same semantics for 64-bit integers, included only in kernels that use them (they need the
// device's shaderInt64 and GL_EXT_shader_explicit_arithmetic_types_int64).
inline constexpr char kGlslPreambleInt64[] = R"(
int64_t xla_max(int64_t a, int64_t b) { return max(a, b); }
int64_t xla_min(int64_t a, int64_t b) { return min(a, b); }
uint64_t xla_max(uint64_t a, uint64_t b) { return max(a, b); }
uint64_t xla_min(uint64_t a, uint64_t b) { return min(a, b); }
int64_t xla_div(int64_t a, int64_t b) {
  if (b == 0l) return -1l;
  if (b == -1l) return 0l - a;
  return a / b;
}
uint64_t xla_div(uint64_t a, uint64_t b) { return b == 0ul ? 0xfffffffffffffffful : a / b; }
int64_t xla_rem(int64_t a, int64_t b) {
  if (b == 0l) return a;
  if (b == -1l) return 0l;
  return a - (a / b) * b;
}
uint64_t xla_rem(uint64_t a, uint64_t b) { return b == 0ul ? a : a % b; }
int64_t xla_shl(int64_t a, int64_t b) { return uint64_t(b) >= 64ul ? 0l : a << b; }
uint64_t xla_shl(uint64_t a, uint64_t b) { return b >= 64ul ? 0ul : a << b; }
int64_t xla_sra(int64_t a, int64_t b) { return uint64_t(b) >= 64ul ? (a < 0l ? -1l : 0l) : a >> b; }
uint64_t xla_sra(uint64_t a, uint64_t b) { return b >= 64ul ? 0ul : a >> b; }
int64_t xla_srl(int64_t a, int64_t b) {
  return uint64_t(b) >= 64ul ? 0l : int64_t(uint64_t(a) >> uint64_t(b));
}
uint64_t xla_srl(uint64_t a, uint64_t b) { return b >= 64ul ? 0ul : a >> b; }
int64_t xla_pow(int64_t base, int64_t exponent) {
  if (exponent < 0l) return base == 1l ? 1l : (base == -1l ? ((exponent & 1l) == 0l ? 1l : -1l) : 0l);
  int64_t result = 1l;
  for (int bit = 0; bit < 64 && (exponent >> bit) != 0l; ++bit) {
    if (((exponent >> bit) & 1l) != 0l) result *= base;
    base *= base;
  }
  return result;
}
uint64_t xla_pow(uint64_t base, uint64_t exponent) {
  uint64_t result = 1ul;
  for (int bit = 0; bit < 64 && (exponent >> bit) != 0ul; ++bit) {
    if (((exponent >> bit) & 1ul) != 0ul) result *= base;
    base *= base;
  }
  return result;
}
int64_t xla_sign(int64_t x) { return x > 0l ? 1l : (x < 0l ? -1l : 0l); }
uint64_t xla_sign(uint64_t x) { return x != 0ul ? 1ul : 0ul; }
int64_t xla_f2l(float x) {
  if (isnan(x)) return 0l;
  if (x <= -9223372036854775808.0) return int64_t(0x8000000000000000ul);
  if (x >= 9223372036854775808.0) return int64_t(0x7ffffffffffffffful);
  return int64_t(x);
}
uint64_t xla_f2ul(float x) {
  if (isnan(x) || x <= 0.0) return 0ul;
  if (x >= 18446744073709551616.0) return 0xfffffffffffffffful;
  return uint64_t(x);
}
)";

// f64 semantics, included only in kernels that use doubles (the device's shaderFloat64). GLSL
// has no double exp, log or trigonometry; the compiler refuses those ops on f64.
inline constexpr char kGlslPreambleFloat64[] = R"(
bool xla_sign_bit(double x) { return (unpackDouble2x32(x).y >> 31) != 0u; }
double xla_max(double a, double b) {
  if (isnan(a) || isnan(b)) return a + b;
  if (a == b) return xla_sign_bit(a) ? b : a;
  return a > b ? a : b;
}
double xla_min(double a, double b) {
  if (isnan(a) || isnan(b)) return a + b;
  if (a == b) return xla_sign_bit(a) ? a : b;
  return a < b ? a : b;
}
// As xla_fdiv and xla_rem for float (an inexact GPU division): 2^1022 is the range's end.
double xla_fdiv(double a, double b) {
  bool huge = abs(b) > 4.49423283715578976e307lf;
  return (huge ? a * 0.25lf : a) / (huge ? b * 0.25lf : b);
}
double xla_rem(double a, double b) {
  if (isinf(b) && !isinf(a)) return a;
  double r = fma(-b, trunc(xla_fdiv(a, b)), a);
  double size = abs(b);
  r = abs(r) >= size ? r - sign(r) * size : r;
  r = (r != 0.0lf && (r < 0.0lf) != (a < 0.0lf)) ? r + sign(a) * size : r;
  return r == 0.0lf ? (xla_sign_bit(a) ? -0.0lf : 0.0lf) : r;
}
double xla_sign(double x) { return (isnan(x) || x == 0.0lf) ? x : (x > 0.0lf ? 1.0lf : -1.0lf); }
int xla_f2s(double x) {
  if (isnan(x)) return 0;
  if (x <= -2147483648.0lf) return int(0x80000000u);
  if (x >= 2147483647.0lf) return 0x7fffffff;
  return int(x);
}
uint xla_f2u(double x) {
  if (isnan(x) || x <= 0.0lf) return 0u;
  if (x >= 4294967295.0lf) return 0xffffffffu;
  return uint(x);
}
)";

// Double to 64-bit integer converts, for kernels that use both.
inline constexpr char kGlslPreambleFloat64Int64[] = R"(
int64_t xla_f2l(double x) {
  if (isnan(x)) return 0l;
  if (x <= -9223372036854775808.0lf) return int64_t(0x8000000000000000ul);
  if (x >= 9223372036854775808.0lf) return int64_t(0x7ffffffffffffffful);
  return int64_t(x);
}
uint64_t xla_f2ul(double x) {
  if (isnan(x) || x <= 0.0lf) return 0ul;
  if (x >= 18446744073709551616.0lf) return 0xfffffffffffffffful;
  return uint64_t(x);
}
)";

// f16 and bf16, included only in kernels that use them: values are computed in float and rounded
// to nearest even after every op by integer bit manipulation, the same steps as the CPU
// reference's ir::FloatToHalfBits / FloatToBFloat16Bits (NaN stays a quiet NaN of the same sign,
// overflow gives infinity). Arithmetic in float then one rounding equals the reference's double
// then float then half for + - * / sqrt, whose f32 results round innocuously twice.
// NaN payloads: a loaded f16 or bf16 keeps every bit in its float (an f16 NaN's 10 mantissa bits
// in a signaling float NaN, see xla_f16_value; a bf16 is the float's top 16 bits), and a store
// writes the bits of a float that is exactly such a value unchanged (xla_*_store), so data moved
// without arithmetic and bitcast-convert keep signaling NaNs and payloads as the reference does.
// Arithmetic quiets a float NaN, and its rounding gives the reference's NaN: f16 sign|0x7e00,
// bf16 the float's top bits with the quiet bit.
inline constexpr char kGlslPreambleHalf[] = R"(
uint xla_f16_bits(float value) {
  uint bits = floatBitsToUint(value);
  uint sign = (bits >> 16) & 0x8000u;
  uint magnitude = bits & 0x7fffffffu;
  if (magnitude >= 0x7f800000u) return sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u : 0u);
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;
  // Subnormal halves and zero: scaled by 2^24 the value is the mantissa, rounded to nearest even.
  if (magnitude < 0x38800000u) return sign | uint(roundEven(abs(value) * 16777216.0));
  return sign | ((magnitude - 0x38000000u + 0xfffu + ((magnitude >> 13) & 1u)) >> 13);
}
float xla_f16_value(uint h) {
  uint exponent = (h >> 10) & 0x1fu;
  uint mantissa = h & 0x3ffu;
  float magnitude = float(mantissa) * uintBitsToFloat(0x33800000u);  // Subnormal: m * 2^-24.
  // An f16 NaN is a signaling float NaN carrying the f16 mantissa (bits 12-21, bit 22 clear):
  // kept by moves, while arithmetic sets the quiet bit, which xla_f16_store then rounds to the
  // reference's quiet NaN.
  if (exponent == 31u) magnitude = uintBitsToFloat(0x7f800000u | (mantissa << 12));
  if (exponent != 0u && exponent != 31u) {
    magnitude = uintBitsToFloat(((exponent + 112u) << 23) | (mantissa << 13));
  }
  return uintBitsToFloat(floatBitsToUint(magnitude) | ((h & 0x8000u) << 16));
}
float xla_round_f16(float x) { return xla_f16_value(xla_f16_bits(x)); }
// The bits of an exact f16 value (NaN payload included) unchanged; else xla_f16_bits.
uint xla_f16_store(float value) {
  uint bits = floatBitsToUint(value);
  if ((bits & 0x7fc00fffu) == 0x7f800000u && (bits & 0x3ff000u) != 0u) {
    return ((bits >> 16) & 0x8000u) | 0x7c00u | ((bits >> 12) & 0x3ffu);
  }
  return xla_f16_bits(value);
}
// An f16 as the reference widens it (ir::HalfBitsToFloat): a NaN is the quiet NaN of its sign.
float xla_f16_quiet(float x) {
  uint bits = floatBitsToUint(x);
  return (bits & 0x7fffffffu) > 0x7f800000u ? uintBitsToFloat((bits & 0x80000000u) | 0x7fc00000u)
                                            : x;
}
uint xla_bf16_bits(float value) {
  uint bits = floatBitsToUint(value);
  if (isnan(value)) return (bits >> 16) | 0x40u;
  return (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
}
float xla_bf16_value(uint b) { return uintBitsToFloat(b << 16); }
float xla_round_bf16(float x) { return xla_bf16_value(xla_bf16_bits(x)); }
// The top bits of an exact bf16 value (NaN payload included) unchanged; else xla_bf16_bits.
uint xla_bf16_store(float value) {
  uint bits = floatBitsToUint(value);
  return (bits & 0xffffu) == 0u ? bits >> 16 : xla_bf16_bits(value);
}
)";

}  // namespace vkspmd::codegen
