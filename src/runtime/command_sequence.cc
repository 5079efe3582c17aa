// Recording steps into a reusable command buffer, and running it.
#include "src/runtime/command_sequence.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/runtime/access_tracker.h"
#include "src/runtime/vulkan_status.h"

namespace vkspmd::runtime {
namespace {

uint64_t ResolvedSize(const BufferRange& range) {
  return range.size == VK_WHOLE_SIZE ? range.buffer->size() - range.offset : range.size;
}

// Bytes per texel of the uniform texel buffers' formats (kTexelReadFormats): 4 elements each.
uint64_t TexelBytes(VkFormat format) {
  switch (format) {
    case VK_FORMAT_R16G16B16A16_SINT:
    case VK_FORMAT_R16G16B16A16_UINT:
      return 8;
    case VK_FORMAT_R8G8B8A8_SINT:
    case VK_FORMAT_R8G8B8A8_UINT:
      return 4;
    default:
      return 16;
  }
}

// A texel view's range: the bound bytes rounded up to whole texels, at least one (the buffer's
// padding holds the last texel's unused elements, and an empty buffer's one texel; see
// Buffer::padded_size).
uint64_t TexelRange(const BufferRange& range, VkFormat format) {
  const uint64_t texel = TexelBytes(format);
  return std::max<uint64_t>((ResolvedSize(range) + texel - 1) / texel * texel, texel);
}

// One access per distinct buffer of a step, merging bindings of the same buffer.
std::vector<BufferAccess> MergeAccesses(const std::vector<BufferAccess>& accesses) {
  std::map<VkBuffer, BufferAccess> merged;
  for (const BufferAccess& access : accesses) {
    BufferAccess& entry = merged[access.buffer];
    entry.buffer = access.buffer;
    entry.stage = access.stage;
    entry.reads |= access.reads;
    entry.writes |= access.writes;
  }
  std::vector<BufferAccess> result;
  for (const auto& [buffer, access] : merged) result.push_back(access);
  return result;
}

void GlobalBarrier(const DeviceFunctions& vk, VkCommandBuffer command_buffer,
                   VkPipelineStageFlags2 source_stage, VkAccessFlags2 source_access,
                   VkPipelineStageFlags2 destination_stage, VkAccessFlags2 destination_access) {
  VkMemoryBarrier2 barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER_2};
  barrier.srcStageMask = source_stage;
  barrier.srcAccessMask = source_access;
  barrier.dstStageMask = destination_stage;
  barrier.dstAccessMask = destination_access;
  VkDependencyInfo dependency{VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
  dependency.memoryBarrierCount = 1;
  dependency.pMemoryBarriers = &barrier;
  vk.vkCmdPipelineBarrier2(command_buffer, &dependency);
}

}  // namespace

absl::Status CommandRecorder::CheckRange(const BufferRange& range, const char* what,
                                         bool storage) const {
  if (range.buffer == nullptr) return absl::InvalidArgumentError(absl::StrCat(what, " is null"));
  if (range.buffer->device().handle() != device_.handle()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " belongs to ", range.buffer->device().label(), ", not to ", device_.label()));
  }
  uint64_t size = range.size == VK_WHOLE_SIZE
                      ? range.buffer->size() - std::min(range.offset, range.buffer->size())
                      : range.size;
  if (range.offset > range.buffer->size() || size > range.buffer->size() - range.offset) {
    return absl::OutOfRangeError(absl::StrCat(what, " [", range.offset, ", +", size,
                                              ") exceeds its buffer of ", range.buffer->size(),
                                              " bytes"));
  }
  const PhysicalDeviceInfo& limits = device_.device().physical_device();
  if (storage && size > limits.max_storage_buffer_range) {
    return absl::OutOfRangeError(absl::StrCat(what, " binds ", size, " bytes; ", limits.name,
                                              " binds at most ", limits.max_storage_buffer_range,
                                              " (maxStorageBufferRange): bind a sub-range"));
  }
  if (storage && range.offset % limits.min_storage_buffer_offset_alignment != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " offset ", range.offset, " is not a multiple of minStorageBufferOffsetAlignment ",
        limits.min_storage_buffer_offset_alignment));
  }
  return absl::OkStatus();
}

absl::Status CommandRecorder::CheckTexelRange(const BufferRange& range, VkFormat format,
                                              const std::string& what) const {
  const PhysicalDeviceInfo& limits = device_.device().physical_device();
  const uint64_t bytes = TexelRange(range, format);
  if (range.offset + bytes > range.buffer->padded_size()) {
    return absl::OutOfRangeError(absl::StrCat(what, " reads texels [", range.offset, ", +", bytes,
                                              ") past its buffer's ", range.buffer->padded_size(),
                                              " bytes"));
  }
  if (bytes / TexelBytes(format) > limits.max_texel_buffer_elements) {
    return absl::OutOfRangeError(absl::StrCat(
        what, " reads ", bytes / TexelBytes(format), " texels; ", limits.name, " binds at most ",
        limits.max_texel_buffer_elements, " (maxTexelBufferElements)"));
  }
  if (limits.min_texel_buffer_offset_alignment != 0 &&
      range.offset % limits.min_texel_buffer_offset_alignment != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " offset ", range.offset, " is not a multiple of minTexelBufferOffsetAlignment ",
        limits.min_texel_buffer_offset_alignment));
  }
  return absl::OkStatus();
}

void CommandRecorder::Dispatch(const ComputePipeline& pipeline, std::vector<BufferRange> bindings,
                               std::span<const std::byte> push_constants,
                               std::array<uint32_t, 3> workgroups, std::string label) {
  if (bindings.size() != pipeline.bindings().size()) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("kernel '", pipeline.name(), "' has ", pipeline.bindings().size(),
                     " bindings but ", bindings.size(), " buffers were bound")));
  }
  if (push_constants.size() != pipeline.push_constant_bytes()) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("kernel '", pipeline.name(), "' takes ", pipeline.push_constant_bytes(),
                     " bytes of push constants, got ", push_constants.size())));
  }
  if (&pipeline.device() != &device_.device()) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("kernel '", pipeline.name(), "' was created for ", pipeline.device().label(),
                     ", not for ", device_.label())));
  }
  for (size_t binding = 0; binding < bindings.size(); ++binding) {
    std::string what = absl::StrCat("binding ", binding, " of kernel '", pipeline.name(), "'");
    const VkFormat texel_format = pipeline.texel_format(binding);
    if (absl::Status status =
            CheckRange(bindings[binding], what.c_str(), texel_format == VK_FORMAT_UNDEFINED);
        !status.ok()) {
      return Fail(status);
    }
    if (texel_format != VK_FORMAT_UNDEFINED) {
      if (absl::Status status = CheckTexelRange(bindings[binding], texel_format, what);
          !status.ok()) {
        return Fail(status);
      }
    }
  }
  const auto& limits = device_.device().physical_device().max_workgroup_count;
  for (int axis = 0; axis < 3; ++axis) {
    if (workgroups[axis] > limits[axis]) {
      return Fail(absl::InvalidArgumentError(
          absl::StrCat("kernel '", pipeline.name(), "' dispatches ", workgroups[axis],
                       " workgroups along axis ", axis, "; the device allows ", limits[axis])));
    }
  }
  Step step{StepKind::kDispatch};
  step.pipeline = &pipeline;
  step.label = label.empty() ? pipeline.name() : std::move(label);
  step.bindings = std::move(bindings);
  step.push_constants.assign(push_constants.begin(), push_constants.end());
  step.workgroups = workgroups;
  steps_.push_back(std::move(step));
}

void CommandRecorder::Copy(const Buffer& source, uint64_t source_offset, const Buffer& destination,
                           uint64_t destination_offset, uint64_t size) {
  BufferRange from{&source, source_offset, size};
  BufferRange to{&destination, destination_offset, size};
  if (absl::Status status = CheckRange(from, "copy source", false); !status.ok())
    return Fail(status);
  if (absl::Status status = CheckRange(to, "copy destination", false); !status.ok()) {
    return Fail(status);
  }
  if (size == 0) return;
  Step step{StepKind::kCopy};
  step.bindings = {from, to};
  step.size = size;
  steps_.push_back(std::move(step));
}

void CommandRecorder::Fill(const Buffer& destination, uint64_t offset, uint64_t size,
                           uint32_t value) {
  BufferRange to{&destination, offset, size};
  if (absl::Status status = CheckRange(to, "fill destination", false); !status.ok()) {
    return Fail(status);
  }
  if (offset % 4 != 0 || (size != VK_WHOLE_SIZE && size % 4 != 0)) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("fill of [", offset, ", +", size, ") is not 4-byte aligned")));
  }
  Step step{StepKind::kFill};
  step.bindings = {to};
  step.size = size;
  step.fill_value = value;
  steps_.push_back(std::move(step));
}

absl::StatusOr<std::unique_ptr<CommandSequence>> CommandRecorder::Finish(bool timestamps) {
  if (!error_.ok()) return error_;
  if (absl::Status usable = device_.device().CheckUsable(); !usable.ok()) return usable;
  std::unique_ptr<CommandSequence> sequence(new CommandSequence(device_));
  const DeviceFunctions& vk = device_.functions();
  VkDevice device = device_.handle();
  const std::string& where = device_.label();

  // Descriptor sets: one per dispatch, from a pool sized for exactly this sequence.
  uint32_t dispatch_count = 0;
  uint32_t binding_count = 0;
  for (const Step& step : steps_) {
    if (step.kind != StepKind::kDispatch) continue;
    dispatch_count += 1;
    binding_count += static_cast<uint32_t>(step.bindings.size());
  }
  std::vector<VkDescriptorSet> sets(dispatch_count, VK_NULL_HANDLE);
  if (dispatch_count > 0) {
    uint32_t texel_count = 0;
    for (const Step& step : steps_) {
      if (step.kind != StepKind::kDispatch) continue;
      for (size_t binding = 0; binding < step.bindings.size(); ++binding) {
        texel_count += step.pipeline->texel_format(binding) != VK_FORMAT_UNDEFINED ? 1 : 0;
      }
    }
    std::vector<VkDescriptorPoolSize> pool_sizes = {
        {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, std::max(binding_count - texel_count, 1u)}};
    if (texel_count > 0)
      pool_sizes.push_back({VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, texel_count});
    VkDescriptorPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    pool_info.maxSets = dispatch_count;
    pool_info.poolSizeCount = static_cast<uint32_t>(pool_sizes.size());
    pool_info.pPoolSizes = pool_sizes.data();
    VKSPMD_VK_RETURN_IF_ERROR_ON(
        device_.device(), where,
        vk.vkCreateDescriptorPool(device, &pool_info, nullptr, &sequence->descriptor_pool_));
    std::vector<VkDescriptorSetLayout> layouts;
    for (const Step& step : steps_) {
      if (step.kind == StepKind::kDispatch) layouts.push_back(step.pipeline->set_layout());
    }
    VkDescriptorSetAllocateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    set_info.descriptorPool = sequence->descriptor_pool_;
    set_info.descriptorSetCount = dispatch_count;
    set_info.pSetLayouts = layouts.data();
    VKSPMD_VK_RETURN_IF_ERROR_ON(device_.device(), where,
                                 vk.vkAllocateDescriptorSets(device, &set_info, sets.data()));
    std::vector<VkDescriptorBufferInfo> buffer_infos;
    buffer_infos.reserve(binding_count);
    // One view per distinct (buffer, offset, range, format), owned by the sequence.
    std::map<std::tuple<VkBuffer, uint64_t, uint64_t, VkFormat>, size_t> view_of;
    std::vector<size_t> view_indices;
    std::vector<VkWriteDescriptorSet> writes;
    size_t set_index = 0;
    for (const Step& step : steps_) {
      if (step.kind != StepKind::kDispatch) continue;
      for (uint32_t binding = 0; binding < step.bindings.size(); ++binding) {
        const BufferRange& range = step.bindings[binding];
        VkWriteDescriptorSet write{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        write.dstSet = sets[set_index];
        write.dstBinding = binding;
        write.descriptorCount = 1;
        const VkFormat format = step.pipeline->texel_format(binding);
        if (format == VK_FORMAT_UNDEFINED) {
          // An empty range is not a valid descriptor: the rest of the (padded) buffer is, and
          // the kernel reads none of it.
          const uint64_t bytes = ResolvedSize(range);
          buffer_infos.push_back(
              {range.buffer->handle(), range.offset, bytes == 0 ? VK_WHOLE_SIZE : bytes});
          write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
          write.pBufferInfo = &buffer_infos.back();
        } else {
          const uint64_t bytes = TexelRange(range, format);
          auto [view, added] = view_of.try_emplace(
              {range.buffer->handle(), range.offset, bytes, format}, sequence->views_.size());
          if (added) {
            VkBufferViewCreateInfo view_info{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
            view_info.buffer = range.buffer->handle();
            view_info.format = format;
            view_info.offset = range.offset;
            view_info.range = bytes;
            sequence->views_.push_back(VK_NULL_HANDLE);
            VKSPMD_VK_RETURN_IF_ERROR_ON(
                device_.device(), where,
                vk.vkCreateBufferView(device, &view_info, nullptr, &sequence->views_.back()));
          }
          write.descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
          view_indices.push_back(view->second);
        }
        writes.push_back(write);
      }
      ++set_index;
    }
    // The views' addresses, now that views_ no longer grows.
    size_t next_view = 0;
    for (VkWriteDescriptorSet& write : writes) {
      if (write.descriptorType == VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER) {
        write.pTexelBufferView = &sequence->views_[view_indices[next_view++]];
      }
    }
    vk.vkUpdateDescriptorSets(device, static_cast<uint32_t>(writes.size()), writes.data(), 0,
                              nullptr);
  }
  if (timestamps && !steps_.empty()) {
    const PhysicalDeviceInfo& physical = device_.device().physical_device();
    if (physical.queue_families[physical.compute_queue_family].timestamp_valid_bits == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          device_.label(), " has no timestamps on its compute queue; record without timings"));
    }
    VkQueryPoolCreateInfo query_info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    query_info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    query_info.queryCount = static_cast<uint32_t>(2 * steps_.size());
    VKSPMD_VK_RETURN_IF_ERROR_ON(
        device_.device(), where,
        vk.vkCreateQueryPool(device, &query_info, nullptr, &sequence->query_pool_));
  }

  VKSPMD_ASSIGN_OR_RETURN(VkCommandBuffer command_buffer, device_.AllocateCommandBuffer());
  sequence->command_buffer_ = command_buffer;
  VkCommandBuffer commands = command_buffer;
  VkCommandBufferBeginInfo begin_info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  VKSPMD_VK_RETURN_IF_ERROR_ON(device_.device(), where,
                               vk.vkBeginCommandBuffer(commands, &begin_info));
  if (sequence->query_pool_ != VK_NULL_HANDLE) {
    vk.vkCmdResetQueryPool(commands, sequence->query_pool_, 0,
                           static_cast<uint32_t>(2 * steps_.size()));
  }
  // Earlier submissions to this queue (uploads, earlier runs) must be complete and visible.
  GlobalBarrier(vk, commands, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, VK_ACCESS_2_MEMORY_WRITE_BIT,
                VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT);

  AccessTracker tracker;
  size_t set_index = 0;
  for (size_t index = 0; index < steps_.size(); ++index) {
    const Step& step = steps_[index];
    std::vector<BufferAccess> accesses;
    if (step.kind == StepKind::kDispatch) {
      for (size_t binding = 0; binding < step.bindings.size(); ++binding) {
        BindingAccess use = step.pipeline->bindings()[binding];
        accesses.push_back({step.bindings[binding].buffer->handle(),
                            VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, use != BindingAccess::kWrite,
                            use != BindingAccess::kRead});
      }
    } else if (step.kind == StepKind::kCopy) {
      accesses.push_back(
          {step.bindings[0].buffer->handle(), VK_PIPELINE_STAGE_2_TRANSFER_BIT, true, false});
      accesses.push_back(
          {step.bindings[1].buffer->handle(), VK_PIPELINE_STAGE_2_TRANSFER_BIT, false, true});
    } else {
      accesses.push_back(
          {step.bindings[0].buffer->handle(), VK_PIPELINE_STAGE_2_TRANSFER_BIT, false, true});
    }
    std::vector<VkBufferMemoryBarrier2> barriers = tracker.Step(MergeAccesses(accesses));
    if (!barriers.empty()) {
      VkDependencyInfo dependency{VK_STRUCTURE_TYPE_DEPENDENCY_INFO};
      dependency.bufferMemoryBarrierCount = static_cast<uint32_t>(barriers.size());
      dependency.pBufferMemoryBarriers = barriers.data();
      vk.vkCmdPipelineBarrier2(commands, &dependency);
    }
    if (sequence->query_pool_ != VK_NULL_HANDLE) {
      vk.vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, sequence->query_pool_,
                             static_cast<uint32_t>(2 * index));
    }
    switch (step.kind) {
      case StepKind::kDispatch: {
        const ComputePipeline& pipeline = *step.pipeline;
        vk.vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.handle());
        vk.vkCmdBindDescriptorSets(commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout(), 0,
                                   1, &sets[set_index++], 0, nullptr);
        if (!step.push_constants.empty()) {
          vk.vkCmdPushConstants(commands, pipeline.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                static_cast<uint32_t>(step.push_constants.size()),
                                step.push_constants.data());
        }
        if (step.workgroups[0] && step.workgroups[1] && step.workgroups[2]) {
          vk.vkCmdDispatch(commands, step.workgroups[0], step.workgroups[1], step.workgroups[2]);
        }
        sequence->step_names_.push_back(step.label);
        break;
      }
      case StepKind::kCopy: {
        VkBufferCopy region{step.bindings[0].offset, step.bindings[1].offset, step.size};
        vk.vkCmdCopyBuffer(commands, step.bindings[0].buffer->handle(),
                           step.bindings[1].buffer->handle(), 1, &region);
        sequence->step_names_.push_back("copy");
        break;
      }
      case StepKind::kFill:
        vk.vkCmdFillBuffer(commands, step.bindings[0].buffer->handle(), step.bindings[0].offset,
                           step.size, step.fill_value);
        sequence->step_names_.push_back("fill");
        break;
    }
    if (sequence->query_pool_ != VK_NULL_HANDLE) {
      vk.vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, sequence->query_pool_,
                             static_cast<uint32_t>(2 * index + 1));
    }
  }
  // Results must be visible to the host once the timeline says the run is done.
  GlobalBarrier(vk, commands, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, VK_ACCESS_2_MEMORY_WRITE_BIT,
                VK_PIPELINE_STAGE_2_HOST_BIT, VK_ACCESS_2_HOST_READ_BIT);
  VKSPMD_VK_RETURN_IF_ERROR_ON(device_.device(), where, vk.vkEndCommandBuffer(commands));
  return sequence;
}

CommandSequence::~CommandSequence() {
  if (pending_ != 0) (void)Wait();
  LogicalDevice& device = device_.device();
  if (device.must_not_free()) return;
  const DeviceFunctions& vk = device.functions();
  device_.FreeCommandBuffer(command_buffer_);
  if (descriptor_pool_ != VK_NULL_HANDLE) {
    vk.vkDestroyDescriptorPool(device.handle(), descriptor_pool_, nullptr);
  }
  if (query_pool_ != VK_NULL_HANDLE) vk.vkDestroyQueryPool(device.handle(), query_pool_, nullptr);
  for (VkBufferView view : views_) vk.vkDestroyBufferView(device.handle(), view, nullptr);
}

absl::Status CommandSequence::Start(std::span<const SemaphoreWait> waits) {
  if (pending_ != 0) {
    if (absl::Status waited = Wait(); !waited.ok()) return waited;
  }
  VKSPMD_ASSIGN_OR_RETURN(uint64_t value, device_.Submit(command_buffer_, waits));
  pending_ = value;
  return absl::OkStatus();
}

absl::Status CommandSequence::Wait() {
  if (pending_ == 0) return absl::OkStatus();
  absl::Status status = device_.Wait(pending_);
  if (status.ok()) has_run_ = true;
  pending_ = 0;
  return status;
}

absl::Status CommandSequence::Run() {
  if (absl::Status started = Start(); !started.ok()) return started;
  return Wait();
}

absl::StatusOr<std::vector<StepTiming>> CommandSequence::ReadTimings() const {
  if (query_pool_ == VK_NULL_HANDLE) {
    return absl::FailedPreconditionError("this sequence was recorded without timestamps");
  }
  if (!has_run_ || pending_ != 0) {
    return absl::FailedPreconditionError("timings need a finished run of the sequence");
  }
  const PhysicalDeviceInfo& physical = device_.device().physical_device();
  uint32_t valid_bits = physical.queue_families[physical.compute_queue_family].timestamp_valid_bits;
  uint64_t mask = valid_bits >= 64 ? UINT64_MAX : ((uint64_t{1} << valid_bits) - 1);
  std::vector<uint64_t> ticks(2 * step_names_.size());
  VKSPMD_VK_RETURN_IF_ERROR_ON(
      device_.device(), device_.label(),
      device_.functions().vkGetQueryPoolResults(
          device_.handle(), query_pool_, 0, static_cast<uint32_t>(ticks.size()),
          ticks.size() * sizeof(uint64_t), ticks.data(), sizeof(uint64_t),
          VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
  std::vector<StepTiming> timings;
  for (size_t step = 0; step < step_names_.size(); ++step) {
    uint64_t elapsed = ((ticks[2 * step + 1] & mask) - (ticks[2 * step] & mask)) & mask;
    uint64_t since_first = ((ticks[2 * step] & mask) - (ticks[0] & mask)) & mask;
    timings.push_back({step_names_[step],
                       static_cast<double>(elapsed) * physical.timestamp_period_ns,
                       static_cast<double>(since_first) * physical.timestamp_period_ns});
  }
  return timings;
}

}  // namespace vkspmd::runtime
