// GLSL forms of IR types (see glsl_types.h).
#include "src/codegen/glsl_types.h"

#include "absl/strings/str_cat.h"

namespace vkspmd::codegen {

absl::StatusOr<std::string> GlslType(ir::DType type) {
  switch (type) {
    case ir::DType::kF32:
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

std::string WrapToWidth(ir::DType type, const std::string& value) {
  switch (type) {
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

}  // namespace vkspmd::codegen
