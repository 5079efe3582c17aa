// Pipeline, layout and shader-module creation.
#include "src/runtime/pipeline.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "src/runtime/vulkan_status.h"

namespace vkspmd::runtime {
namespace {

constexpr uint32_t kSpirvMagic = 0x07230203;

absl::Status CheckSpirvHeader(const PipelineSpec& spec) {
  if (spec.spirv.size() < 5 || spec.spirv[0] != kSpirvMagic) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel '", spec.name, "' is not SPIR-V: ", spec.spirv.size(),
                     " words, the first is not the SPIR-V magic number 0x07230203"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ComputePipeline>> ComputePipeline::Create(LogicalDevice& device,
                                                                         const PipelineSpec& spec) {
  if (absl::Status usable = device.CheckUsable(); !usable.ok()) return usable;
  if (absl::Status header = CheckSpirvHeader(spec); !header.ok()) return header;
  const PhysicalDeviceInfo& limits = device.physical_device();
  if (spec.push_constant_bytes > limits.max_push_constants_bytes || spec.push_constant_bytes % 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel '", spec.name, "' needs ", spec.push_constant_bytes,
                     " bytes of push constants; ", limits.name, " allows ",
                     limits.max_push_constants_bytes, " (and the size must be a multiple of 4)"));
  }
  if (!spec.texel_formats.empty() && spec.texel_formats.size() != spec.bindings.size()) {
    return absl::InvalidArgumentError(absl::StrCat("kernel '", spec.name, "' gives ",
                                                   spec.texel_formats.size(), " texel formats for ",
                                                   spec.bindings.size(), " bindings"));
  }
  uint32_t texel_bindings = 0;
  for (size_t binding = 0; binding < spec.texel_formats.size(); ++binding) {
    const VkFormat format = spec.texel_formats[binding];
    if (format == VK_FORMAT_UNDEFINED) continue;
    ++texel_bindings;
    if (std::find(std::begin(kTexelReadFormats), std::end(kTexelReadFormats), format) ==
        std::end(kTexelReadFormats)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kernel '", spec.name, "' binding ", binding, " is a uniform texel buffer of VkFormat ",
          static_cast<int>(format), ", not one of the 4-element formats kernels read"));
    }
    if (spec.bindings[binding] != BindingAccess::kRead) {
      return absl::InvalidArgumentError(absl::StrCat("kernel '", spec.name, "' binding ", binding,
                                                     " is a uniform texel buffer: read only"));
    }
    if (!limits.uniform_texel_formats) {
      return absl::FailedPreconditionError(absl::StrCat(
          "kernel '", spec.name, "' binding ", binding, " is a uniform texel buffer; ", limits.name,
          " lacks uniform texel buffers of 4 x 32-, 16- or 8-bit elements"));
    }
  }
  // Uniform texel buffers count as sampled images.
  if (texel_bindings > limits.max_sampled_images_per_stage) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel '", spec.name, "' reads ", texel_bindings, " uniform texel buffers; ",
                     limits.name, " binds at most ", limits.max_sampled_images_per_stage,
                     " (maxPerStageDescriptorSampledImages)"));
  }
  std::unique_ptr<ComputePipeline> pipeline(new ComputePipeline(device));
  pipeline->name_ = spec.name;
  pipeline->bindings_ = spec.bindings;
  pipeline->texel_formats_ = spec.texel_formats;
  pipeline->push_constant_bytes_ = spec.push_constant_bytes;
  const DeviceFunctions& vk = device.functions();
  const std::string where = absl::StrCat(device.label(), " (kernel ", spec.name, ")");

  std::vector<VkDescriptorSetLayoutBinding> bindings;
  for (uint32_t binding = 0; binding < spec.bindings.size(); ++binding) {
    const VkDescriptorType type = pipeline->texel_format(binding) != VK_FORMAT_UNDEFINED
                                      ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER
                                      : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings.push_back({binding, type, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
  }
  VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set_info.bindingCount = static_cast<uint32_t>(bindings.size());
  set_info.pBindings = bindings.data();
  VKSPMD_VK_RETURN_IF_ERROR_ON(
      device, where,
      vk.vkCreateDescriptorSetLayout(device.handle(), &set_info, nullptr, &pipeline->set_layout_));

  VkPushConstantRange push_range{VK_SHADER_STAGE_COMPUTE_BIT, 0, spec.push_constant_bytes};
  VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &pipeline->set_layout_;
  layout_info.pushConstantRangeCount = spec.push_constant_bytes > 0 ? 1 : 0;
  layout_info.pPushConstantRanges = &push_range;
  VKSPMD_VK_RETURN_IF_ERROR_ON(
      device, where,
      vk.vkCreatePipelineLayout(device.handle(), &layout_info, nullptr, &pipeline->layout_));

  VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  module_info.codeSize = spec.spirv.size_bytes();
  module_info.pCode = spec.spirv.data();
  VkShaderModule module = VK_NULL_HANDLE;
  VKSPMD_VK_RETURN_IF_ERROR_ON(
      device, where, vk.vkCreateShaderModule(device.handle(), &module_info, nullptr, &module));

  std::vector<VkSpecializationMapEntry> entries;
  for (uint32_t id = 0; id < spec.specialization.size(); ++id) {
    entries.push_back({id, id * 4, 4});
  }
  VkSpecializationInfo specialization{static_cast<uint32_t>(entries.size()), entries.data(),
                                      spec.specialization.size() * 4, spec.specialization.data()};
  VkComputePipelineCreateInfo pipeline_info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pipeline_info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pipeline_info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pipeline_info.stage.module = module;
  pipeline_info.stage.pName = spec.entry_point.c_str();
  pipeline_info.stage.pSpecializationInfo = entries.empty() ? nullptr : &specialization;
  pipeline_info.layout = pipeline->layout_;
  VkResult result = vk.vkCreateComputePipelines(device.handle(), device.pipeline_cache(), 1,
                                                &pipeline_info, nullptr, &pipeline->pipeline_);
  vk.vkDestroyShaderModule(device.handle(), module, nullptr);
  VKSPMD_VK_RETURN_IF_ERROR_ON(device, where, result);
  return pipeline;
}

ComputePipeline::~ComputePipeline() {
  if (device_.must_not_free()) return;
  const DeviceFunctions& vk = device_.functions();
  if (pipeline_ != VK_NULL_HANDLE) vk.vkDestroyPipeline(device_.handle(), pipeline_, nullptr);
  if (layout_ != VK_NULL_HANDLE) vk.vkDestroyPipelineLayout(device_.handle(), layout_, nullptr);
  if (set_layout_ != VK_NULL_HANDLE) {
    vk.vkDestroyDescriptorSetLayout(device_.handle(), set_layout_, nullptr);
  }
}

}  // namespace vkspmd::runtime
