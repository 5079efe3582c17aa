// The VkInstance of a vkspmd process: the validation layer and its message counter when asked for,
// and enumeration of the physical devices it sees.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/runtime/runtime_config.h"
#include "src/runtime/vulkan_functions.h"

namespace vkspmd::runtime {

// Collects the messages of the validation layer. Thread-safe: the layer calls it from any thread.
class ValidationMessages {
 public:
  // Records one message (severity warning or error) and echoes it to stderr.
  void Record(VkDebugUtilsMessageSeverityFlagBitsEXT severity, const char* id_name,
              const char* text);

  int count() const { return count_.load(); }
  // All messages recorded so far, oldest first (at most the first 64 are kept verbatim).
  std::vector<std::string> Messages() const;
  // Forgets every message: tests call this after a deliberate misuse.
  void Clear();

 private:
  std::atomic<int> count_{0};
  mutable std::mutex mutex_;
  std::vector<std::string> messages_;
};

class Instance {
 public:
  static absl::StatusOr<std::unique_ptr<Instance>> Create(const RuntimeConfig& config);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance handle() const { return instance_; }
  const InstanceFunctions& functions() const { return functions_; }
  bool validation_enabled() const { return messenger_ != VK_NULL_HANDLE; }
  // Null unless validation is enabled.
  ValidationMessages* validation_messages() { return messages_.get(); }

  // Every physical device the loader reports, in loader order.
  absl::StatusOr<std::vector<VkPhysicalDevice>> EnumeratePhysicalDevices() const;

 private:
  Instance() = default;

  VkInstance instance_ = VK_NULL_HANDLE;
  InstanceFunctions functions_;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  std::unique_ptr<ValidationMessages> messages_;
};

}  // namespace vkspmd::runtime
