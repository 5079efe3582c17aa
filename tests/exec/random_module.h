// A generator of random well-typed single-device modules for differential testing of the device
// compiler against the CPU reference: f32 and s32 values through elementwise, shape, reduce and
// dot ops, with operand domains kept where both sides compute well-conditioned results.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/module.h"

namespace vkspmd::testing {

// Arguments for the entry's parameters: floats uniform in [low, high], integers in [-40, 40],
// predicates 0 or 1. The same seed gives the same values.
std::vector<ir::Literal> RandomArguments(const ir::Module& module, uint32_t seed, double low = -2,
                                         double high = 2);

// A module of about `operations` instructions (plus parameters and constants), its root a tuple of
// the last values made, its float values of `float_type` (f32, f16 or bf16). The same seed gives
// the same module.
absl::StatusOr<std::unique_ptr<ir::Module>> RandomModule(uint32_t seed, int operations,
                                                         ir::DType float_type = ir::DType::kF32);

}  // namespace vkspmd::testing
