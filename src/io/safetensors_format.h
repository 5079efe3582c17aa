// What the safetensors writer and reader share: the limits, the metadata key, the dtype names
// and the byte size of a shape, checked against overflow.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/dtype.h"

namespace vkspmd::io {

inline constexpr std::string_view kMetadataKey = "__metadata__";
// The Hugging Face reader's limit: a bigger header is taken as a hostile file.
inline constexpr uint64_t kMaxHeaderSize = 100'000'000;
// Offsets and sizes must fit off_t and int64_t element counts.
inline constexpr uint64_t kMaxDataSize = std::numeric_limits<int64_t>::max();

// The ir type of a safetensors dtype name: Unimplemented for a type of the format that the ir
// lacks (float8, complex), InvalidArgument for a name the format does not define.
absl::StatusOr<ir::DType> SafetensorsDTypeFromName(std::string_view name);

// The bytes of a tensor of `type` and `shape`; an error for a negative dim or more than 2^63 bytes.
absl::StatusOr<uint64_t> TensorByteSize(ir::DType type, const std::vector<int64_t>& shape);

}  // namespace vkspmd::io
