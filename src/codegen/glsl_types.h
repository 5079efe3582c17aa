// How IR element types appear in GLSL: the type a device buffer's values are computed in, narrow
// integers wrapped back to their width, 16-bit floats rounded to their precision, and how values
// are loaded from and stored to a buffer's storage type.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "src/ir/dtype.h"
#include "src/ir/literal.h"

namespace vkspmd::codegen {

// The GLSL type values of `type` are computed in ("float", "int", "uint"); error for others.
// f16 and bf16 are computed in float (and stored as 16 bits, see StorageType): accumulators of
// dots and reductions over them are f32 with no special case.
absl::StatusOr<std::string> GlslType(ir::DType type);

// Whether `type` is a 16-bit float (f16, bf16): computed in float, rounded after every op.
bool IsHalfFloat(ir::DType type);

// `value` (a 32-bit GLSL integer) wrapped to `type`'s width: sign-extended from its low bits for
// s8/s16, masked for u8/u16; for f16/bf16 (a GLSL float) rounded to nearest even at that type's
// precision (exactly as the CPU reference's ir::FloatToHalfBits / FloatToBFloat16Bits, NaN and
// overflow to infinity included); unchanged for other types.
std::string WrapToWidth(ir::DType type, const std::string& value);
// The 4-vector of a 32-bit GLSL scalar type ("float" -> "vec4", "int" -> "ivec4", "uint" ->
// "uvec4"); empty for other types (double, 64-bit integers).
std::string Vec4Type(const std::string& glsl_type);

// Element `index` of `literal` as a GLSL constant of its compute type, exact: floats from their
// bits (NaN payloads, infinities and -0 included; f16/bf16 as the f32 of their value), integers
// in full.
std::string GlslLiteral(const ir::Literal& literal, int64_t index);
// WrapToWidth, except that a float which is already exactly an f16/bf16 value, a NaN with any
// payload included, is kept bit for bit (for values that may be moved unchanged: a bitcast's
// result keeps a signaling NaN the reference keeps).
std::string WrapToWidthKeepingBits(ir::DType type, const std::string& value);

// The element type of a buffer of `type` whose elements take `element_bytes` in memory: the
// compute type, or the narrow type its elements have in memory. 16-bit floats live in memory as
// uint16_t bit patterns (converted by the kernel, never by the driver, whose rounding of a float
// to half is not specified); with 4 bytes (partial sums) they are plain floats.
std::string StorageType(ir::DType type, uint32_t element_bytes);
// GLSL converting `stored` (an element of StorageType) to the compute type, and back.
std::string LoadFromStorage(ir::DType type, uint32_t element_bytes, const std::string& stored);
std::string StoreToStorage(ir::DType type, uint32_t element_bytes, const std::string& value);

}  // namespace vkspmd::codegen
