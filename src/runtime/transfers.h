// Moving bytes between the host and a mesh device's buffers: a plain memcpy where the buffer is
// mapped (lavapipe, resizable-BAR GPUs), otherwise through host-visible staging buffers in chunks.
// Reads of uncached mapped memory (a GPU's BAR) larger than kUncachedReadBytes also go through
// staging: the host reads such memory at tens of MB/s, a copy runs at PCIe speed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "src/runtime/buffer.h"

namespace vkspmd::runtime {

// Writes `data` into `destination` at `offset`.
absl::Status Upload(std::span<const std::byte> data, Buffer& destination, uint64_t offset = 0);
// Reads `data.size()` bytes of `source` from `offset`.
absl::Status Download(const Buffer& source, uint64_t offset, std::span<std::byte> data);
// Copies `size` bytes between two buffers of the same mesh device, and waits.
absl::Status CopyWithinDevice(const Buffer& source, uint64_t source_offset, Buffer& destination,
                              uint64_t destination_offset, uint64_t size);

// Staging transfers move at most this many bytes per submission.
inline constexpr uint64_t kStagingChunkBytes = 16ull << 20;
// Below this, reading uncached mapped memory in place beats a submitted copy and its wait.
inline constexpr uint64_t kUncachedReadBytes = 16ull << 10;

// Whether the host may read `size` bytes of `buffer` in place through its mapping.
inline bool HostReadable(const Buffer& buffer, uint64_t size) {
  return buffer.mapped() != nullptr &&
         (buffer.allocation().host_cached || size <= kUncachedReadBytes);
}

}  // namespace vkspmd::runtime
