// VkResult → absl::Status conversion.
#include "src/runtime/vulkan_status.h"

#include "absl/strings/str_cat.h"

namespace vkspmd::runtime {

absl::string_view VkResultName(VkResult result) {
  switch (result) {
#define VKSPMD_RESULT_CASE(name) \
  case name:                     \
    return #name;
    VKSPMD_RESULT_CASE(VK_SUCCESS)
    VKSPMD_RESULT_CASE(VK_NOT_READY)
    VKSPMD_RESULT_CASE(VK_TIMEOUT)
    VKSPMD_RESULT_CASE(VK_EVENT_SET)
    VKSPMD_RESULT_CASE(VK_EVENT_RESET)
    VKSPMD_RESULT_CASE(VK_INCOMPLETE)
    VKSPMD_RESULT_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    VKSPMD_RESULT_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    VKSPMD_RESULT_CASE(VK_ERROR_INITIALIZATION_FAILED)
    VKSPMD_RESULT_CASE(VK_ERROR_DEVICE_LOST)
    VKSPMD_RESULT_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    VKSPMD_RESULT_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    VKSPMD_RESULT_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    VKSPMD_RESULT_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    VKSPMD_RESULT_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    VKSPMD_RESULT_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    VKSPMD_RESULT_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    VKSPMD_RESULT_CASE(VK_ERROR_FRAGMENTED_POOL)
    VKSPMD_RESULT_CASE(VK_ERROR_UNKNOWN)
    VKSPMD_RESULT_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    VKSPMD_RESULT_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    VKSPMD_RESULT_CASE(VK_ERROR_FRAGMENTATION)
    VKSPMD_RESULT_CASE(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    VKSPMD_RESULT_CASE(VK_PIPELINE_COMPILE_REQUIRED)
#undef VKSPMD_RESULT_CASE
    default:
      return "VK_RESULT_UNKNOWN";
  }
}

absl::Status VulkanStatus(VkResult result, absl::string_view call, absl::string_view where) {
  if (result >= 0) return absl::OkStatus();
  std::string message =
      absl::StrCat(call, " failed on ", where, ": ", VkResultName(result), " (", result, ")");
  switch (result) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_FRAGMENTED_POOL:
    case VK_ERROR_FRAGMENTATION:
    case VK_ERROR_TOO_MANY_OBJECTS:
      return absl::ResourceExhaustedError(message);
    case VK_ERROR_DEVICE_LOST:
      return absl::UnavailableError(message);
    case VK_ERROR_LAYER_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_FORMAT_NOT_SUPPORTED:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace vkspmd::runtime
