// GLSL for sort on devices, as the body of a fused value's function `T vN(uint i)` computing
// element i of operand k's sorted copy: the element of its row whose stable rank under the
// comparator is i's position (a rank count per candidate, so rows of at most kMaxSortRow
// elements keep each invocation within the per-invocation loop bound; PlanProgram turns longer
// sorts into bitonic networks first, ir/sort_expansion.h).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "src/codegen/kernel_writer.h"
#include "src/ir/instruction.h"

namespace vkspmd::codegen {

inline constexpr int64_t kMaxSortRow = 64;

// UNIMPLEMENTED for longer rows and for comparators using ops other than parameters, scalar
// constants, compare (TOTALORDER on f32 included), and, or, xor, not and select.
absl::StatusOr<std::string> SortCode(const ir::Instruction& sort, int64_t operand,
                                     KernelWriter& writer);

}  // namespace vkspmd::codegen
