// Derives the buffer barriers a recorded step needs from the last accesses to each buffer, so a
// command buffer carries exactly the dependencies its steps have (read-after-write,
// write-after-read, write-after-write) instead of a global barrier after every step.
#pragma once

#include <vulkan/vulkan.h>

#include <unordered_map>
#include <vector>

namespace vkspmd::runtime {

struct BufferAccess {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkPipelineStageFlags2 stage = 0;
  bool reads = false;
  bool writes = false;
};

class AccessTracker {
 public:
  // The barriers that must precede a step making `accesses` (one entry per buffer), and records
  // those accesses as the newest.
  std::vector<VkBufferMemoryBarrier2> Step(const std::vector<BufferAccess>& accesses);

 private:
  struct State {
    VkPipelineStageFlags2 write_stage = 0;  // Stage of the last write (0: none recorded).
    VkAccessFlags2 write_access = 0;
    VkPipelineStageFlags2 visible_stages = 0;  // Stages the last write was made visible to.
    VkPipelineStageFlags2 read_stages = 0;     // Reads since the last write.
  };
  std::unordered_map<VkBuffer, State> states_;
};

// Access flags for reading or writing a buffer at `stage` (compute shader or transfer).
VkAccessFlags2 ReadAccessFor(VkPipelineStageFlags2 stage);
VkAccessFlags2 WriteAccessFor(VkPipelineStageFlags2 stage);

}  // namespace vkspmd::runtime
