// Placements <-> the partitioner's axis shardings, with the checks PyTorch's DTensor makes.
#include "src/dtensor/placements.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace vkspmd::dtensor {
namespace {

const char* ReduceName(ReduceKind reduce) {
  switch (reduce) {
    case ReduceKind::kSum:
      return "sum";
    case ReduceKind::kAvg:
      return "avg";
    case ReduceKind::kMax:
      return "max";
    case ReduceKind::kMin:
      return "min";
  }
  return "?";
}

}  // namespace

std::string ToString(const PlacementSpec& placement) {
  switch (placement.kind) {
    case PlacementKind::kShard:
      return absl::StrCat("Shard(dim=", placement.dim, ")");
    case PlacementKind::kReplicate:
      return "Replicate()";
    case PlacementKind::kPartial:
      return absl::StrCat("Partial(", ReduceName(placement.reduce), ")");
  }
  return "?";
}

std::string ToString(const std::vector<PlacementSpec>& placements) {
  std::vector<std::string> parts;
  for (const PlacementSpec& placement : placements) parts.push_back(ToString(placement));
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

absl::StatusOr<std::vector<PlacementSpec>> Normalize(std::vector<PlacementSpec> placements,
                                                     const spmd::Mesh& mesh, int64_t rank) {
  if (static_cast<int64_t>(placements.size()) != mesh.axis_count()) {
    return absl::InvalidArgumentError(absl::StrCat("placements ", ToString(placements), " give ",
                                                   placements.size(), " placement(s) but the mesh ",
                                                   mesh.ToString(), " has ", mesh.axis_count(),
                                                   " axes: give one placement per mesh axis"));
  }
  for (PlacementSpec& placement : placements) {
    if (placement.kind != PlacementKind::kShard) continue;
    if (placement.dim < -rank || placement.dim >= rank) {
      return absl::InvalidArgumentError(
          absl::StrCat("placements ", ToString(placements), ": ", ToString(placement),
                       " is out of range for a tensor of ", rank, " dim(s)"));
    }
    if (placement.dim < 0) placement.dim += rank;
  }
  return placements;
}

std::vector<int64_t> PartialAxes(const std::vector<PlacementSpec>& placements) {
  std::vector<int64_t> axes;
  for (size_t axis = 0; axis < placements.size(); ++axis) {
    if (placements[axis].kind == PlacementKind::kPartial) axes.push_back(axis);
  }
  return axes;
}

spmd::AxisSharding StackedSharding(const std::vector<PlacementSpec>& placements, int64_t rank) {
  const std::vector<int64_t> partial_axes = PartialAxes(placements);
  const int64_t leading = static_cast<int64_t>(partial_axes.size());
  spmd::AxisSharding sharding = spmd::AxisSharding::Replicated(leading + rank);
  for (int64_t i = 0; i < leading; ++i) sharding.dims[i].push_back(partial_axes[i]);
  for (size_t axis = 0; axis < placements.size(); ++axis) {
    if (placements[axis].kind != PlacementKind::kShard) continue;
    sharding.dims[leading + placements[axis].dim].push_back(static_cast<int64_t>(axis));
  }
  return sharding;
}

absl::StatusOr<std::vector<PlacementSpec>> PlacementsOf(const spmd::AxisSharding& sharding,
                                                        const spmd::Mesh& mesh) {
  if (sharding.IsSpecial() || !sharding.device_order.empty()) {
    return absl::UnimplementedError(absl::StrCat("the sharding ", sharding.ToString(mesh),
                                                 " has no DTensor placements over ",
                                                 mesh.ToString()));
  }
  std::vector<PlacementSpec> placements(mesh.axis_count());
  for (int64_t dim = 0; dim < sharding.rank(); ++dim) {
    const std::vector<int64_t>& axes = sharding.dims[dim];
    if (!std::is_sorted(axes.begin(), axes.end())) {
      return absl::UnimplementedError(
          absl::StrCat("the sharding ", sharding.ToString(mesh), " splits dim ", dim,
                       " over mesh axes out of mesh order, which DTensor placements cannot say"));
    }
    for (int64_t axis : axes) placements[axis] = {PlacementKind::kShard, dim, ReduceKind::kSum};
  }
  return placements;
}

}  // namespace vkspmd::dtensor
