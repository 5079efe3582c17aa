// Element types of the IR: names, sizes and classes.
// The table order follows the DType enum.
#include "src/ir/dtype.h"

#include <array>

namespace vkspmd::ir {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  int64_t byte_size;
};

constexpr std::array<DTypeInfo, 13> kDTypes = {{
    {DType::kPred, "pred", 1},
    {DType::kS8, "s8", 1},
    {DType::kS16, "s16", 2},
    {DType::kS32, "s32", 4},
    {DType::kS64, "s64", 8},
    {DType::kU8, "u8", 1},
    {DType::kU16, "u16", 2},
    {DType::kU32, "u32", 4},
    {DType::kU64, "u64", 8},
    {DType::kF16, "f16", 2},
    {DType::kBF16, "bf16", 2},
    {DType::kF32, "f32", 4},
    {DType::kF64, "f64", 8},
}};

}  // namespace

std::string_view DTypeName(DType type) { return kDTypes[static_cast<size_t>(type)].name; }

std::optional<DType> DTypeFromName(std::string_view name) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.name == name) return info.type;
  }
  return std::nullopt;
}

int64_t DTypeByteSize(DType type) { return kDTypes[static_cast<size_t>(type)].byte_size; }

bool IsFloat(DType type) {
  return type == DType::kF16 || type == DType::kBF16 || type == DType::kF32 || type == DType::kF64;
}

bool IsSignedInteger(DType type) {
  return type == DType::kS8 || type == DType::kS16 || type == DType::kS32 || type == DType::kS64;
}

bool IsUnsignedInteger(DType type) {
  return type == DType::kU8 || type == DType::kU16 || type == DType::kU32 || type == DType::kU64;
}

}  // namespace vkspmd::ir
