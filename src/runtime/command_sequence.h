// Recorded work for one mesh device: dispatches and copies, recorded once into a command buffer
// with barriers derived from per-buffer access tracking, then submitted as often as needed.
// Optional timestamp queries give the GPU time of each step.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/runtime/buffer.h"
#include "src/runtime/mesh_device.h"
#include "src/runtime/pipeline.h"

namespace vkspmd::runtime {

// A bound range of a buffer; size VK_WHOLE_SIZE means "to the end of the buffer".
struct BufferRange {
  const Buffer* buffer = nullptr;  // Borrowed; must outlive every sequence that uses it.
  uint64_t offset = 0;
  uint64_t size = VK_WHOLE_SIZE;
};

struct StepTiming {
  std::string name;  // Kernel name, or "copy" / "fill".
  double gpu_nanoseconds = 0;
  double start_nanoseconds = 0;  // From the start of the run's first step (profiler traces).
};

class CommandSequence;

// Collects steps; the first invalid step makes Finish return its error.
class CommandRecorder {
 public:
  explicit CommandRecorder(MeshDevice& device) : device_(device) {}

  // `label` names the step in timings (default: the pipeline's name; kernels sharing one
  // pipeline pass their own).
  void Dispatch(const ComputePipeline& pipeline, std::vector<BufferRange> bindings,
                std::span<const std::byte> push_constants, std::array<uint32_t, 3> workgroups,
                std::string label = "");
  template <typename PushConstants>
  void Dispatch(const ComputePipeline& pipeline, std::vector<BufferRange> bindings,
                const PushConstants& push_constants, std::array<uint32_t, 3> workgroups) {
    Dispatch(pipeline, std::move(bindings), std::as_bytes(std::span(&push_constants, 1)),
             workgroups);
  }
  void Copy(const Buffer& source, uint64_t source_offset, const Buffer& destination,
            uint64_t destination_offset, uint64_t size);
  // Fills `size` bytes (a multiple of 4, or VK_WHOLE_SIZE) with a repeated 32-bit value.
  void Fill(const Buffer& destination, uint64_t offset, uint64_t size, uint32_t value);

  // Records the command buffer. With `timestamps`, each run measures every step's GPU time.
  absl::StatusOr<std::unique_ptr<CommandSequence>> Finish(bool timestamps = false);

 private:
  friend class CommandSequence;
  enum class StepKind { kDispatch, kCopy, kFill };
  struct Step {
    StepKind kind;
    const ComputePipeline* pipeline = nullptr;
    std::string label;
    std::vector<BufferRange> bindings;  // Dispatch: one per binding. Copy: source, destination.
    std::vector<std::byte> push_constants;
    std::array<uint32_t, 3> workgroups{};
    uint64_t size = 0;
    uint32_t fill_value = 0;
  };

  absl::Status CheckRange(const BufferRange& range, const char* what, bool storage) const;
  // A uniform texel buffer binding's texels fit the buffer, the device's limit and alignment.
  absl::Status CheckTexelRange(const BufferRange& range, VkFormat format,
                               const std::string& what) const;
  void Fail(absl::Status status) {
    if (error_.ok()) error_ = std::move(status);
  }

  MeshDevice& device_;
  std::vector<Step> steps_;
  absl::Status error_;
};

class CommandSequence {
 public:
  ~CommandSequence();
  CommandSequence(const CommandSequence&) = delete;
  CommandSequence& operator=(const CommandSequence&) = delete;

  // Submits and waits (with the device's submit timeout).
  absl::Status Run();
  // Submits without waiting; a previous run still in flight is waited for first. The work starts
  // once `waits` are reached (see MeshDevice::Submit).
  absl::Status Start(std::span<const SemaphoreWait> waits = {});
  // The timeline value of the run in flight (0 when none).
  uint64_t pending() const { return pending_; }
  absl::Status Wait();

  size_t step_count() const { return step_names_.size(); }
  // GPU time of every step of the last finished run; needs Finish(/*timestamps=*/true).
  absl::StatusOr<std::vector<StepTiming>> ReadTimings() const;

 private:
  friend class CommandRecorder;
  explicit CommandSequence(MeshDevice& device) : device_(device) {}

  MeshDevice& device_;
  VkCommandBuffer command_buffer_ = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  VkQueryPool query_pool_ = VK_NULL_HANDLE;
  std::vector<VkBufferView> views_;  // The uniform texel buffers' views.
  std::vector<std::string> step_names_;
  uint64_t pending_ = 0;  // Timeline value of the run in flight, 0 when none.
  bool has_run_ = false;
};

}  // namespace vkspmd::runtime
