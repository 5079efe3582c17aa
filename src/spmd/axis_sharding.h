// The partitioner's own view of a sharding: per tensor dim the mesh axes that split it (major
// first, Shardy's named-axis form; unused axes replicate). Converts to and from ir::Sharding over
// a Mesh and answers the shard geometry questions (shard shape, which shard a device holds).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/shape.h"
#include "src/ir/sharding.h"
#include "src/spmd/mesh.h"

namespace vkspmd::spmd {

struct AxisSharding {
  // dims[d] = mesh axes splitting tensor dim d, major first; the dim is split into the product
  // of their sizes.
  std::vector<std::vector<int64_t>> dims;
  // Set for a maximal sharding: the whole tensor lives on this device only.
  std::optional<int64_t> maximal_device;
  // A value inside a manual region: each device holds its own value of the (per-device) shape,
  // written by the user's own code.
  bool manual = false;
  // The device ids laid out in the mesh's shape for this value, in place of the mesh's own order
  // (empty: the mesh's order). A tile assignment that is no transpose of the mesh's device array,
  // such as {devices=[2,1]1,0} on a [2] mesh, is the axes over a mesh permuted this way.
  std::vector<int64_t> device_order;
  // A partially manual value (a manual subgroup, JAX's shard_map with auto= axes): manual over
  // these mesh axes (ascending), each group of devices that share their coordinates on them
  // (in `device_order`'s layout, if it has one) holding its own value of the (per-group) shape,
  // split over the other axes by `dims`, which never name these. Collectives then run along
  // other axes only, within each group.
  std::vector<int64_t> manual_axes;

  static AxisSharding Replicated(int64_t rank) {
    return AxisSharding{std::vector<std::vector<int64_t>>(rank), std::nullopt, false, {}, {}};
  }
  static AxisSharding Manual(int64_t rank) {
    return AxisSharding{std::vector<std::vector<int64_t>>(rank), std::nullopt, true, {}, {}};
  }
  // Maximal and manual values are not split over mesh axes; propagation leaves them alone.
  // Partially manual values are not special: their other axes are partitioned as usual.
  bool IsSpecial() const { return maximal_device.has_value() || manual; }
  bool IsPartiallyManual() const { return !manual_axes.empty(); }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  // No dim split and nothing manual: the same value on every device.
  bool IsReplicated() const;
  // Every axis used by some dim, in dim order.
  std::vector<int64_t> UsedAxes() const;
  // How many ways dim d is split.
  int64_t TilesOn(int64_t d, const Mesh& mesh) const { return mesh.SizeOf(dims[d]); }
  int64_t NumTiles(const Mesh& mesh) const;
  // The same axes in the mesh's own device order.
  AxisSharding InMeshOrder() const;
  // "[{dp}, {}]" with axis labels of the mesh (and " devices 1,0" for a device order,
  // " manual {y}" for a partially manual value); "maximal device=3"; "manual".
  std::string ToString(const Mesh& mesh) const;
  bool operator==(const AxisSharding& other) const = default;
};

// The mesh whose device array lays out a value under `sharding`: `mesh` with the sharding's
// device order, if it has one.
Mesh LayoutMesh(const AxisSharding& sharding, const Mesh& mesh);
// Split, or partially manual: either way laid out by its device order (a partially manual
// value's manual groups are the devices sharing a manual index in that order), so ops and
// propagation must keep the order it has.
bool IsLaidOutByDeviceOrder(const AxisSharding& sharding, const Mesh& mesh);

// The HLO sharding of an axis sharding, built as PyTorch/XLA and JAX do (GSPMD-NOTES 1.3):
// sharded axes in dim order, unused axes (ascending) form the last_tile_dim_replicate group;
// no sharded axis is REPLICATED, a one-device mesh is MAXIMAL. Iota meshes give the iota form.
// Manual axes form a manual subgroup dim before the replicated one, as XLA orders them
// (last_tile_dims={manual, replicated}).
ir::Sharding ToHloSharding(const AxisSharding& sharding, const Mesh& mesh);

// The axis sharding of an HLO sharding for a tensor of `rank` dims on `mesh`: found by trying
// every assignment of the mesh's axes to dims, in the mesh's device order when one fits, else in
// the device order the tile assignment gives (any explicit or iota tile assignment over all the
// mesh's devices whose tile counts are products of its axes). Replicated subgroups
// (last_tile_dims={replicated, ...}) count as one replication dim; a manual subgroup dim gives
// the manual axes (in a device order too, where its groups are not along the mesh's axes: the
// groups are then the devices sharing a manual index in that order). Errors when it is not
// expressible over the mesh (the message names both), for tuple shardings and shardings over
// only some of the mesh's devices.
// Among other device orders, the first of `preferred_orders` (orders other values use) that
// expresses the sharding is taken.
absl::StatusOr<AxisSharding> FromHloSharding(
    const ir::Sharding& sharding, const Mesh& mesh, int64_t rank,
    const std::vector<std::vector<int64_t>>& preferred_orders = {});

// Padded shard shape: ceil(dim / tiles) per dim (GSPMD's MakePartitionedShape); every device's
// buffer has this shape.
ir::Shape ShardShape(const ir::Shape& shape, const AxisSharding& sharding, const Mesh& mesh);
// Which shard of dim d a device holds (0 when the dim is not split).
int64_t ShardIndex(const AxisSharding& sharding, int64_t d, const Mesh& mesh, int64_t device);
// Start of the device's shard in dim d (clamped to the dim for empty trailing shards), and the
// number of valid (non-padding) elements there.
int64_t ShardOffset(const ir::Shape& shape, const AxisSharding& sharding, int64_t d,
                    const Mesh& mesh, int64_t device);
int64_t ShardValidSize(const ir::Shape& shape, const AxisSharding& sharding, int64_t d,
                       const Mesh& mesh, int64_t device);

// Number of bytes of an array shape.
int64_t ByteSize(const ir::Shape& shape);

}  // namespace vkspmd::spmd
