// NumPy .npy read and write for literals: f32, f64, s32, u32, bool (and the other integer
// widths), little-endian, C order; other dtypes, Fortran order and big-endian are clear errors.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "src/ir/literal.h"

namespace vkspmd::io {

absl::StatusOr<ir::Literal> ParseNpy(std::string_view bytes);
absl::StatusOr<std::string> SerializeNpy(const ir::Literal& literal);
absl::StatusOr<ir::Literal> ReadNpyFile(const std::string& path);
absl::Status WriteNpyFile(const std::string& path, const ir::Literal& literal);

}  // namespace vkspmd::io
