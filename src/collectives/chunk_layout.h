// Re-layout of row-major arrays for collectives along a dim: XLA's all-gather, reduce-scatter and
// all-to-all chunk along any dim, the communicator along the first; chunks along a later dim are
// not contiguous in row-major order, so they are packed chunk-major first (and unpacked after).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace vkspmd::collectives {

// Reorders a row-major array of `dims` (`element_bytes` each) so that its `n` equal chunks along
// `dim` are each contiguous, in chunk order; Unpack is the inverse.
void PackChunks(std::span<const std::byte> bytes, std::span<std::byte> packed,
                const std::vector<int64_t>& dims, int64_t dim, int64_t n, size_t element_bytes);
void UnpackChunks(std::span<const std::byte> packed, std::span<std::byte> bytes,
                  const std::vector<int64_t>& dims, int64_t dim, int64_t n, size_t element_bytes);
// Whether the chunks along `dim` already are contiguous (every dim before it has length 1).
bool ChunksAreContiguous(const std::vector<int64_t>& dims, int64_t dim);

}  // namespace vkspmd::collectives
