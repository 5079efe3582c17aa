// Instance creation with the Khronos validation layer and a debug-utils messenger.
#include "src/runtime/instance.h"

#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "src/runtime/vulkan_status.h"

namespace vkspmd::runtime {
namespace {

constexpr char kValidationLayer[] = "VK_LAYER_KHRONOS_validation";
constexpr int kMessagesKept = 64;

bool HasInstanceLayer(const char* name) {
  uint32_t count = 0;
  if (vkEnumerateInstanceLayerProperties(&count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(count);
  if (vkEnumerateInstanceLayerProperties(&count, layers.data()) != VK_SUCCESS) return false;
  for (const VkLayerProperties& layer : layers) {
    if (std::strcmp(layer.layerName, name) == 0) return true;
  }
  return false;
}

bool HasInstanceExtension(const char* name) {
  uint32_t count = 0;
  if (vkEnumerateInstanceExtensionProperties(nullptr, &count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> extensions(count);
  if (vkEnumerateInstanceExtensionProperties(nullptr, &count, extensions.data()) != VK_SUCCESS) {
    return false;
  }
  for (const VkExtensionProperties& extension : extensions) {
    if (std::strcmp(extension.extensionName, name) == 0) return true;
  }
  return false;
}

VKAPI_ATTR VkBool32 VKAPI_CALL OnValidationMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT /*types*/,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                   void* user_data) {
  static_cast<ValidationMessages*>(user_data)->Record(
      severity, data->pMessageIdName != nullptr ? data->pMessageIdName : "",
      data->pMessage != nullptr ? data->pMessage : "");
  return VK_FALSE;  // Never abort the call: the test fixture decides what a message means.
}

}  // namespace

void ValidationMessages::Record(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                const char* id_name, const char* text) {
  const char* level =
      severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning";
  std::string message = absl::StrCat("[vulkan validation ", level, "] ", id_name, ": ", text);
  std::fprintf(stderr, "%s\n", message.c_str());
  std::lock_guard<std::mutex> lock(mutex_);
  count_.fetch_add(1);
  if (messages_.size() < kMessagesKept) messages_.push_back(std::move(message));
}

std::vector<std::string> ValidationMessages::Messages() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return messages_;
}

void ValidationMessages::Clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  count_.store(0);
  messages_.clear();
}

absl::StatusOr<std::unique_ptr<Instance>> Instance::Create(const RuntimeConfig& config) {
  std::unique_ptr<Instance> instance(new Instance());
  std::vector<const char*> layers;
  std::vector<const char*> extensions;
  if (config.validation) {
    if (!HasInstanceLayer(kValidationLayer)) {
      return absl::FailedPreconditionError(
          absl::StrCat("VKSPMD_VALIDATION=1 but the Vulkan layer ", kValidationLayer,
                       " is not installed (Debian package vulkan-validationlayers)"));
    }
    layers.push_back(kValidationLayer);
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkInstanceCreateFlags flags = 0;
  if (HasInstanceExtension(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
    extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
    flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
  }

  VkApplicationInfo application{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  application.pApplicationName = "vkspmd";
  application.pEngineName = "vkspmd";
  application.apiVersion = VK_API_VERSION_1_3;

  VkValidationFeatureEnableEXT sync_validation =
      VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
  VkValidationFeaturesEXT validation_features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  validation_features.enabledValidationFeatureCount = 1;
  validation_features.pEnabledValidationFeatures = &sync_validation;

  VkInstanceCreateInfo create_info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  create_info.flags = flags;
  create_info.pApplicationInfo = &application;
  create_info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  create_info.ppEnabledLayerNames = layers.data();
  create_info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  create_info.ppEnabledExtensionNames = extensions.data();
  if (config.synchronization_validation) create_info.pNext = &validation_features;

  VkResult result = vkCreateInstance(&create_info, nullptr, &instance->instance_);
  if (result == VK_ERROR_INCOMPATIBLE_DRIVER) {
    return absl::NotFoundError(
        "no Vulkan driver found (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER); install "
        "mesa-vulkan-drivers for lavapipe, or check VK_DRIVER_FILES (lavapipe's manifest is "
        "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json)");
  }
  VKSPMD_VK_RETURN_IF_ERROR("the Vulkan instance", result);
  if (absl::Status loaded = instance->functions_.Load(instance->instance_); !loaded.ok()) {
    return loaded;
  }

  if (config.validation) {
    instance->messages_ = std::make_unique<ValidationMessages>();
    VkDebugUtilsMessengerCreateInfoEXT messenger_info{
        VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    messenger_info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                     VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
    messenger_info.pfnUserCallback = &OnValidationMessage;
    messenger_info.pUserData = instance->messages_.get();
    VKSPMD_VK_RETURN_IF_ERROR(
        "the Vulkan instance",
        instance->functions_.vkCreateDebugUtilsMessengerEXT(instance->instance_, &messenger_info,
                                                            nullptr, &instance->messenger_));
  }
  return instance;
}

Instance::~Instance() {
  if (messenger_ != VK_NULL_HANDLE) {
    functions_.vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  }
  if (instance_ == VK_NULL_HANDLE) return;
  if (functions_.vkDestroyInstance != nullptr) {
    functions_.vkDestroyInstance(instance_, nullptr);
  } else {
    vkDestroyInstance(instance_, nullptr);  // The table failed to load; use the loader's.
  }
}

absl::StatusOr<std::vector<VkPhysicalDevice>> Instance::EnumeratePhysicalDevices() const {
  uint32_t count = 0;
  VKSPMD_VK_RETURN_IF_ERROR("the Vulkan instance",
                            functions_.vkEnumeratePhysicalDevices(instance_, &count, nullptr));
  std::vector<VkPhysicalDevice> devices(count);
  VKSPMD_VK_RETURN_IF_ERROR("the Vulkan instance", functions_.vkEnumeratePhysicalDevices(
                                                       instance_, &count, devices.data()));
  devices.resize(count);
  return devices;
}

}  // namespace vkspmd::runtime
