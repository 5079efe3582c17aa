// Reading and validating the VKSPMD_* environment.
#include "src/runtime/runtime_config.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "src/base/environment.h"
#include "src/base/status_macros.h"

namespace vkspmd::runtime {

using base::BoolFromEnvironment;
using base::EnvironmentValue;

absl::StatusOr<uint64_t> ParseByteSize(const std::string& text) {
  std::string digits = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(text));
  uint64_t multiplier = 1;
  if (!digits.empty() && digits.back() == 'B') digits.pop_back();
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'K':
        multiplier = 1ull << 10;
        break;
      case 'M':
        multiplier = 1ull << 20;
        break;
      case 'G':
        multiplier = 1ull << 30;
        break;
      default:
        break;
    }
    if (multiplier != 1) digits.pop_back();
  }
  uint64_t count = 0;
  if (digits.empty() || !absl::SimpleAtoi(digits, &count) || count > UINT64_MAX / multiplier) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a byte size (examples: 4096, 512M, 2G)"));
  }
  return count * multiplier;
}

absl::StatusOr<RuntimeConfig> RuntimeConfig::FromEnvironment() {
  RuntimeConfig config;
  if (std::optional<std::string> devices = EnvironmentValue("VKSPMD_DEVICES");
      devices && !devices->empty()) {
    if (!absl::SimpleAtoi(*devices, &config.mesh_device_count) || config.mesh_device_count < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("VKSPMD_DEVICES=", *devices, " must be a positive integer"));
    }
  }
  if (std::optional<std::string> visible = EnvironmentValue("VKSPMD_VISIBLE_DEVICES")) {
    config.visible_devices.emplace();
    for (absl::string_view entry : absl::StrSplit(*visible, ',', absl::SkipWhitespace())) {
      config.visible_devices->emplace_back(absl::StripAsciiWhitespace(entry));
    }
  }
  VKSPMD_ASSIGN_OR_RETURN(config.allow_cpu_devices,
                          BoolFromEnvironment("VKSPMD_ALLOW_CPU_DEVICES"));
  VKSPMD_ASSIGN_OR_RETURN(config.validation, BoolFromEnvironment("VKSPMD_VALIDATION"));
  VKSPMD_ASSIGN_OR_RETURN(config.synchronization_validation,
                          BoolFromEnvironment("VKSPMD_VALIDATION_SYNC"));
  config.validation |= config.synchronization_validation;
  VKSPMD_ASSIGN_OR_RETURN(config.force_staging, BoolFromEnvironment("VKSPMD_FORCE_STAGING"));
  VKSPMD_ASSIGN_OR_RETURN(config.separate_logical_devices,
                          BoolFromEnvironment("VKSPMD_SEPARATE_LOGICAL_DEVICES"));
  VKSPMD_ASSIGN_OR_RETURN(config.shared_queues, BoolFromEnvironment("VKSPMD_SHARED_QUEUES"));
  if (std::optional<std::string> budget = EnvironmentValue("VKSPMD_DEVICE_MEMORY_BUDGET");
      budget && !budget->empty()) {
    absl::StatusOr<uint64_t> bytes = ParseByteSize(*budget);
    if (!bytes.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("VKSPMD_DEVICE_MEMORY_BUDGET: ", bytes.status().message()));
    }
    config.device_memory_budget = *bytes;
  }
  if (std::optional<std::string> timeout = EnvironmentValue("VKSPMD_SUBMIT_TIMEOUT_MS");
      timeout && !timeout->empty()) {
    if (!absl::SimpleAtoi(*timeout, &config.submit_timeout_ms) || config.submit_timeout_ms == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("VKSPMD_SUBMIT_TIMEOUT_MS=", *timeout, " must be a positive integer"));
    }
  }
  return config;
}

std::string RuntimeConfig::Describe() const {
  return absl::StrCat(
      "devices=", mesh_device_count == 0 ? "auto" : absl::StrCat(mesh_device_count),
      " visible=", visible_devices ? absl::StrJoin(*visible_devices, ",") : "all",
      " allow_cpu=", allow_cpu_devices, " validation=", validation,
      " sync_validation=", synchronization_validation, " force_staging=", force_staging,
      " separate_logical_devices=", separate_logical_devices, " shared_queues=", shared_queues,
      " budget=", device_memory_budget ? absl::StrCat(*device_memory_budget) : "heap",
      " submit_timeout_ms=", submit_timeout_ms);
}

}  // namespace vkspmd::runtime
