// mark_sharding and ShardedTensor: the PyTorch/XLA sharding model (the XLAShardedTensor RFC).
// Marking device data reshards it; marking an intermediate adds a sharding constraint that
// propagation must honour. A ShardedTensor is a Tensor (usable wherever one is) that also answers
// what its sharding is and which shard each device holds.
#pragma once

#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#include "vkspmd/host_tensor.h"
#include "vkspmd/mesh.h"
#include "vkspmd/sharding.h"
#include "vkspmd/tensor.h"

namespace vkspmd {

// [start, stop) of one dim.
struct IndexRange {
  int64_t start = 0;
  int64_t stop = 0;
  bool operator==(const IndexRange&) const = default;
};

// What one device holds: the global index ranges of its shard, the shard as stored (padded to
// the common shard shape, padding zero) and without the padding.
struct LocalShard {
  int64_t device = 0;
  std::vector<IndexRange> indices;
  HostTensor data;
  HostTensor unpadded_data;
};

class ShardedTensor : public Tensor {
 public:
  explicit ShardedTensor(const Tensor& tensor) : Tensor(tensor) {}

  // The same tensor as a plain Tensor (its global view).
  Tensor global_tensor() const { return Tensor(*this); }
  // Per device of the mesh, its shard after execution (runs what is pending).
  std::vector<LocalShard> local_shards(
      std::source_location where = std::source_location::current()) const;
  // The HLO sharding text, e.g. "{devices=[2,4]0,1,2,3,4,5,6,7}". For a value not computed yet
  // it is the sharding propagation gives it, computed without executing.
  std::string sharding_spec() const;
  ShardingType sharding_type() const;
  const Mesh& mesh() const;
};

// Shards `tensor` over `mesh` by `spec` (one entry per dim). Marks the tensor itself (as
// PyTorch/XLA does) and returns it as a ShardedTensor. Throws for a spec whose length differs
// from the rank, an unknown axis, or a tensor already sharded differently (clear it first).
ShardedTensor mark_sharding(const Tensor& tensor, const Mesh& mesh, const PartitionSpec& spec);
// The same over the global mesh.
ShardedTensor mark_sharding(const Tensor& tensor, const PartitionSpec& spec);
// Shards `tensor` exactly as `reference` was marked (same mesh, same spec), for values that must
// live where another does: optimizer state beside its parameter. A reference without a
// mark_sharding leaves the tensor as it is. The shapes must be equal.
ShardedTensor mark_sharding_like(const Tensor& tensor, const Tensor& reference);
// Removes the tensor's sharding annotation; its data stays where it is until marked again.
void clear_sharding(const Tensor& tensor);
// The sharding text of any tensor ("" for a tensor without a mesh).
std::string sharding_spec(const Tensor& tensor);
// PyTorch/XLA's visualize_tensor_sharding: the tiles of the tensor's first two dims (as
// sharding_spec gives the sharding) drawn as a table with box-drawing characters, each tile
// labelled with the devices holding it and its index ranges; `color` adds ANSI colours. A tensor
// without a mesh is one tile on device 0.
std::string visualize_tensor_sharding(const Tensor& tensor, bool color = false);
// The same picture as an SVG document (tile sizes follow the shard sizes).
std::string sharding_svg(const Tensor& tensor);

}  // namespace vkspmd
