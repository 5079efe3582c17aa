// Buffer creation on sub-allocated memory.
#include "src/runtime/buffer.h"

#include <algorithm>
#include <atomic>

#include "absl/strings/str_cat.h"
#include "src/runtime/vulkan_status.h"

namespace vkspmd::runtime {

Buffer::Buffer(MeshDevice& device, uint64_t size)
    : device_(device), size_(size), serial_([] {
        static std::atomic<uint64_t> next{1};
        return next.fetch_add(1, std::memory_order_relaxed);
      }()) {}

namespace {

// What Buffer::padded_size says; saturates instead of wrapping (such sizes fail the device's
// allocation limit first).
uint64_t PaddedSize(uint64_t size) {
  constexpr uint64_t kPadding = Buffer::kTexelPadding;
  if (size > UINT64_MAX - kPadding) return UINT64_MAX;
  return (std::max<uint64_t>(size, 1) + kPadding - 1) / kPadding * kPadding;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Buffer>> Buffer::Create(MeshDevice& device, uint64_t size,
                                                       MemoryUsage usage) {
  if (absl::Status usable = device.device().CheckUsable(); !usable.ok()) return usable;
  const PhysicalDeviceInfo& limits = device.device().physical_device();
  // The padding counts (size is checked first, so rounding it up cannot overflow).
  if (limits.max_memory_allocation_size != 0 &&
      (size > limits.max_memory_allocation_size ||
       PaddedSize(size) > limits.max_memory_allocation_size)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot create a buffer of ", size, " bytes (", PaddedSize(size), " with its padding) on ",
        device.label(), ": the device's largest allocation is ", limits.max_memory_allocation_size,
        " bytes"));
  }
  std::unique_ptr<Buffer> buffer(new Buffer(device, size));
  const DeviceFunctions& vk = device.functions();
  VkBufferCreateInfo create_info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  create_info.size = buffer->padded_size();
  create_info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                      VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                      VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  create_info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VKSPMD_VK_RETURN_IF_ERROR_ON(
      device.device(), device.label(),
      vk.vkCreateBuffer(device.handle(), &create_info, nullptr, &buffer->buffer_));
  VkMemoryRequirements requirements;
  vk.vkGetBufferMemoryRequirements(device.handle(), buffer->buffer_, &requirements);
  requirements.alignment =
      std::max<uint64_t>(requirements.alignment,
                         device.device().physical_device().min_storage_buffer_offset_alignment);
  absl::StatusOr<MemoryAllocation> allocation =
      device.device().memory().Allocate(requirements, usage);
  if (!allocation.ok()) return allocation.status();  // The destructor destroys the VkBuffer.
  buffer->allocation_ = *allocation;
  VKSPMD_VK_RETURN_IF_ERROR_ON(device.device(), device.label(),
                               vk.vkBindBufferMemory(device.handle(), buffer->buffer_,
                                                     allocation->memory, allocation->offset));
  return buffer;
}

uint64_t Buffer::padded_size() const { return PaddedSize(size_); }

void Buffer::set_tag(MemoryTag tag) { device_.device().memory().Retag(allocation_, tag); }

Buffer::~Buffer() {
  if (device_.device().must_not_free()) return;
  if (buffer_ != VK_NULL_HANDLE)
    device_.functions().vkDestroyBuffer(device_.handle(), buffer_, nullptr);
  device_.device().memory().Free(allocation_);
}

}  // namespace vkspmd::runtime
