// Sharding strategies for vkspmd::nn models: each only marks parameters with mark_sharding and
// sets the model's plan for activation constraints; the SPMD partitioner inserts the
// collectives. Call a strategy once, on a freshly built model, before its first forward.
// Errors (an axis the mesh lacks, heads not divisible by the model axis) throw vkspmd::Error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vkspmd/mesh.h"
#include "vkspmd/nn.h"

namespace vkspmd::nn {

// Data parallel: every parameter replicated over the mesh; inputs and activations split on
// their batch dim over `data_axis`.
void data_parallel(Module& model, const Mesh& mesh, const std::string& data_axis = "dp");

// Megatron tensor parallelism over `model_axis`: each parameter split on its
// NamedParameter::tensor_parallel_dim (column-parallel Linear: weight dim 0 and bias;
// row-parallel: weight dim 1; vocab-parallel Embedding: dim 0), the rest replicated; inputs
// replicated. Throws when an attention's heads are not divisible by the axis size.
void tensor_parallel(Module& model, const Mesh& mesh, const std::string& model_axis = "tp");

// Both on a 2-D mesh: the batch over `data_axis`, Megatron over `model_axis`.
void data_tensor_parallel(Module& model, const Mesh& mesh, const std::string& data_axis = "dp",
                          const std::string& model_axis = "tp");

// FSDP via SPMD (PyTorch/XLA's FSDPv2 with shard_maximal): every parameter's largest dim (the
// first of equal ones) split over `fsdp_axis`, inputs and activations split on their batch dim
// over it. The partitioner all-gathers each parameter before use (and reduce-scatters its
// gradient).
void fsdp_v2(Module& model, const Mesh& mesh, const std::string& fsdp_axis = "fsdp");

// By name, as `vkspmd train --strategy` spells them: "dp", "tp", "dp+tp" or "fsdp", with the
// default axis names above. Throws for any other name.
void apply_strategy(Module& model, const Mesh& mesh, const std::string& strategy);

// The mesh a strategy expects for `shape` (as `vkspmd train --mesh 2x2` gives it), over devices
// 0..N-1: "dp", "tp" and "fsdp" use every device along one axis of that name (a 2x2 shape
// becomes 4 devices in a row), "dp+tp" a 2-D shape with axes ("dp", "tp") (a 1-D shape [n]
// becomes [1, n]). Throws for an unknown strategy or a "dp+tp" shape of more than 2 dims.
Mesh strategy_mesh(const std::string& strategy, const std::vector<int64_t>& shape);

}  // namespace vkspmd::nn
