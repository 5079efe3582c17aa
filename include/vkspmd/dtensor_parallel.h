// PyTorch's tensor-parallel plans (torch.distributed.tensor.parallel): parallelize_module with
// Colwise/Rowwise/SequenceParallel/FullyShard styles for vkspmd::nn layers over a DeviceMesh, and
// the plans of the dp / tp / dp+tp / fsdp strategies.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "vkspmd/dtensor.h"
#include "vkspmd/nn.h"

namespace vkspmd {

// The layout options of PyTorch's styles. `input_layouts` constrains the module's forward
// input, `output_layouts` its output, each a Shard(dim) or Replicate() over the tensor-parallel
// axis (dim 0 also stays split over parallelize_module's data axis). Unset (the default) leaves
// the activation to sharding propagation, which for the Megatron pairs gives PyTorch's defaults.
// PyTorch's use_local_output has no counterpart: a vkspmd module always returns the global
// (lazy) Tensor, laid out as output_layouts says.

// Linear: the weight [out, in] as Shard(0) and the bias as Shard(0) (output features split);
// Embedding: the table as Shard(1) (embedding dim split).
struct ColwiseParallel {
  std::optional<Placement> input_layouts;
  std::optional<Placement> output_layouts;
};
// Linear: the weight as Shard(1) (input features split), the bias replicated (added after the
// partial sums are all-reduced); Embedding: the table as Shard(0) (vocabulary split).
// output_layouts = Shard(1) on a [batch, sequence, features] output is Megatron's
// reduce-scatter into a SequenceParallel region.
struct RowwiseParallel {
  std::optional<Placement> input_layouts;
  std::optional<Placement> output_layouts;
};
// PyTorch's SequenceParallel for LayerNorm: its input and output [batch, sequence, ...] have the
// sequence dim (1) split over the axis, its weight and bias replicated; the partitioner reshards
// between it and the Rowwise/Colwise layers around it (Megatron sequence parallelism). vkspmd
// has no Dropout module, so LayerNorm is the only type it takes.
struct SequenceParallel {};
// PyTorch's fully_shard (FSDP) as a style for any module: every parameter of the module and of
// its submodules is split on one dim over parallelize_module's data axis; the partitioner
// all-gathers it where it is used and reduce-scatters its gradient. `dim` unset splits each
// parameter's largest dim (the first of equal ones: PyTorch/XLA FSDPv2's shard_maximal, what
// nn::fsdp_v2 does); set, that dim (negative from the end; PyTorch's default is Shard(0)).
// Scalars stay replicated. With a tensor-parallel style on the same parameter both apply (one
// dim split over both axes, the mesh's first major, when they name the same dim).
struct FullyShard {
  std::optional<int64_t> dim;
};
using ParallelStyle = std::variant<ColwiseParallel, RowwiseParallel, SequenceParallel, FullyShard>;

// (dotted module name as Module::named_modules gives it, or "" for the module itself; style),
// e.g. {{"fc1", ColwiseParallel{}}, {"fc2", RowwiseParallel{}}}.
using ParallelizePlan = std::vector<std::pair<std::string, ParallelStyle>>;

// Marks the parameters of each planned module with its style's placements over mesh axis `axis`
// (the only axis of a 1-D mesh when empty; not needed for an empty plan); every other parameter
// is replicated over the mesh. With `data_axis`, the model's inputs (Module::shard_input: tokens,
// features, targets) are split on their batch dim over that axis, as data parallelism places
// them. Activations follow by sharding propagation (Colwise then Rowwise keeps the hidden
// activation split and ends with one all-reduce, as Megatron) unless a style's layouts say
// otherwise. Call it on a freshly built model, before its first forward. Throws for an unknown
// module name, a style the module's type has no rule for, a Partial layout, or an axis the mesh
// lacks; FullyShard without a data axis or with a dim a parameter lacks.
void parallelize_module(nn::Module& module, const DeviceMesh& mesh, const ParallelizePlan& plan,
                        const std::string& axis = "", const std::string& data_axis = "");

// Megatron's plan for a vkspmd::nn model, the one nn::tensor_parallel applies: every Linear
// built column-parallel is ColwiseParallel, every row-parallel one and every vocabulary-parallel
// Embedding RowwiseParallel (NamedParameter::tensor_parallel_dim says which), in
// named_modules() order. So, as parallelize_module plans, on a mesh with axes "dp" and "tp":
//   dp     parallelize_module(model, mesh, {}, "", "dp")
//   tp     parallelize_module(model, mesh, tensor_parallel_plan(model), "tp")
//   dp+tp  parallelize_module(model, mesh, tensor_parallel_plan(model), "tp", "dp")
//   fsdp   parallelize_module(model, mesh, {{"", FullyShard{}}}, "", "fsdp")
// give the strategies' parameter shardings and input placements (docs/dtensor.md).
ParallelizePlan tensor_parallel_plan(const nn::Module& module);

}  // namespace vkspmd
