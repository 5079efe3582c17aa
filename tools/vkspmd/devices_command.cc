// `vkspmd devices`: the physical devices Vulkan reports and, for a mesh-device count, which
// (physical device, logical device, queue) each mesh device maps to.
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "src/runtime/device_set.h"
#include "src/runtime/instance.h"
#include "src/runtime/mesh_plan.h"
#include "src/runtime/physical_device.h"
#include "tools/vkspmd/command.h"

namespace vkspmd::cli {
namespace {

struct DevicesOptions {
  int mesh_devices = 0;
  bool json = false;
};

std::string QueueFlagsText(VkQueueFlags flags) {
  std::string text;
  if (flags & VK_QUEUE_GRAPHICS_BIT) text += "graphics ";
  if (flags & VK_QUEUE_COMPUTE_BIT) text += "compute ";
  if (flags & VK_QUEUE_TRANSFER_BIT) text += "transfer ";
  if (!text.empty()) text.pop_back();
  return text;
}

// "16x16x16 16x8x16": the f16 x f16 -> f32 cooperative-matrix shapes; "none" without the extension.
std::string MatrixShapesText(const runtime::PhysicalDeviceInfo& device) {
  if (!device.cooperative_matrix_nv) return "none";
  std::string text;
  for (const runtime::PhysicalDeviceInfo::MatrixShape& shape : device.cooperative_matrix_f16_f32) {
    text += fmt::format("{}{}x{}x{}", text.empty() ? "" : " ", shape.m, shape.n, shape.k);
  }
  return text.empty() ? "no f16 x f16 -> f32 subgroup shape" : text;
}

nlohmann::json DeviceJson(const runtime::PhysicalDeviceInfo& device) {
  nlohmann::json heaps = nlohmann::json::array();
  for (const runtime::MemoryHeapInfo& heap : device.memory_heaps) {
    heaps.push_back({{"bytes", heap.size}, {"device_local", heap.device_local}});
  }
  nlohmann::json families = nlohmann::json::array();
  for (const runtime::QueueFamilyInfo& family : device.queue_families) {
    families.push_back({{"flags", QueueFlagsText(family.flags)},
                        {"queues", family.queue_count},
                        {"timestamp_bits", family.timestamp_valid_bits}});
  }
  return {{"index", device.index},
          {"name", device.name},
          {"type", std::string(runtime::PhysicalDeviceTypeName(device.type))},
          {"driver", device.driver_name},
          {"driver_info", device.driver_info},
          {"api_version", runtime::VulkanVersionString(device.api_version)},
          {"uuid", device.device_uuid},
          {"subgroup_size", device.subgroup_size},
          {"max_shared_memory_bytes", device.max_shared_memory_bytes},
          {"cooperative_matrix_f16_f32", MatrixShapesText(device)},
          {"denorm_preserve_float32", device.denorm_preserve_float32},
          {"max_storage_buffer_range", device.max_storage_buffer_range},
          {"memory_heaps", heaps},
          {"queue_families", families},
          {"usable", device.UnusableReason().empty()},
          {"unusable_reason", device.UnusableReason()}};
}

void PrintDevice(const runtime::PhysicalDeviceInfo& device) {
  fmt::print("[{}] {}\n", device.index, device.name);
  fmt::print("    type {}, driver {} ({}), Vulkan {}, uuid {}\n",
             std::string(runtime::PhysicalDeviceTypeName(device.type)), device.driver_name,
             device.driver_info, runtime::VulkanVersionString(device.api_version),
             device.device_uuid);
  fmt::print(
      "    subgroup size {}, max shared memory {} bytes, max storage buffer range {} bytes\n",
      device.subgroup_size, device.max_shared_memory_bytes, device.max_storage_buffer_range);
  fmt::print("    cooperative matrices (VK_NV_cooperative_matrix, f16 x f16 -> f32): {}\n",
             MatrixShapesText(device));
  fmt::print("    f32 subnormals: {}\n", device.denorm_preserve_float32
                                             ? "preserved (kernels declare DenormPreserve)"
                                             : "the driver's choice (no DenormPreserve offered)");
  for (size_t heap = 0; heap < device.memory_heaps.size(); ++heap) {
    fmt::print("    memory heap {}: {:.1f} MiB{}\n", heap,
               device.memory_heaps[heap].size / 1048576.0,
               device.memory_heaps[heap].device_local ? " (device-local)" : "");
  }
  for (size_t family = 0; family < device.queue_families.size(); ++family) {
    const runtime::QueueFamilyInfo& info = device.queue_families[family];
    fmt::print("    queue family {}: {} queue(s), {}\n", family, info.queue_count,
               QueueFlagsText(info.flags));
  }
  if (std::string reason = device.UnusableReason(); !reason.empty()) {
    fmt::print("    not usable by vkspmd: {}\n", reason);
  }
}

int RunDevices(const DevicesOptions& options) {
  absl::StatusOr<runtime::RuntimeConfig> config = runtime::RuntimeConfig::FromEnvironment();
  if (!config.ok()) {
    fmt::print(stderr, "vkspmd devices: {}\n", config.status().message());
    return kExitUsageError;
  }
  if (options.mesh_devices > 0) config->mesh_device_count = options.mesh_devices;
  absl::StatusOr<std::unique_ptr<runtime::Instance>> instance = runtime::Instance::Create(*config);
  absl::StatusOr<std::vector<runtime::PhysicalDeviceInfo>> devices =
      instance.ok() ? runtime::QueryPhysicalDevices(**instance)
                    : absl::StatusOr<std::vector<runtime::PhysicalDeviceInfo>>(instance.status());
  if (!devices.ok()) {
    fmt::print(stderr, "vkspmd devices: {}\n", devices.status().message());
    return absl::IsNotFound(devices.status()) ? kExitNoDevice : kExitRuntimeError;
  }
  absl::StatusOr<std::vector<const runtime::PhysicalDeviceInfo*>> selected =
      runtime::SelectPhysicalDevices(*devices, *config);
  absl::StatusOr<std::vector<runtime::MeshDeviceSlot>> slots =
      selected.ok() ? runtime::PlanMeshDevices(*selected, config->mesh_device_count,
                                               config->separate_logical_devices)
                    : absl::StatusOr<std::vector<runtime::MeshDeviceSlot>>(selected.status());

  nlohmann::json mesh = nlohmann::json::array();
  if (slots.ok()) {
    for (const runtime::MeshDeviceSlot& slot : *slots) {
      mesh.push_back({{"mesh_index", slot.mesh_index},
                      {"physical_index", slot.physical_index},
                      {"logical_device", slot.logical_device},
                      {"queue_family", slot.queue_family},
                      {"queue_index", slot.queue_index}});
    }
  }
  if (options.json) {
    nlohmann::json out = {{"physical_devices", nlohmann::json::array()}, {"mesh_devices", mesh}};
    for (const runtime::PhysicalDeviceInfo& device : *devices) {
      out["physical_devices"].push_back(DeviceJson(device));
    }
    if (!slots.ok()) out["mesh_error"] = std::string(slots.status().message());
    fmt::print("{}\n", out.dump(2));
  } else {
    fmt::print("Physical devices ({}):\n", devices->size());
    for (const runtime::PhysicalDeviceInfo& device : *devices) PrintDevice(device);
    if (slots.ok()) {
      fmt::print("Mesh devices ({}):\n", slots->size());
      for (const runtime::MeshDeviceSlot& slot : *slots) {
        fmt::print(
            "  mesh device {} -> physical device {} ({}), logical device {}, queue family "
            "{}, queue {}\n",
            slot.mesh_index, slot.physical_index, (*devices)[slot.physical_index].name,
            slot.logical_device, slot.queue_family, slot.queue_index);
      }
    }
  }
  if (!slots.ok()) {
    fmt::print(stderr, "vkspmd devices: {}\n", slots.status().message());
    return absl::IsNotFound(slots.status()) ? kExitNoDevice : kExitUsageError;
  }
  return kExitOk;
}

}  // namespace

void RegisterDevicesCommand(CLI::App& app) {
  auto options = std::make_shared<DevicesOptions>();
  CLI::App* command = app.add_subcommand(
      "devices", "List Vulkan physical devices and how mesh devices map onto them");
  command
      ->add_option("--devices,-n", options->mesh_devices,
                   "Number of mesh devices to plan (default: VKSPMD_DEVICES, else one per GPU)")
      ->check(CLI::Range(1, runtime::kMaxMeshDevices));
  command->add_flag("--json", options->json, "Print machine-readable JSON");
  command->callback([options] { CommandExitCode() = RunDevices(*options); });
}

}  // namespace vkspmd::cli
