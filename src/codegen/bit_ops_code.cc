// GLSL for bitcast-convert and reduce-precision (see bit_ops_code.h).
#include "src/codegen/bit_ops_code.h"

#include "absl/strings/str_cat.h"

namespace vkspmd::codegen {

using ir::DType;

namespace {

bool Is32Bit(DType type) {
  return type == DType::kF32 || type == DType::kS32 || type == DType::kU32;
}
bool Is8Bit(DType type) { return type == DType::kS8 || type == DType::kU8; }
bool Is64Bit(DType type) {
  return type == DType::kF64 || type == DType::kS64 || type == DType::kU64;
}
bool Is16Bit(DType type) {
  return type == DType::kF16 || type == DType::kBF16 || type == DType::kS16 || type == DType::kU16;
}

// The 16 bits of `x` (of a 16-bit type, in its compute type) as a uint in [0, 0xffff].
std::string Bits16(DType from, const std::string& x) {
  switch (from) {
    case DType::kF16:
      return absl::StrCat("xla_f16_store(", x, ")");
    case DType::kBF16:
      return absl::StrCat("xla_bf16_store(", x, ")");
    default:  // s16 (sign-extended int) or u16 (uint): the low 16 bits.
      return absl::StrCat("(uint(", x, ") & 0xffffu)");
  }
}

// `bits` (a uint in [0, 0xffff]) as a value of the 16-bit type `to`, in its compute type.
std::string From16Bits(DType to, const std::string& bits) {
  switch (to) {
    case DType::kF16:
      return absl::StrCat("xla_f16_value(", bits, ")");
    case DType::kBF16:
      return absl::StrCat("xla_bf16_value(", bits, ")");
    case DType::kS16:
      return absl::StrCat("bitfieldExtract(int(", bits, "), 0, 16)");
    default:
      return bits;
  }
}

}  // namespace

std::string BitcastConvertCode(DType from, DType to, const std::string& x) {
  if (Is16Bit(from) && Is16Bit(to)) {
    if (from == to) return x;
    return From16Bits(to, Bits16(from, x));
  }
  if (Is8Bit(from) && Is8Bit(to)) {
    if (from == to) return x;
    return to == DType::kS8 ? absl::StrCat("bitfieldExtract(int(", x, "), 0, 8)")
                            : absl::StrCat("(uint(", x, ") & 0xffu)");
  }
  if (Is64Bit(from) && Is64Bit(to)) {
    if (from == to) return x;
    if (from == DType::kF64) {
      return absl::StrCat(to == DType::kS64 ? "doubleBitsToInt64(" : "doubleBitsToUint64(", x, ")");
    }
    if (to == DType::kF64) {
      return absl::StrCat(from == DType::kS64 ? "int64BitsToDouble(" : "uint64BitsToDouble(", x,
                          ")");
    }
    return absl::StrCat(to == DType::kS64 ? "int64_t(" : "uint64_t(", x, ")");
  }
  if (!Is32Bit(from) || !Is32Bit(to)) return "";
  if (from == to) return x;
  if (from == DType::kF32) {
    return absl::StrCat(to == DType::kS32 ? "floatBitsToInt(" : "floatBitsToUint(", x, ")");
  }
  if (to == DType::kF32) {
    return absl::StrCat(from == DType::kS32 ? "intBitsToFloat(" : "uintBitsToFloat(", x, ")");
  }
  return absl::StrCat(to == DType::kS32 ? "int(" : "uint(", x, ")");
}

std::string TotalOrderKeyCode(DType type, const std::string& x) {
  if (type == DType::kF32) {
    return absl::StrCat("(floatBitsToInt(", x, ") < 0 ? floatBitsToInt(", x,
                        ") ^ 0x7fffffff : floatBitsToInt(", x, "))");
  }
  if (type != DType::kF16 && type != DType::kBF16) return "";
  const std::string bits = BitcastConvertCode(type, DType::kS16, x);
  return absl::StrCat("(", bits, " < 0 ? ", bits, " ^ 0x7fff : ", bits, ")");
}

std::string ReducePrecisionCode(DType type, const std::string& x, const std::string& result,
                                int64_t exponent_bits, int64_t mantissa_bits) {
  // The source format: total bits, explicit mantissa bits, and the element's bits as a uint.
  int64_t total_bits = 32, source_mantissa_bits = 23;
  std::string input_bits;
  if (type == DType::kF32) {
    input_bits = absl::StrCat("floatBitsToUint(", x, ")");
  } else if (type == DType::kF16 || type == DType::kBF16) {
    total_bits = 16;
    source_mantissa_bits = type == DType::kF16 ? 10 : 7;
    input_bits = Bits16(type, x);
  } else {
    return "";
  }
  const int64_t source_exponent_bits = total_bits - 1 - source_mantissa_bits;
  const uint32_t all_bits = total_bits == 32 ? ~uint32_t{0} : (uint32_t{1} << total_bits) - 1;
  const uint32_t sign_mask = uint32_t{1} << (total_bits - 1);
  const uint32_t exponent_mask = ((uint32_t{1} << source_exponent_bits) - 1)
                                 << source_mantissa_bits;
  const std::string input = result + "_input";
  const std::string bits = result + "_bits";
  std::string code =
      absl::StrCat("  uint ", input, " = ", input_bits, ";\n  uint ", bits, " = ", input, ";\n");
  if (mantissa_bits < source_mantissa_bits) {
    // Round to nearest, ties to even, at the last kept mantissa bit.
    const int64_t shift = source_mantissa_bits - mantissa_bits;
    const uint32_t bias = (uint32_t{1} << (shift - 1)) - 1;
    const uint32_t truncation = ~((uint32_t{1} << shift) - 1) & all_bits;
    absl::StrAppend(&code, "  ", bits, " = (", bits, " + ((", bits, " >> ", shift, "u) & 1u) + ",
                    bias, "u) & ", truncation, "u;\n");
  }
  if (exponent_bits < source_exponent_bits) {
    const uint32_t exponent_bias = (uint32_t{1} << (source_exponent_bits - 1)) - 1;
    const uint32_t reduced_bias = (uint32_t{1} << (exponent_bits - 1)) - 1;
    const uint32_t max_exponent = (exponent_bias + reduced_bias) << source_mantissa_bits;
    const uint32_t min_exponent = (exponent_bias - reduced_bias) << source_mantissa_bits;
    const std::string exponent = result + "_exponent";
    absl::StrAppend(&code, "  uint ", exponent, " = ", bits, " & ", exponent_mask, "u;\n");
    absl::StrAppend(&code, "  ", bits, " = ", exponent, " > ", max_exponent, "u ? ((", bits, " & ",
                    sign_mask, "u) | ", exponent_mask, "u) : (", exponent, " <= ", min_exponent,
                    "u ? (", bits, " & ", sign_mask, "u) : ", bits, ");\n");
  }
  // NaN (by its bits, which fast float math cannot fold away) stays the input NaN, or is +inf
  // when no mantissa bit is left.
  const uint32_t magnitude_mask = all_bits & ~sign_mask;
  absl::StrAppend(&code, "  ", bits, " = (", input, " & ", magnitude_mask, "u) > ", exponent_mask,
                  "u ? ", mantissa_bits > 0 ? input : absl::StrCat(exponent_mask, "u"), " : ", bits,
                  ";\n");
  const std::string value = type == DType::kF32   ? "uintBitsToFloat("
                            : type == DType::kF16 ? "xla_f16_value("
                                                  : "xla_bf16_value(";
  absl::StrAppend(&code, "  float ", result, " = ", value, bits, ");\n");
  return code;
}

}  // namespace vkspmd::codegen
