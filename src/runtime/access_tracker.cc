// Per-buffer hazard tracking.
#include "src/runtime/access_tracker.h"

namespace vkspmd::runtime {

// Shaders read a buffer as a storage buffer or as a uniform texel buffer (a sampled read): the
// shader-read access covers both.
VkAccessFlags2 ReadAccessFor(VkPipelineStageFlags2 stage) {
  return stage == VK_PIPELINE_STAGE_2_TRANSFER_BIT ? VK_ACCESS_2_TRANSFER_READ_BIT
                                                   : VK_ACCESS_2_SHADER_READ_BIT;
}

VkAccessFlags2 WriteAccessFor(VkPipelineStageFlags2 stage) {
  return stage == VK_PIPELINE_STAGE_2_TRANSFER_BIT ? VK_ACCESS_2_TRANSFER_WRITE_BIT
                                                   : VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT;
}

std::vector<VkBufferMemoryBarrier2> AccessTracker::Step(const std::vector<BufferAccess>& accesses) {
  std::vector<VkBufferMemoryBarrier2> barriers;
  for (const BufferAccess& access : accesses) {
    State& state = states_[access.buffer];
    VkBufferMemoryBarrier2 barrier{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER_2};
    barrier.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    barrier.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    barrier.buffer = access.buffer;
    barrier.offset = 0;
    barrier.size = VK_WHOLE_SIZE;
    barrier.dstStageMask = access.stage;
    barrier.dstAccessMask = (access.reads ? ReadAccessFor(access.stage) : 0) |
                            (access.writes ? WriteAccessFor(access.stage) : 0);
    const bool needs_visibility =
        state.write_stage != 0 && (state.visible_stages & access.stage) != access.stage;
    if (needs_visibility) {
      // Read-after-write (or write-after-write) at a stage the last write is not yet visible to.
      barrier.srcStageMask = state.write_stage | state.read_stages;
      barrier.srcAccessMask = state.write_access;
      barriers.push_back(barrier);
      state.visible_stages |= access.stage;
    } else if (access.writes && (state.read_stages != 0 || state.write_stage != 0)) {
      // Write-after-read, or a second write after the first was made visible: order them.
      barrier.srcStageMask = state.read_stages | state.write_stage;
      barrier.srcAccessMask = state.write_stage != 0 ? state.write_access : 0;
      barriers.push_back(barrier);
    }
    if (access.writes) {
      state.write_stage = access.stage;
      state.write_access = WriteAccessFor(access.stage);
      state.visible_stages = 0;
      state.read_stages = 0;
    } else if (access.reads) {
      state.read_stages |= access.stage;
    }
  }
  return barriers;
}

}  // namespace vkspmd::runtime
