// Turns VkResult codes into absl::Status values that name the failing call and the device, so
// every Vulkan error reaching a user says what was being done and where.
#pragma once

#include <vulkan/vulkan.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace vkspmd::runtime {

// The VkResult's name, e.g. "VK_ERROR_DEVICE_LOST".
absl::string_view VkResultName(VkResult result);

// OK for VK_SUCCESS (and other non-error codes); otherwise a Status whose code matches the
// failure (RESOURCE_EXHAUSTED for out-of-memory, UNAVAILABLE for a lost device, ...) and whose
// message reads "<call> failed on <where>: <VkResult name>".
absl::Status VulkanStatus(VkResult result, absl::string_view call, absl::string_view where);

}  // namespace vkspmd::runtime

// Evaluates a Vulkan call; on an error code returns its Status from the enclosing function.
#define VKSPMD_VK_RETURN_IF_ERROR(where, call)                                \
  do {                                                                        \
    if (VkResult vkspmd_result_ = (call); vkspmd_result_ < 0) {               \
      return ::vkspmd::runtime::VulkanStatus(vkspmd_result_, #call, (where)); \
    }                                                                         \
  } while (false)

// The same for a call on `device` (a LogicalDevice): VK_ERROR_DEVICE_LOST from any call, not only
// submits and waits, also marks the device failed, so none of its objects is used or freed again.
#define VKSPMD_VK_RETURN_IF_ERROR_ON(device, where, call)                  \
  do {                                                                     \
    if (VkResult vkspmd_result_ = (call); vkspmd_result_ < 0) {            \
      absl::Status vkspmd_status_ =                                        \
          ::vkspmd::runtime::VulkanStatus(vkspmd_result_, #call, (where)); \
      if (vkspmd_result_ == VK_ERROR_DEVICE_LOST) {                        \
        (device).MarkFailed(vkspmd_status_, /*work_may_run=*/true);        \
      }                                                                    \
      return vkspmd_status_;                                               \
    }                                                                      \
  } while (false)
