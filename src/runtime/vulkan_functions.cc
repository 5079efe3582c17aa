// Loading of the per-instance and per-device entry-point tables.
#include "src/runtime/vulkan_functions.h"

#include "absl/strings/str_cat.h"

namespace vkspmd::runtime {

absl::Status InstanceFunctions::Load(VkInstance instance) {
#define VKSPMD_LOAD_REQUIRED(name)                                              \
  name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(instance, #name));  \
  if (name == nullptr) {                                                        \
    return absl::FailedPreconditionError(                                       \
        absl::StrCat("the Vulkan loader has no instance entry point ", #name)); \
  }
#define VKSPMD_LOAD_OPTIONAL(name) \
  name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(instance, #name));
  VKSPMD_INSTANCE_FUNCTIONS(VKSPMD_LOAD_REQUIRED)
  VKSPMD_DEBUG_UTILS_FUNCTIONS(VKSPMD_LOAD_OPTIONAL)
  VKSPMD_OPTIONAL_INSTANCE_FUNCTIONS(VKSPMD_LOAD_OPTIONAL)
#undef VKSPMD_LOAD_REQUIRED
#undef VKSPMD_LOAD_OPTIONAL
  return absl::OkStatus();
}

absl::Status DeviceFunctions::Load(const InstanceFunctions& instance_functions, VkDevice device) {
#define VKSPMD_LOAD_DEVICE(name)                                                                 \
  name = reinterpret_cast<PFN_##name>(instance_functions.vkGetDeviceProcAddr(device, #name));    \
  if (name == nullptr) {                                                                         \
    return absl::FailedPreconditionError(absl::StrCat(                                           \
        "the Vulkan device has no entry point ", #name, " (vkspmd needs a Vulkan 1.3 device)")); \
  }
  VKSPMD_DEVICE_FUNCTIONS(VKSPMD_LOAD_DEVICE)
#undef VKSPMD_LOAD_DEVICE
  return absl::OkStatus();
}

}  // namespace vkspmd::runtime
