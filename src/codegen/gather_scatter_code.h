// GLSL for gather and scatter, as the body of a fused value's function `T vN(uint i)`: a gather
// element reads its index vector and then one operand element; a scatter element starts from the
// operand's element and applies, in order, every update whose window covers it (a serial pass per
// output element: deterministic for any combiner, no atomics).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "src/codegen/kernel_writer.h"
#include "src/ir/instruction.h"

namespace vkspmd::codegen {

absl::StatusOr<std::string> GatherCode(const ir::Instruction& gather, KernelWriter& writer);
// UNIMPLEMENTED for more than kMaxElementsPerInvocation scatter positions (the loop per element
// would pass llvmpipe's iteration limit) and for combiners CombinerCode does not know.
absl::StatusOr<std::string> ScatterCode(const ir::Instruction& scatter, KernelWriter& writer);

}  // namespace vkspmd::codegen
