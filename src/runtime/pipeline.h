// Compute pipelines from SPIR-V: the descriptor-set layout (one storage buffer or uniform texel
// buffer per binding), push constants, specialization constants, and the device's VkPipelineCache.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/runtime/logical_device.h"

namespace vkspmd::runtime {

// How a kernel uses a storage-buffer binding; barriers are derived from it.
enum class BindingAccess { kRead, kWrite, kReadWrite };

struct PipelineSpec {
  std::string name;                 // For errors and timing reports.
  std::span<const uint32_t> spirv;  // Borrowed during Create only.
  std::string entry_point = "main";
  std::vector<BindingAccess> bindings;   // Binding i of set 0 is a storage buffer.
  uint32_t push_constant_bytes = 0;      // At most the device's maxPushConstantsSize.
  std::vector<uint32_t> specialization;  // Value i sets constant_id i (32-bit constants).
  // Binding i is a uniform texel buffer of this format instead where texel_formats[i] is set (not
  // VK_FORMAT_UNDEFINED; empty: none is): one of kTexelReadFormats, read only. llvmpipe fetches
  // texels with vector loads, where it loads a storage buffer's elements lane by lane.
  std::vector<VkFormat> texel_formats;
};

class ComputePipeline {
 public:
  // `device` is borrowed and must outlive the pipeline.
  static absl::StatusOr<std::unique_ptr<ComputePipeline>> Create(LogicalDevice& device,
                                                                 const PipelineSpec& spec);
  ~ComputePipeline();
  ComputePipeline(const ComputePipeline&) = delete;
  ComputePipeline& operator=(const ComputePipeline&) = delete;

  const std::string& name() const { return name_; }
  const std::vector<BindingAccess>& bindings() const { return bindings_; }
  // The format of binding i where it is a uniform texel buffer, else VK_FORMAT_UNDEFINED.
  VkFormat texel_format(size_t binding) const {
    return binding < texel_formats_.size() ? texel_formats_[binding] : VK_FORMAT_UNDEFINED;
  }
  uint32_t push_constant_bytes() const { return push_constant_bytes_; }
  VkPipeline handle() const { return pipeline_; }
  VkPipelineLayout layout() const { return layout_; }
  VkDescriptorSetLayout set_layout() const { return set_layout_; }
  LogicalDevice& device() const { return device_; }

 private:
  explicit ComputePipeline(LogicalDevice& device) : device_(device) {}

  LogicalDevice& device_;
  std::string name_;
  std::vector<BindingAccess> bindings_;
  std::vector<VkFormat> texel_formats_;
  uint32_t push_constant_bytes_ = 0;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
};

}  // namespace vkspmd::runtime
