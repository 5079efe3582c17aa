// Element-wise combination of host arrays: one typed loop per (type, op) pair, chosen once per
// call, so the compiler vectorises it and nothing is dispatched per element.
#pragma once

#include <cstddef>
#include <span>

#include "absl/status/status.h"
#include "src/collectives/communicator.h"

namespace vkspmd::collectives {

// accumulator[i] = op(accumulator[i], operand[i]) for every element; both spans hold whole
// elements of `type` and have equal sizes. INVALID_ARGUMENT for and/or on floats.
absl::Status CombineInto(std::span<std::byte> accumulator, std::span<const std::byte> operand,
                         ElementType type, ReduceOp op);

// Whether `op` applies to `type` (and/or need integers or predicates).
bool ReductionApplies(ElementType type, ReduceOp op);

}  // namespace vkspmd::collectives
