// PyTorch's tensor-parallel plans (torch.distributed.tensor.parallel): parallelize_module with
// ColwiseParallel and RowwiseParallel styles for vkspmd::nn layers, over a DeviceMesh.
#pragma once

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "vkspmd/dtensor.h"
#include "vkspmd/nn.h"

namespace vkspmd {

// Linear: the weight [out, in] as Shard(0) and the bias as Shard(0) (output features split);
// Embedding: the table as Shard(1) (embedding dim split).
struct ColwiseParallel {};
// Linear: the weight as Shard(1) (input features split), the bias replicated (added after the
// partial sums are all-reduced); Embedding: the table as Shard(0) (vocabulary split).
struct RowwiseParallel {};
// PyTorch's SequenceParallel for LayerNorm: its input and output [batch, sequence, ...] have the
// sequence dim (1) split over the axis, its weight and bias replicated; the partitioner reshards
// between it and the Rowwise/Colwise layers around it (Megatron sequence parallelism). vkspmd
// has no Dropout module, so LayerNorm is the only type it takes.
struct SequenceParallel {};
using ParallelStyle = std::variant<ColwiseParallel, RowwiseParallel, SequenceParallel>;

// (dotted module name as Module::named_modules gives it, style), e.g.
// {{"fc1", ColwiseParallel{}}, {"fc2", RowwiseParallel{}}}.
using ParallelizePlan = std::vector<std::pair<std::string, ParallelStyle>>;

// Marks the parameters of each planned module with its style's placements over mesh axis `axis`
// (the only axis of a 1-D mesh when empty); every other parameter is replicated over the mesh.
// Activations follow by sharding propagation (Colwise then Rowwise keeps the hidden activation
// split and ends with one all-reduce, as Megatron). Call it on a freshly built model, before its
// first forward. Throws for an unknown module name, a style the module's type has no rule for,
// or an axis the mesh lacks.
void parallelize_module(nn::Module& module, const DeviceMesh& mesh, const ParallelizePlan& plan,
                        const std::string& axis = "");

}  // namespace vkspmd
