// Horizontal fusion, a pass over a planned program: independent map kernels become one dispatch,
// each over its own range of invocations. On CPU drivers every dispatch costs tens of us however
// small, and an optimizer updates each parameter by a small kernel of its own.
#pragma once

#include "src/codegen/kernel_plan.h"
#include "src/codegen/target_info.h"

namespace vkspmd::codegen {

// Folds an earlier map kernel (with the parts it absorbed) into a later map kernel K as parts of
// K's dispatch when none reads what another writes, and moving the earlier one down to K's place
// changes no kernel's result: no kernel between them reads what it writes or writes what it reads
// or writes. A donated output counts as its parameter's buffer. Kernels keep their local size and
// stay within the target's binding limit. Returns how many kernels it removed. Run last: it reads
// the donations, and later passes see only a part's kernel, not its parts.
int FuseIndependentMapKernels(ProgramPlan& plan, const TargetInfo& target);

}  // namespace vkspmd::codegen
