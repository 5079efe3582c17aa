// Width-changing bitcast-convert (f32[n] -> u8[n,4], u16[n,2] -> f32[n]) as ops the device
// compiler has: same-width bitcasts to unsigned integers, shifts, converts and ors. Kernels
// compute one element per invocation, and such a bitcast is not elementwise; written out it is,
// and it fuses into the kernels around it.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "src/ir/module.h"

namespace vkspmd::ir {

// Whether `module`'s entry holds a bitcast-convert between types of different widths.
bool HasWidthChangingBitcast(const Module& module);

// A copy of `module` whose entry computes each width-changing bitcast-convert with same-width
// ones: to a narrower type, element k of the added last dim is the wide element's bits shifted
// right by k narrow widths and truncated; to a wider one, the narrow elements shifted left by k
// widths and or-ed. The same bits as the reference's memory cast (ir::BitcastConvertShape).
absl::StatusOr<std::unique_ptr<Module>> ExpandWidthChangingBitcasts(const Module& module);

}  // namespace vkspmd::ir
