// GLSL → SPIR-V at run time through the glslang library, and SPIR-V validation with SPIRV-Tools.
// Every generated module is validated before a device sees it, so a codegen bug is a clear error
// here rather than a driver crash.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vkspmd::codegen {

// Compiles one GLSL compute shader (with its own #version line) for Vulkan 1.3 and validates the
// result. `name` identifies the kernel in errors; a compile error quotes the failing GLSL line:
//   kernel 'add' failed to compile: line 7: 'x' : undeclared identifier
//       7 |   y[i] = x;
absl::StatusOr<std::vector<uint32_t>> CompileComputeShader(absl::string_view glsl,
                                                           absl::string_view name);

// Everything besides the GLSL that decides CompileComputeShader's output: the target
// environments, the options and the glslang and SPIRV-Tools versions. Part of the persistent
// compile cache's key, so upgrading either library or changing an option misses.
std::string ShaderCompilerIdentity();

// INVALID_ARGUMENT naming the kernel and the validator's message when `spirv` is not a valid
// Vulkan 1.3 module.
absl::Status ValidateSpirv(std::span<const uint32_t> spirv, absl::string_view name);

}  // namespace vkspmd::codegen
