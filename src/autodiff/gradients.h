// Reverse-mode automatic differentiation as an IR-to-IR transformation: from a module computing a
// scalar loss, a module computing the loss and its gradients with respect to chosen parameters,
// made of ordinary IR ops so every later pass (partitioning included) treats it like any program.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/module.h"

namespace vkspmd::autodiff {

// The loss is the entry's root, or element `loss_index` of a root tuple. It must be a floating
// scalar. The result's entry takes the same parameters and returns
// (loss, d loss/d parameter wrt[0], d loss/d parameter wrt[1], ...). Parameters the loss does not
// depend on get zero gradients. Integer and predicate paths stop the gradient; an op on the path
// without a gradient rule is an error naming it. A while whose trip count is known and a
// conditional are differentiated through their lowering (ir/control_flow_lowering.h): the
// result has them unrolled and if-converted; a loop of unknown trip count is an error naming it.
absl::StatusOr<std::unique_ptr<ir::Module>> Gradients(const ir::Module& module,
                                                      std::optional<int64_t> loss_index,
                                                      const std::vector<int64_t>& wrt);

// The same, also telling which instruction of `module`'s entry each forward instruction of the
// result was copied from, so a caller holding the forward values (the lazy Tensor API) can reuse
// them instead of computing the forward pass twice.
struct GradientModule {
  std::unique_ptr<ir::Module> module;
  // Copy in the result's entry -> the instruction of `module` it was copied from.
  std::map<const ir::Instruction*, const ir::Instruction*> copied_from;
};
absl::StatusOr<GradientModule> GradientsWithForward(const ir::Module& module,
                                                    std::optional<int64_t> loss_index,
                                                    const std::vector<int64_t>& wrt);

}  // namespace vkspmd::autodiff
