// Device tests: run a module on one device and compare with the CPU reference.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/exec/executable.h"
#include "src/interp/evaluator.h"
#include "tests/exec/literal_compare.h"

namespace vkspmd::testing {

// "" when the device's result equals the reference (CompareLiterals, floats within `relative`),
// else what differs or failed.
inline std::string DeviceDiffersFromReference(const ir::Module& module,
                                              const std::vector<ir::Literal>& arguments,
                                              runtime::MeshDevice& device, double relative = 1e-4) {
  absl::StatusOr<ir::Literal> reference = interp::Evaluate(module, arguments);
  if (!reference.ok()) return "reference: " + reference.status().ToString();
  absl::StatusOr<std::unique_ptr<exec::Executable>> executable =
      exec::Executable::Compile(module, device);
  if (!executable.ok()) return "compile: " + executable.status().ToString();
  absl::StatusOr<ir::Literal> result = (*executable)->Run(arguments);
  if (!result.ok()) return "run: " + result.status().ToString();
  return CompareLiterals(*result, *reference, relative);
}

}  // namespace vkspmd::testing
