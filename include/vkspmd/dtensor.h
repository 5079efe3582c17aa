// PyTorch's DTensor API over vkspmd's sharding: DeviceMesh, per-mesh-axis placements (Shard,
// Replicate, Partial), distribute_tensor, from_local, redistribute, to_local, full_tensor.
#pragma once

#include <cstdint>
#include <source_location>
#include <string>
#include <variant>
#include <vector>

#include "vkspmd/mesh.h"
#include "vkspmd/tensor.h"

namespace vkspmd {

// PyTorch's DeviceMesh: `device_ids` (any mesh devices, in any order) laid out row-major in
// `shape`, one name per axis or none. Throws vkspmd::Error for a size mismatch, a device given
// twice or one that does not exist.
class DeviceMesh {
 public:
  DeviceMesh(std::vector<int64_t> device_ids, std::vector<int64_t> shape,
             std::vector<std::string> axis_names = {});
  explicit DeviceMesh(Mesh mesh) : mesh_(std::move(mesh)) {}

  const Mesh& mesh() const { return mesh_; }
  const std::vector<int64_t>& shape() const { return mesh_.shape(); }
  const std::vector<int64_t>& device_ids() const { return mesh_.device_ids(); }
  const std::vector<std::string>& axis_names() const { return mesh_.axis_names(); }
  int64_t ndim() const { return static_cast<int64_t>(mesh_.shape().size()); }
  int64_t size() const { return mesh_.size(); }
  // The size of one axis (by index or name).
  int64_t size(int64_t axis) const;
  int64_t size(const std::string& axis_name) const { return size(mesh_.axis_index(axis_name)); }
  std::string to_string() const;
  bool operator==(const DeviceMesh& other) const = default;

 private:
  Mesh mesh_;
};

// PyTorch's init_device_mesh: `shape` over the job's mesh devices 0 .. prod(shape) - 1 in
// row-major order (in a job of several processes, process p's devices follow those of processes
// 0 .. p-1, so a leading axis of process_count() spans the processes). Throws when the job has
// fewer devices. Call distributed::initialize() first in a job of several processes.
DeviceMesh init_device_mesh(const std::vector<int64_t>& shape,
                            std::vector<std::string> axis_names = {});
// A hybrid mesh (PyTorch's HSDP meshes, ("dp_replicate", "dp_shard")): an outer axis over the
// processes of the job, the first of `axis_names`, then `inner_shape` over each process's own
// devices (distributed::addressable_devices()). Collectives along the inner axes stay inside
// each process; along the outer axis they cross processes. One process gives an outer axis of
// size 1. The mesh is rectangular (as PyTorch's and JAX's): when a process does not drive
// prod(inner_shape) devices every process throws, naming each process's device count
// (init_device_mesh takes any counts); also for a name count other than 1 + inner_shape.size()
// (none is fine).
DeviceMesh hybrid_device_mesh(const std::vector<int64_t>& inner_shape,
                              std::vector<std::string> axis_names = {});

// The reduction a Partial placement holds pending.
enum class ReduceOp { kSum, kAvg, kMax, kMin };

// Tensor dim `dim` (negative counts from the end) split over the mesh axis, as torch.chunk
// splits it: chunks of ceil(size / n), the last ones shorter or empty.
struct Shard {
  int64_t dim = 0;
  bool operator==(const Shard&) const = default;
};
// The whole tensor on every device of the axis.
struct Replicate {
  bool operator==(const Replicate&) const = default;
};
// Every device of the axis holds a tensor of the full shape; the value is their reduction by
// `op`, done when the DTensor is redistributed, read (full_tensor) or used by an op.
struct Partial {
  ReduceOp op = ReduceOp::kSum;
  bool operator==(const Partial&) const = default;
};

// One mesh axis's placement.
class Placement {
 public:
  Placement(Shard shard) : value_(shard) {}              // NOLINT: {Shard{0}, Replicate{}}.
  Placement(Replicate replicate) : value_(replicate) {}  // NOLINT
  Placement(Partial partial) : value_(partial) {}        // NOLINT

  bool is_shard() const { return std::holds_alternative<Shard>(value_); }
  bool is_replicate() const { return std::holds_alternative<Replicate>(value_); }
  bool is_partial() const { return std::holds_alternative<Partial>(value_); }
  // The Shard's dim / the Partial's op; throws for another kind.
  int64_t dim() const;
  ReduceOp reduce_op() const;
  // "Shard(dim=0)", "Replicate()", "Partial(sum)".
  std::string to_string() const;
  bool operator==(const Placement& other) const = default;

 private:
  std::variant<Shard, Replicate, Partial> value_;
};
using Placements = std::vector<Placement>;

// A tensor laid out over a DeviceMesh by one placement per mesh axis. It is lazy like Tensor:
// nothing runs until a value is read. Errors throw vkspmd::Error.
class DTensor {
 public:
  const DeviceMesh& device_mesh() const { return mesh_; }
  const Placements& placements() const { return placements_; }
  // The global (logical) shape and type.
  const std::vector<int64_t>& shape() const { return shape_; }
  DType dtype() const { return stacked_.dtype(); }

  // The same value laid out by `placements` (on `mesh`, or on this mesh): the SPMD partitioner
  // moves the data with the cheapest collectives it knows (all-gather, all-to-all,
  // all-reduce / reduce-scatter for a Partial, a slice where data is already there).
  // Replicate -> Partial(sum) divides the value by the axis size on every device (PyTorch's
  // contract; an integer value goes to the axis's first device, zeros to the others, keeping
  // its dtype); -> Partial(avg/max/min) keeps it.
  DTensor redistribute(const DeviceMesh& mesh, const Placements& placements) const;
  DTensor redistribute(const Placements& placements) const {
    return redistribute(mesh_, placements);
  }
  // Each mesh device's local tensor, in the mesh's row-major order (device_mesh().device_ids()):
  // its chunk for Shard axes, its own addend for Partial axes. Runs what is pending.
  std::vector<Tensor> to_local(std::source_location where = std::source_location::current()) const;
  // The global value as a lazy Tensor replicated over the mesh (Partial axes reduced).
  Tensor full_tensor() const;
  std::string to_string() const;
  // What redistribute(mesh, placements) would run, without running it: the collectives the
  // partitioner emits for the graph computing the result, in order, as "all-gather along x"
  // (PyTorch's CommDebugMode counts). When this DTensor is itself still pending, the
  // collectives of its own computation are included.
  std::vector<std::string> redistribute_collectives(const DeviceMesh& mesh,
                                                    const Placements& placements) const;

 private:
  friend struct DTensorAccess;
  DeviceMesh mesh_{Mesh({1})};
  Placements placements_;
  std::vector<int64_t> shape_;
  // The value with one leading dim per Partial axis (in mesh order) holding each device's
  // addend, split over that axis; the other dims split as the Shard placements say.
  Tensor stacked_;
};

// `tensor` (the global value) laid out over `mesh` by `placements` (one per mesh axis). Partial
// placements give Replicate -> Partial's layout (an integer Partial(sum): the value on the axis's
// first device, zeros on the others). The tensor itself is left as it is.
DTensor distribute_tensor(const Tensor& tensor, const DeviceMesh& mesh,
                          const Placements& placements);
// A DTensor from each mesh device's local tensor (`locals` in the mesh's row-major order): Shard
// axes concatenate their locals along the dim (any chunk sizes), Replicate axes take the first
// coordinate's local, Partial axes reduce theirs. Local shapes must agree elsewhere. In a job of
// several processes each process passes only its own mesh devices' locals (in mesh order, as
// PyTorch's from_local takes the rank's shard), all of one shape and dtype; another count throws.
DTensor from_local(const std::vector<Tensor>& locals, const DeviceMesh& mesh,
                   const Placements& placements);

// Ops on DTensors of one mesh, placements propagated as PyTorch's DTensor rules do
// (docs/dtensor.md): matmul of a Shard(1) by a Shard(0) matrix over the same mesh axes, + and -
// of two Partial(sum), and * of a Partial(sum) by a Replicate give a pending Partial(sum) on that
// axis (each device computes its own addend, no collective); any other Partial operand is
// reduced first, and the result's other placements are what sharding propagation gives it.
DTensor operator+(const DTensor& a, const DTensor& b);
DTensor operator-(const DTensor& a, const DTensor& b);
DTensor operator*(const DTensor& a, const DTensor& b);
DTensor matmul(const DTensor& a, const DTensor& b);
// Unary elementwise ops, PyTorch's rules: neg is linear (a Partial(sum/avg) stays pending,
// Partial(max) becomes Partial(min) and the reverse), relu is non-decreasing (Partial(max/min)
// stay pending, a Partial(sum/avg) is reduced first, giving Replicate). Shard placements stay.
DTensor operator-(const DTensor& x);
DTensor neg(const DTensor& x);
DTensor relu(const DTensor& x);
// The sum over `dims` (negative from the end; empty: all), PyTorch's rule: a dim split over mesh
// axes leaves a pending Partial(sum) over them (each device sums its own chunk, no collective),
// a Partial(sum) stays pending, another Partial is reduced first; other Shard dims stay split.
DTensor sum(const DTensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);

}  // namespace vkspmd
