// The SPIR-V of every kernel in tests/shaders/, compiled and validated at build time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vkspmd::shaders {

// The SPIR-V words of tests/shaders/<name>.comp; NOT_FOUND naming the known kernels otherwise.
absl::StatusOr<std::span<const uint32_t>> EmbeddedShader(absl::string_view name);

// Names of all embedded kernels, sorted.
std::vector<absl::string_view> EmbeddedShaderNames();

}  // namespace vkspmd::shaders
