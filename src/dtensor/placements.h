// DTensor placements (Shard/Replicate/Partial per mesh axis) as the partitioner's shardings: a
// DTensor is kept as one "stacked" value whose leading dims hold the pending Partial reductions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/spmd/axis_sharding.h"
#include "src/spmd/mesh.h"

namespace vkspmd::dtensor {

enum class PlacementKind { kShard, kReplicate, kPartial };
enum class ReduceKind { kSum, kAvg, kMax, kMin };

struct PlacementSpec {
  PlacementKind kind = PlacementKind::kReplicate;
  int64_t dim = 0;                       // kShard: the tensor dim split over the axis.
  ReduceKind reduce = ReduceKind::kSum;  // kPartial: the pending reduction.
  bool operator==(const PlacementSpec&) const = default;
};

// "Shard(dim=1)", "Replicate()", "Partial(sum)"; a list as "[Shard(0), Replicate()]".
std::string ToString(const PlacementSpec& placement);
std::string ToString(const std::vector<PlacementSpec>& placements);

// One placement per mesh axis, Shard dims within `rank` (negative dims counted from the end, as
// PyTorch does, are made non-negative here). Errors name the placements and the mesh.
absl::StatusOr<std::vector<PlacementSpec>> Normalize(std::vector<PlacementSpec> placements,
                                                     const spmd::Mesh& mesh, int64_t rank);

// The mesh axes holding a Partial, in mesh order: the stacked value's leading dims, one each.
std::vector<int64_t> PartialAxes(const std::vector<PlacementSpec>& placements);

// The sharding of the stacked value (leading dim i split over PartialAxes()[i], then the
// tensor's `rank` dims, each split over the axes that Shard it, in mesh-axis order as PyTorch
// orders them). `placements` must be normalized.
spmd::AxisSharding StackedSharding(const std::vector<PlacementSpec>& placements, int64_t rank);

// The placements of a plain (non-stacked) sharding over a mesh of `mesh_rank` axes: Shard(d)
// for an axis splitting dim d, Replicate() for an unused one. Errors for shardings placements
// cannot say: maximal, manual, a device order other than the mesh's, or several axes splitting
// one dim other than in mesh-axis order.
absl::StatusOr<std::vector<PlacementSpec>> PlacementsOf(const spmd::AxisSharding& sharding,
                                                        const spmd::Mesh& mesh);

}  // namespace vkspmd::dtensor
