// GLSL forms of IR types (see glsl_types.h).
#include "src/codegen/glsl_types.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace vkspmd::codegen {

absl::StatusOr<std::string> GlslType(ir::DType type) {
  switch (type) {
    case ir::DType::kF32:
    case ir::DType::kF16:
    case ir::DType::kBF16:
      return std::string("float");
    case ir::DType::kS8:
    case ir::DType::kS16:
    case ir::DType::kS32:
      return std::string("int");
    case ir::DType::kU8:
    case ir::DType::kU16:
    case ir::DType::kU32:
    case ir::DType::kPred:
      return std::string("uint");
    case ir::DType::kS64:
      return std::string("int64_t");
    case ir::DType::kU64:
      return std::string("uint64_t");
    case ir::DType::kF64:
      return std::string("double");
    default:
      return absl::UnimplementedError(absl::StrCat("type ", std::string(ir::DTypeName(type)),
                                                   " is not supported on devices yet"));
  }
}

bool IsHalfFloat(ir::DType type) { return type == ir::DType::kF16 || type == ir::DType::kBF16; }

std::string WrapToWidth(ir::DType type, const std::string& value) {
  switch (type) {
    case ir::DType::kF16:
      return absl::StrCat("xla_round_f16(", value, ")");
    case ir::DType::kBF16:
      return absl::StrCat("xla_round_bf16(", value, ")");
    case ir::DType::kS8:
      return absl::StrCat("bitfieldExtract(int(", value, "), 0, 8)");
    case ir::DType::kS16:
      return absl::StrCat("bitfieldExtract(int(", value, "), 0, 16)");
    case ir::DType::kU8:
      return absl::StrCat("((", value, ") & 0xffu)");
    case ir::DType::kU16:
      return absl::StrCat("((", value, ") & 0xffffu)");
    default:
      return value;
  }
}

std::string Vec4Type(const std::string& glsl_type) {
  if (glsl_type == "float") return "vec4";
  if (glsl_type == "int") return "ivec4";
  if (glsl_type == "uint") return "uvec4";
  return "";
}

std::string WrapToWidthKeepingBits(ir::DType type, const std::string& value) {
  switch (type) {
    case ir::DType::kF16:
      return absl::StrCat("xla_f16_value(xla_f16_store(", value, "))");
    case ir::DType::kBF16:
      return absl::StrCat("xla_bf16_value(xla_bf16_store(", value, "))");
    default:
      return WrapToWidth(type, value);
  }
}

std::string StorageType(ir::DType type, uint32_t element_bytes) {
  const bool is_signed = ir::IsSignedInteger(type);
  if (element_bytes == 1) return is_signed ? "int8_t" : "uint8_t";
  if (element_bytes == 2) return is_signed ? "int16_t" : "uint16_t";
  return *GlslType(type);
}

std::string LoadFromStorage(ir::DType type, uint32_t element_bytes, const std::string& stored) {
  if (IsHalfFloat(type) && element_bytes == 2) {
    return absl::StrCat(type == ir::DType::kF16 ? "xla_f16_value" : "xla_bf16_value", "(uint(",
                        stored, "))");
  }
  return absl::StrCat(*GlslType(type), "(", stored, ")");
}

std::string StoreToStorage(ir::DType type, uint32_t element_bytes, const std::string& value) {
  if (IsHalfFloat(type) && element_bytes == 2) {
    return absl::StrCat("uint16_t(", type == ir::DType::kF16 ? "xla_f16_store" : "xla_bf16_store",
                        "(", value, "))");
  }
  return absl::StrCat(StorageType(type, element_bytes), "(", value, ")");
}

std::string GlslLiteral(const ir::Literal& literal, int64_t index) {
  switch (literal.dtype()) {
    case ir::DType::kS8:
    case ir::DType::kS16:
      return absl::StrCat("int(", literal.GetAsInt64(index), ")");
    case ir::DType::kU8:
    case ir::DType::kU16:
      return absl::StrCat(literal.GetAsUint64(index), "u");
    case ir::DType::kS64:
      return absl::StrFormat("int64_t(0x%016xul)", literal.GetAsUint64(index));
    case ir::DType::kU64:
      return absl::StrFormat("0x%016xul", literal.GetAsUint64(index));
    case ir::DType::kF64: {
      const uint64_t bits = literal.Get<uint64_t>(index);
      return absl::StrFormat("packDouble2x32(uvec2(0x%08xu, 0x%08xu))", bits & 0xffffffffu,
                             bits >> 32);
    }
    case ir::DType::kF32:
      return absl::StrFormat("uintBitsToFloat(0x%08xu)", literal.Get<uint32_t>(index));
    case ir::DType::kF16:
    case ir::DType::kBF16: {  // Computed in float: the value's exact f32 bits.
      const float value = static_cast<float>(literal.GetAsDouble(index));
      uint32_t bits;
      std::memcpy(&bits, &value, sizeof(bits));
      return absl::StrFormat("uintBitsToFloat(0x%08xu)", bits);
    }
    case ir::DType::kS32:
      return absl::StrFormat("int(0x%08xu)", literal.Get<uint32_t>(index));
    case ir::DType::kU32:
      return absl::StrFormat("0x%08xu", literal.Get<uint32_t>(index));
    default:  // pred
      return literal.GetAsUint64(index) != 0 ? "1u" : "0u";
  }
}

}  // namespace vkspmd::codegen
