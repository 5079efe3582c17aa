// Autodiff of the lazy trace: the pending graph of a loss is lowered to a module, differentiated
// by src/autodiff, and the gradient module's instructions become lazy op nodes again, so the
// gradients are ordinary pending values traced into the same step graph as the forward pass
// (whose nodes they reuse rather than recompute). A repeated loss graph replays its recorded
// gradient nodes instead.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "src/lazy/node.h"

namespace vkspmd::lazy {

struct GradientNodes {
  // Per variable, d loss / d variable (the variable's shape and type).
  std::vector<NodePtr> gradients;
  // Per variable, whether the loss's trace reaches it; an unreached variable's gradient is zero.
  std::vector<bool> reached;
};

// `loss` must be a floating-point scalar and every variable floating-point. A variable may be a
// leaf (data: a parameter) or a pending op node (an intermediate); either is differentiated as
// an independent input. Errors name the loss's or variable's shape, or the op without a gradient
// rule.
//
// The gradient nodes of a loss graph are recorded per graph signature (see Signature) and set of
// variables, and a later loss graph of the same signature replays them over its own nodes
// instead of lowering and differentiating again (a training step's backward pass costs its
// forward's hashing). VKSPMD_GRADIENT_CACHE=0 differentiates every time;
// VKSPMD_CHECK_GRADIENT_CACHE=1 does too and fails a replay that differs.
absl::StatusOr<GradientNodes> Differentiate(const NodePtr& loss,
                                            const std::vector<NodePtr>& variables);

// How many times a loss graph was differentiated (src/autodiff ran) and how many times recorded
// gradients were replayed instead, in this process (tests pin that a repeated step
// differentiates once).
int64_t DifferentiationCount();
int64_t GradientCacheHits();

}  // namespace vkspmd::lazy
