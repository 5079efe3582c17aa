// How IR element types appear in GLSL: the type a device buffer's values are computed in, and
// narrow integers wrapped back to their width.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "src/ir/dtype.h"

namespace vkspmd::codegen {

// The GLSL type a device buffer of `type` holds ("float", "int", "uint"); error for others.
absl::StatusOr<std::string> GlslType(ir::DType type);

// `value` (a 32-bit GLSL integer) wrapped to `type`'s width: sign-extended from its low bits for
// s8/s16, masked for u8/u16; unchanged for other types.
std::string WrapToWidth(ir::DType type, const std::string& value);

}  // namespace vkspmd::codegen
