// A VkBuffer bound to a sub-allocation of its device's memory, usable as a storage buffer, a
// uniform texel buffer and a transfer source and destination. Must be destroyed before its mesh
// device.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "src/runtime/memory_allocator.h"
#include "src/runtime/mesh_device.h"

namespace vkspmd::runtime {

class Buffer {
 public:
  // A buffer of `size` bytes (0 is allowed and allocates one byte) on `device`, which is borrowed.
  static absl::StatusOr<std::unique_ptr<Buffer>> Create(MeshDevice& device, uint64_t size,
                                                        MemoryUsage usage = MemoryUsage::kDevice);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  VkBuffer handle() const { return buffer_; }
  // Unique for the life of the process, unlike handles and addresses, which a later buffer may
  // reuse: what caches of recorded commands key on.
  uint64_t serial() const { return serial_; }
  uint64_t size() const { return size_; }
  // The VkBuffer's own size: size() rounded up to kTexelPadding bytes, so that a texel view of
  // 4-element texels (16 bytes at most) covers the last elements.
  uint64_t padded_size() const;
  static constexpr uint64_t kTexelPadding = 16;
  MeshDevice& device() const { return device_; }
  // Host address of the contents when the memory is mapped (zero-copy), else null.
  std::byte* mapped() const { return allocation_.mapped; }
  const MemoryAllocation& allocation() const { return allocation_; }
  // The allocation's accounting tag (see MemoryTag); set_tag moves its bytes to another tag.
  MemoryTag tag() const { return allocation_.tag; }
  void set_tag(MemoryTag tag);

 private:
  Buffer(MeshDevice& device, uint64_t size);

  MeshDevice& device_;
  const uint64_t size_;
  const uint64_t serial_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  MemoryAllocation allocation_;
};

}  // namespace vkspmd::runtime
