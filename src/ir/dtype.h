// Element types of the IR (HLO primitive types) and their text names, sizes and classes.
// f16/bf16 are stored as their 16-bit patterns and computed in float, rounded after every op.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace vkspmd::ir {

enum class DType : uint8_t {
  kPred,
  kS8,
  kS16,
  kS32,
  kS64,
  kU8,
  kU16,
  kU32,
  kU64,
  kF16,
  kBF16,
  kF32,
  kF64,
};

// The HLO spelling ("f32", "pred", ...).
std::string_view DTypeName(DType type);
// Parses an HLO spelling; nullopt for anything else (including tuple and token).
std::optional<DType> DTypeFromName(std::string_view name);
// Size of one element in bytes (pred is one byte).
int64_t DTypeByteSize(DType type);

bool IsFloat(DType type);
bool IsSignedInteger(DType type);
bool IsUnsignedInteger(DType type);
inline bool IsInteger(DType type) { return IsSignedInteger(type) || IsUnsignedInteger(type); }

}  // namespace vkspmd::ir
