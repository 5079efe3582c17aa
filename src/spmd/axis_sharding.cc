// Axis shardings: conversion to HLO tile assignments (transpose of the mesh device array), the
// reverse search, and per-device shard geometry.
#include "src/spmd/axis_sharding.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include "absl/strings/str_join.h"
#include "fmt/format.h"

namespace vkspmd::spmd {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The iota form of the transposed mesh: drops size-1 axes and merges axes that stay adjacent
// and in order, so that e.g. an untransposed [2,4] mesh prints as <=[8] like XLA.
void SetCanonicalIota(const Mesh& mesh, const std::vector<int64_t>& permutation,
                      ir::DeviceArray& array) {
  std::vector<int64_t> kept;  // axes of size > 1 in permuted order
  for (int64_t axis : permutation) {
    if (mesh.axis_size(axis) > 1) kept.push_back(axis);
  }
  // Runs of axes that are neighbours both in the mesh (ignoring size-1 axes) and in the
  // permutation collapse into one reshape dim.
  std::vector<int64_t> in_mesh_order = kept;
  std::sort(in_mesh_order.begin(), in_mesh_order.end());
  const auto next_in_mesh = [&](int64_t axis) {
    const auto at = std::find(in_mesh_order.begin(), in_mesh_order.end(), axis);
    return at + 1 == in_mesh_order.end() ? int64_t{-1} : *(at + 1);
  };
  std::vector<std::vector<int64_t>> runs;
  for (int64_t axis : kept) {
    if (!runs.empty() && next_in_mesh(runs.back().back()) == axis) {
      runs.back().push_back(axis);
    } else {
      runs.push_back({axis});
    }
  }
  std::vector<std::vector<int64_t>> sorted_runs = runs;
  std::sort(sorted_runs.begin(), sorted_runs.end());
  array.is_iota = true;
  array.iota_reshape_dims.clear();
  for (const std::vector<int64_t>& run : sorted_runs)
    array.iota_reshape_dims.push_back(mesh.SizeOf(run));
  if (array.iota_reshape_dims.empty()) array.iota_reshape_dims.push_back(1);
  array.iota_transpose_perm.clear();
  bool identity = true;
  for (const std::vector<int64_t>& run : runs) {
    const int64_t position =
        std::find(sorted_runs.begin(), sorted_runs.end(), run) - sorted_runs.begin();
    identity = identity && position == static_cast<int64_t>(array.iota_transpose_perm.size());
    array.iota_transpose_perm.push_back(position);
  }
  if (identity) {
    array.iota_transpose_perm.clear();
    array.iota_reshape_dims = {mesh.device_count()};
  }
}

// Drops a replication dim of one device, merges replicated subgroup dims into one replication
// dim (last_tile_dims={replicated} is last_tile_dim_replicate) and turns a tiling into one tile
// into replication. Manual subgroups are left as they are.
ir::Sharding Normalize(const ir::Sharding& sharding) {
  if (sharding.kind() != ir::Sharding::Kind::kTiled) return sharding;
  const std::vector<ir::SubgroupType>& subgroups = sharding.subgroup_types();
  if (std::find(subgroups.begin(), subgroups.end(), ir::SubgroupType::kManual) != subgroups.end()) {
    return sharding;
  }
  ir::DeviceArray array = sharding.tile_assignment();
  const std::vector<int64_t> ids = array.Flatten();
  const size_t data_rank = static_cast<size_t>(sharding.TiledDataRank());
  int64_t replication = 1;
  for (size_t d = data_rank; d < array.dimensions.size(); ++d) replication *= array.dimensions[d];
  const bool reshaped = array.dimensions.size() > data_rank + 1 || replication == 1;
  if (reshaped) {
    std::vector<int64_t> dims(array.dimensions.begin(), array.dimensions.begin() + data_rank);
    if (replication > 1) dims.push_back(replication);
    array = ir::DeviceArray{dims, ids};
  }
  const bool replicate = replication > 1;
  if (sharding.NumTiles() == 1 && replicate) return ir::Sharding::Replicated();
  return ir::Sharding::Tiled(array, replicate);
}

// Every device of the mesh, in order; a sharding must use each exactly once.
bool UsesEveryDevice(const ir::Sharding& sharding, const Mesh& mesh) {
  std::vector<int64_t> ids = sharding.tile_assignment().Flatten();
  std::vector<int64_t> mesh_ids = mesh.device_ids();
  std::sort(ids.begin(), ids.end());
  std::sort(mesh_ids.begin(), mesh_ids.end());
  return ids == mesh_ids;
}

// Calls `visit` with each way of giving every axis of size > 1 a dim (or none: rank) such that
// each dim is split into `tiles[d]` ways and the unused axes multiply to the replication, axes
// in mesh order within a dim; stops when `visit` returns true.
void ForEachAxisProduct(const Mesh& mesh, const std::vector<int64_t>& tiles, int64_t replication,
                        const std::function<bool(const AxisSharding&)>& visit) {
  const int64_t rank = static_cast<int64_t>(tiles.size());
  std::vector<int64_t> axes;
  for (int64_t axis = 0; axis < mesh.axis_count(); ++axis) {
    if (mesh.axis_size(axis) > 1) axes.push_back(axis);
  }
  std::vector<int64_t> product(rank + 1, 1);
  AxisSharding candidate = AxisSharding::Replicated(rank);
  bool done = false;
  std::function<void(size_t)> assign = [&](size_t next) {
    if (done) return;
    if (next == axes.size()) {
      for (int64_t d = 0; d < rank; ++d) {
        if (product[d] != tiles[d]) return;
      }
      if (product[rank] == replication) done = visit(candidate);
      return;
    }
    const int64_t size = mesh.axis_size(axes[next]);
    for (int64_t d = 0; d <= rank; ++d) {
      const int64_t wanted = d < rank ? tiles[d] : replication;
      if (wanted % (product[d] * size) != 0) continue;
      product[d] *= size;
      if (d < rank) candidate.dims[d].push_back(axes[next]);
      assign(next + 1);
      if (d < rank) candidate.dims[d].pop_back();
      product[d] /= size;
    }
  };
  assign(0);
}

// The device order that lays `wanted` (a normalized tiled sharding over every device of the
// mesh) out as `candidate`'s axes: where the candidate puts mesh position p, the wanted tile
// assignment has the device that takes p's place.
std::vector<int64_t> OrderFor(const AxisSharding& candidate, const ir::Sharding& wanted,
                              const Mesh& mesh) {
  std::vector<int64_t> positions(mesh.device_count());
  std::iota(positions.begin(), positions.end(), 0);
  const Mesh by_position = mesh.WithDeviceIds(positions);
  AxisSharding in_mesh_order = candidate;
  in_mesh_order.device_order.clear();
  const std::vector<int64_t> placed =
      ToHloSharding(in_mesh_order, by_position).tile_assignment().Flatten();
  const std::vector<int64_t> ids = wanted.tile_assignment().Flatten();
  std::vector<int64_t> order(mesh.device_count());
  for (size_t j = 0; j < placed.size(); ++j) order[placed[j]] = ids[j];
  return order;
}

// How many axis placements AxesInMeshOrder tries at most (orderings included): the search is
// exponential in the number of axes, and a sharding it misses is still expressed in a device
// order (FromHloSharding), only perhaps not in the mesh's own.
constexpr int64_t kAxisSearchBudget = int64_t{1} << 14;

// The axes that give `wanted` (normalized, tiled) over `mesh` in its own device order: every
// ordering of the axes of size > 1 (size-1 axes never change a sharding), each axis given a dim
// whose tile count its size still divides, or left unused; at most kAxisSearchBudget tries.
std::optional<AxisSharding> AxesInMeshOrder(const ir::Sharding& wanted, const Mesh& mesh,
                                            int64_t rank) {
  std::vector<int64_t> axes;
  for (int64_t axis = 0; axis < mesh.axis_count(); ++axis) {
    if (mesh.axis_size(axis) > 1) axes.push_back(axis);
  }
  std::sort(axes.begin(), axes.end());
  const std::vector<int64_t>& dims = wanted.tile_assignment().dimensions;
  const int64_t replication = wanted.last_tile_dim_replicate() ? dims.back() : 1;
  std::optional<AxisSharding> found;
  int64_t budget = kAxisSearchBudget;
  do {
    std::vector<int64_t> choice(axes.size(), 0);
    std::vector<int64_t> product(rank + 1, 1);
    std::function<void(size_t)> assign = [&](size_t next) {
      if (found.has_value() || budget <= 0) return;
      if (next == axes.size()) {
        --budget;
        for (int64_t d = 0; d < rank; ++d) {
          if (product[d] != dims[d]) return;
        }
        AxisSharding candidate = AxisSharding::Replicated(rank);
        for (size_t i = 0; i < axes.size(); ++i) {
          if (choice[i] < rank) candidate.dims[choice[i]].push_back(axes[i]);
        }
        if (ToHloSharding(candidate, mesh) == wanted) found = candidate;
        return;
      }
      const int64_t size = mesh.axis_size(axes[next]);
      for (int64_t d = 0; d <= rank; ++d) {
        if ((d < rank ? dims[d] : replication) % (product[d] * size) != 0) continue;
        choice[next] = d;
        product[d] *= size;
        assign(next + 1);
        product[d] /= size;
      }
    };
    assign(0);
    --budget;
  } while (!found.has_value() && budget > 0 && std::next_permutation(axes.begin(), axes.end()));
  return found;
}

}  // namespace

Mesh LayoutMesh(const AxisSharding& sharding, const Mesh& mesh) {
  return sharding.device_order.empty() ? mesh : mesh.WithDeviceIds(sharding.device_order);
}

bool IsLaidOutByDeviceOrder(const AxisSharding& sharding, const Mesh& mesh) {
  return !sharding.IsSpecial() && (sharding.NumTiles(mesh) > 1 || sharding.IsPartiallyManual());
}

AxisSharding AxisSharding::InMeshOrder() const {
  AxisSharding plain = *this;
  plain.device_order.clear();
  return plain;
}

bool AxisSharding::IsReplicated() const {
  if (IsSpecial() || IsPartiallyManual()) return false;
  for (const std::vector<int64_t>& axes : dims) {
    if (!axes.empty()) return false;
  }
  return true;
}

std::vector<int64_t> AxisSharding::UsedAxes() const {
  std::vector<int64_t> used;
  for (const std::vector<int64_t>& axes : dims) used.insert(used.end(), axes.begin(), axes.end());
  return used;
}

int64_t AxisSharding::NumTiles(const Mesh& mesh) const { return mesh.SizeOf(UsedAxes()); }

std::string AxisSharding::ToString(const Mesh& mesh) const {
  if (maximal_device.has_value()) return fmt::format("maximal device={}", *maximal_device);
  if (manual) return "manual";
  const auto label = [&](const std::vector<int64_t>& axes) {
    std::vector<std::string> labels;
    for (int64_t axis : axes) labels.push_back(mesh.AxisLabel(axis));
    return fmt::format("{{{}}}", absl::StrJoin(labels, ","));
  };
  std::vector<std::string> parts;
  for (const std::vector<int64_t>& axes : dims) parts.push_back(label(axes));
  std::string text = fmt::format("[{}]", absl::StrJoin(parts, ", "));
  if (!device_order.empty()) text += fmt::format(" devices {}", absl::StrJoin(device_order, ","));
  if (IsPartiallyManual()) text += " manual " + label(manual_axes);
  return text;
}

ir::Sharding ToHloSharding(const AxisSharding& sharding, const Mesh& mesh_order) {
  if (sharding.maximal_device.has_value()) return ir::Sharding::Maximal(*sharding.maximal_device);
  if (sharding.manual) return ir::Sharding::Manual();
  const Mesh mesh = LayoutMesh(sharding, mesh_order);
  if (mesh.device_count() == 1) return ir::Sharding::Maximal(mesh.device_ids()[0]);
  const std::vector<int64_t>& manual = sharding.manual_axes;
  if (sharding.NumTiles(mesh) == 1 && manual.empty()) return ir::Sharding::Replicated();
  std::vector<int64_t> permutation = sharding.UsedAxes();
  std::vector<int64_t> unused;
  for (int64_t axis = 0; axis < mesh.axis_count(); ++axis) {
    if (std::find(permutation.begin(), permutation.end(), axis) == permutation.end() &&
        std::find(manual.begin(), manual.end(), axis) == manual.end()) {
      unused.push_back(axis);
    }
  }
  permutation.insert(permutation.end(), manual.begin(), manual.end());
  permutation.insert(permutation.end(), unused.begin(), unused.end());
  ir::DeviceArray array;
  for (int64_t d = 0; d < sharding.rank(); ++d)
    array.dimensions.push_back(sharding.TilesOn(d, mesh));
  std::vector<ir::SubgroupType> subgroups;
  if (!manual.empty()) {
    array.dimensions.push_back(mesh.SizeOf(manual));
    subgroups.push_back(ir::SubgroupType::kManual);
  }
  const int64_t replication = mesh.SizeOf(unused);
  if (replication > 1) array.dimensions.push_back(replication);
  if (replication > 1 && !manual.empty()) subgroups.push_back(ir::SubgroupType::kReplicated);
  if (mesh.IsIota()) {
    SetCanonicalIota(mesh, permutation, array);
  } else {
    // Walk the transposed mesh in row-major order.
    std::vector<int64_t> permuted_shape;
    for (int64_t axis : permutation) permuted_shape.push_back(mesh.axis_size(axis));
    std::vector<int64_t> index(permuted_shape.size(), 0), coordinates(mesh.axis_count());
    do {
      for (size_t i = 0; i < permutation.size(); ++i) coordinates[permutation[i]] = index[i];
      array.device_ids.push_back(mesh.DeviceAt(coordinates));
    } while (ir::NextIndex(permuted_shape, index));
  }
  if (!subgroups.empty()) return ir::Sharding::Tiled(array, false, subgroups);
  return ir::Sharding::Tiled(array, replication > 1);
}

namespace {

// The tile assignment of a sharding with a manual subgroup with its dims transposed to data dims,
// then the manual subgroup dims merged into one, then the replicated ones merged into one (if
// any): a tiled sharding of rank + 1 dims whose last data dim is the manual one.
ir::Sharding ManualAsDataDim(const ir::Sharding& sharding, int64_t rank) {
  const ir::DeviceArray& array = sharding.tile_assignment();
  const std::vector<ir::SubgroupType>& types = sharding.subgroup_types();
  std::vector<int64_t> order;  // old dim of each new dim
  for (int64_t d = 0; d < rank; ++d) order.push_back(d);
  const int64_t first_subgroup = static_cast<int64_t>(array.dimensions.size() - types.size());
  int64_t manual = 1, replicated = 1;
  for (ir::SubgroupType wanted : {ir::SubgroupType::kManual, ir::SubgroupType::kReplicated}) {
    for (size_t t = 0; t < types.size(); ++t) {
      if (types[t] != wanted) continue;
      order.push_back(first_subgroup + static_cast<int64_t>(t));
      (wanted == ir::SubgroupType::kManual ? manual : replicated) *= array.dimensions[order.back()];
    }
  }
  // A last_tile_dim_replicate dim (never written with last_tile_dims, but kept general).
  for (int64_t d = rank; d < first_subgroup; ++d) {
    order.push_back(d);
    replicated *= array.dimensions[d];
  }
  std::vector<int64_t> permuted_shape;
  for (int64_t old : order) permuted_shape.push_back(array.dimensions[old]);
  const std::vector<int64_t> ids = array.Flatten();
  ir::DeviceArray transposed;
  std::vector<int64_t> index(order.size(), 0), old_index(order.size());
  do {
    for (size_t i = 0; i < order.size(); ++i) old_index[order[i]] = index[i];
    int64_t flat = 0;
    for (size_t d = 0; d < old_index.size(); ++d) flat = flat * array.dimensions[d] + old_index[d];
    transposed.device_ids.push_back(ids[flat]);
  } while (ir::NextIndex(permuted_shape, index));
  transposed.dimensions.assign(array.dimensions.begin(), array.dimensions.begin() + rank);
  transposed.dimensions.push_back(manual);
  if (replicated > 1) transposed.dimensions.push_back(replicated);
  return ir::Sharding::Tiled(transposed, replicated > 1);
}

// A sharding with a manual subgroup: its data dims and manual dim read as rank + 1 data dims,
// whose last one gives the manual axes.
absl::StatusOr<AxisSharding> FromManualSubgroup(
    const ir::Sharding& sharding, const Mesh& mesh, int64_t rank,
    const std::vector<std::vector<int64_t>>& preferred_orders) {
  if (sharding.TiledDataRank() != rank) {
    return absl::InvalidArgumentError(fmt::format("sharding {} tiles {} dims, the value has {}",
                                                  sharding.ToString(), sharding.TiledDataRank(),
                                                  rank));
  }
  absl::StatusOr<AxisSharding> found =
      FromHloSharding(ManualAsDataDim(sharding, rank), mesh, rank + 1, preferred_orders);
  if (!found.ok()) {
    return absl::Status(found.status().code(),
                        fmt::format("sharding {} (its manual subgroup read as a tile dim): {}",
                                    sharding.ToString(), std::string(found.status().message())));
  }
  // A device order (manual groups that are not along the mesh's axes, e.g. an explicit device
  // list) stays with the value: the groups are those devices sharing a manual index in it.
  AxisSharding partial = *found;
  partial.manual_axes = partial.dims.back();
  partial.dims.pop_back();
  std::sort(partial.manual_axes.begin(), partial.manual_axes.end());
  return partial;
}

}  // namespace

absl::StatusOr<AxisSharding> FromHloSharding(
    const ir::Sharding& sharding, const Mesh& mesh, int64_t rank,
    const std::vector<std::vector<int64_t>>& preferred_orders) {
  switch (sharding.kind()) {
    case ir::Sharding::Kind::kReplicated:
      return AxisSharding::Replicated(rank);
    case ir::Sharding::Kind::kMaximal: {
      if (!mesh.CoordinatesOf(sharding.maximal_device()).has_value()) {
        return absl::InvalidArgumentError(fmt::format("sharding {} names a device outside mesh {}",
                                                      sharding.ToString(), mesh.ToString()));
      }
      AxisSharding maximal = AxisSharding::Replicated(rank);
      if (mesh.device_count() > 1) maximal.maximal_device = sharding.maximal_device();
      return maximal;
    }
    case ir::Sharding::Kind::kManual:
      return AxisSharding::Manual(rank);
    case ir::Sharding::Kind::kTuple:
      return absl::UnimplementedError(fmt::format(
          "sharding {} is not supported by the partitioner (tuple shardings are handled per "
          "leaf only)",
          sharding.ToString()));
    case ir::Sharding::Kind::kTiled:
      break;
  }
  const std::vector<ir::SubgroupType>& subgroups = sharding.subgroup_types();
  if (std::find(subgroups.begin(), subgroups.end(), ir::SubgroupType::kManual) != subgroups.end()) {
    return FromManualSubgroup(sharding, mesh, rank, preferred_orders);
  }
  const ir::Sharding wanted = Normalize(sharding);
  if (wanted.kind() == ir::Sharding::Kind::kReplicated) return AxisSharding::Replicated(rank);
  if (wanted.TiledDataRank() != rank) {
    return absl::InvalidArgumentError(fmt::format("sharding {} tiles {} dims, the value has {}",
                                                  sharding.ToString(), wanted.TiledDataRank(),
                                                  rank));
  }
  std::optional<AxisSharding> found = AxesInMeshOrder(wanted, mesh, rank);
  if (found.has_value()) return *found;
  if (!UsesEveryDevice(wanted, mesh)) {
    return absl::InvalidArgumentError(fmt::format(
        "sharding {} does not use every device of mesh {} exactly once; a tiled value lives on "
        "all of its mesh's devices",
        sharding.ToString(), mesh.ToString()));
  }
  // A device order other values already use, so that ops on both need no permute.
  for (const std::vector<int64_t>& order : preferred_orders) {
    if (order.empty()) continue;
    found = AxesInMeshOrder(wanted, mesh.WithDeviceIds(order), rank);
    if (found.has_value()) {
      found->device_order = order;
      return *found;
    }
  }
  // Another device order: any split of the axes with the wanted tile counts, laid out as the
  // tile assignment says.
  const std::vector<int64_t>& dims = wanted.tile_assignment().dimensions;
  const std::vector<int64_t> tiles(dims.begin(), dims.begin() + rank);
  const int64_t replication = wanted.last_tile_dim_replicate() ? dims.back() : 1;
  ForEachAxisProduct(mesh, tiles, replication, [&](const AxisSharding& candidate) {
    AxisSharding ordered = candidate;
    ordered.device_order = OrderFor(candidate, wanted, mesh);
    if (ToHloSharding(ordered, mesh) == wanted) found = ordered;
    return found.has_value();
  });
  if (!found.has_value()) {
    return absl::InvalidArgumentError(fmt::format(
        "sharding {} cannot be expressed over the axes of mesh {}: its tile counts are not "
        "products of the mesh's axis sizes; give a mesh whose axes produce it",
        sharding.ToString(), mesh.ToString()));
  }
  return *found;
}

ir::Shape ShardShape(const ir::Shape& shape, const AxisSharding& sharding, const Mesh& mesh) {
  std::vector<int64_t> dims = shape.dimensions();
  for (int64_t d = 0; d < shape.rank() && d < sharding.rank() && !sharding.manual; ++d) {
    dims[d] = CeilDiv(dims[d], sharding.TilesOn(d, mesh));
  }
  return ir::Shape(shape.dtype(), dims);
}

int64_t ShardIndex(const AxisSharding& sharding, int64_t d, const Mesh& mesh, int64_t device) {
  if (!sharding.device_order.empty()) {
    return LayoutMesh(sharding, mesh).IndexAlong(device, sharding.dims[d]);
  }
  return mesh.IndexAlong(device, sharding.dims[d]);
}

int64_t ShardOffset(const ir::Shape& shape, const AxisSharding& sharding, int64_t d,
                    const Mesh& mesh, int64_t device) {
  const int64_t size = CeilDiv(shape.dimension(d), sharding.TilesOn(d, mesh));
  return std::min(ShardIndex(sharding, d, mesh, device) * size, shape.dimension(d));
}

int64_t ShardValidSize(const ir::Shape& shape, const AxisSharding& sharding, int64_t d,
                       const Mesh& mesh, int64_t device) {
  const int64_t size = CeilDiv(shape.dimension(d), sharding.TilesOn(d, mesh));
  const int64_t offset = ShardOffset(shape, sharding, d, mesh, device);
  return std::min(offset + size, shape.dimension(d)) - offset;
}

int64_t ByteSize(const ir::Shape& shape) {
  if (shape.IsTuple()) {
    int64_t total = 0;
    for (const ir::Shape& element : shape.tuple_elements()) total += ByteSize(element);
    return total;
  }
  return shape.ElementCount() * ir::DTypeByteSize(shape.dtype());
}

}  // namespace vkspmd::spmd
