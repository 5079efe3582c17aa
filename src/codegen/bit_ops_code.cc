// GLSL for bitcast-convert and reduce-precision (see bit_ops_code.h).
#include "src/codegen/bit_ops_code.h"

#include "absl/strings/str_cat.h"

namespace vkspmd::codegen {

using ir::DType;

std::string BitcastConvertCode(DType from, DType to, const std::string& x) {
  auto supported = [](DType type) {
    return type == DType::kF32 || type == DType::kS32 || type == DType::kU32;
  };
  if (!supported(from) || !supported(to)) return "";
  if (from == to) return x;
  if (from == DType::kF32) {
    return absl::StrCat(to == DType::kS32 ? "floatBitsToInt(" : "floatBitsToUint(", x, ")");
  }
  if (to == DType::kF32) {
    return absl::StrCat(from == DType::kS32 ? "intBitsToFloat(" : "uintBitsToFloat(", x, ")");
  }
  return absl::StrCat(to == DType::kS32 ? "int(" : "uint(", x, ")");
}

std::string ReducePrecisionCode(const std::string& x, const std::string& result,
                                int64_t exponent_bits, int64_t mantissa_bits) {
  constexpr int64_t kMantissaBits = 23;
  constexpr int64_t kExponentBits = 8;
  const std::string bits = result + "_bits";
  std::string code = absl::StrCat("  uint ", bits, " = floatBitsToUint(", x, ");\n");
  if (mantissa_bits < kMantissaBits) {
    // Round to nearest, ties to even, at the last kept mantissa bit.
    const int64_t shift = kMantissaBits - mantissa_bits;
    const uint32_t bias = (uint32_t{1} << (shift - 1)) - 1;
    const uint32_t truncation = ~((uint32_t{1} << shift) - 1);
    absl::StrAppend(&code, "  ", bits, " = (", bits, " + ((", bits, " >> ", shift, "u) & 1u) + ",
                    bias, "u) & ", truncation, "u;\n");
  }
  if (exponent_bits < kExponentBits) {
    const uint32_t exponent_bias = 127;
    const uint32_t reduced_bias = (uint32_t{1} << (exponent_bits - 1)) - 1;
    const uint32_t max_exponent = (exponent_bias + reduced_bias) << kMantissaBits;
    const uint32_t min_exponent = (exponent_bias - reduced_bias) << kMantissaBits;
    const std::string exponent = result + "_exponent";
    absl::StrAppend(&code, "  uint ", exponent, " = ", bits, " & 2139095040u;\n");
    absl::StrAppend(&code, "  ", bits, " = ", exponent, " > ", max_exponent, "u ? ((", bits,
                    " & 2147483648u) | 2139095040u) : (", exponent, " <= ", min_exponent, "u ? (",
                    bits, " & 2147483648u) : ", bits, ");\n");
  }
  // NaN (by its bits, which fast float math cannot fold away) stays NaN, or is +inf when no
  // mantissa bit is left.
  absl::StrAppend(
      &code, "  float ", result, " = (floatBitsToUint(", x, ") & 2147483647u) > 2139095040u ? ",
      mantissa_bits > 0 ? x : "uintBitsToFloat(2139095040u)", " : uintBitsToFloat(", bits, ");\n");
  return code;
}

}  // namespace vkspmd::codegen
