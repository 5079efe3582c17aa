// TensorState: what a public Tensor refers to. The node is the tensor's current value (assign
// replaces it); the annotation is its sharding from mark_sharding, which assign keeps.
#pragma once

#include <memory>
#include <optional>

#include "src/lazy/node.h"
#include "src/spmd/axis_sharding.h"
#include "vkspmd/mesh.h"

namespace vkspmd::lazy {

struct ShardingAnnotation {
  Mesh mesh;
  PlacementPtr placement;
  spmd::AxisSharding sharding;
};

struct TensorState {
  NodePtr node;
  std::optional<ShardingAnnotation> annotation;
  // The device value this tensor held when it was first assigned a new value since the last
  // sync/mark_step. When nothing else still refers to it, the step's graph takes it as a donated
  // argument and writes the new value into its buffers (see Context::SyncAll).
  NodePtr replaced;
  // backward() sets `grad` (a registered tensor of its own) for tensors with requires_grad.
  bool requires_grad = false;
  std::shared_ptr<TensorState> grad;
};

}  // namespace vkspmd::lazy
