// Verifies a Module: every instruction's shape equals the inferred one, attributes are consistent,
// shardings fit their shapes, computations are well formed. Errors name the instruction.
#pragma once

#include "absl/status/status.h"
#include "src/ir/module.h"

namespace vkspmd::ir {

// InvalidArgument "L:C: %name: message" (position when the module came from text).
absl::Status VerifyModule(const Module& module);

}  // namespace vkspmd::ir
