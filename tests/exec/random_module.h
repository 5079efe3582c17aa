// A generator of random well-typed single-device modules for differential testing of the device
// compiler against the CPU reference: f32 and s32 values through elementwise, shape, reduce and
// dot ops, with operand domains kept where both sides compute well-conditioned results.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "src/ir/module.h"

namespace vkspmd::testing {

// A module of about `operations` instructions (plus parameters and constants), its root a tuple of
// the last values made. The same seed gives the same module.
absl::StatusOr<std::unique_ptr<ir::Module>> RandomModule(uint32_t seed, int operations);

}  // namespace vkspmd::testing
