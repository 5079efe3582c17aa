// TensorState: what a public Tensor refers to. The node is the tensor's current value (assign
// replaces it); the annotation is its sharding from mark_sharding, which assign keeps.
#pragma once

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
};

}  // namespace vkspmd::lazy
