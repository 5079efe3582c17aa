// Device tests: run a module on one device and compare with the CPU reference.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "src/exec/executable.h"
#include "src/interp/evaluator.h"
#include "tests/exec/literal_compare.h"

namespace vkspmd::testing {

// What a module computes for the same arguments on a device and on the CPU reference.
struct DeviceAndReference {
  ir::Literal device;
  ir::Literal reference;
};

// Evaluates `module` on the CPU reference and runs it compiled for `device`; an error's message
// starts with the step that failed ("reference: ", "compile: " or "run: ") and its status.
inline absl::StatusOr<DeviceAndReference> RunOnDeviceAndReference(
    const ir::Module& module, const std::vector<ir::Literal>& arguments,
    runtime::MeshDevice& device) {
  const auto failed = [](const char* step, const absl::Status& status) {
    return absl::Status(status.code(), absl::StrCat(step, ": ", status.ToString()));
  };
  absl::StatusOr<ir::Literal> reference = interp::Evaluate(module, arguments);
  if (!reference.ok()) return failed("reference", reference.status());
  absl::StatusOr<std::unique_ptr<exec::Executable>> executable =
      exec::Executable::Compile(module, device);
  if (!executable.ok()) return failed("compile", executable.status());
  absl::StatusOr<ir::Literal> result = (*executable)->Run(arguments);
  if (!result.ok()) return failed("run", result.status());
  return DeviceAndReference{*std::move(result), *std::move(reference)};
}

// "" when the device's result equals the reference (CompareLiterals, floats within `relative`),
// else what differs or failed.
inline std::string DeviceDiffersFromReference(const ir::Module& module,
                                              const std::vector<ir::Literal>& arguments,
                                              runtime::MeshDevice& device, double relative = 1e-4) {
  absl::StatusOr<DeviceAndReference> results = RunOnDeviceAndReference(module, arguments, device);
  if (!results.ok()) return std::string(results.status().message());
  return CompareLiterals(results->device, results->reference, relative);
}

}  // namespace vkspmd::testing
