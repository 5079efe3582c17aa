// Placements of user meshes over local ids.
#include "src/lazy/placement.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/status_macros.h"

namespace vkspmd::lazy {

absl::StatusOr<PlacementPtr> PlacementForMesh(const spmd::Mesh& mesh) {
  std::vector<int64_t> sorted = mesh.device_ids();
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> local_ids;
  for (int64_t id : mesh.device_ids()) {
    local_ids.push_back(std::lower_bound(sorted.begin(), sorted.end(), id) - sorted.begin());
  }
  VKSPMD_ASSIGN_OR_RETURN(spmd::Mesh local,
                          spmd::Mesh::Create(mesh.shape(), local_ids, mesh.axis_names()));
  auto placement = std::make_shared<Placement>(Placement{mesh, std::move(local), sorted, "", true});
  placement->key = absl::StrCat("mesh[", absl::StrJoin(mesh.shape(), ","), "] ids ",
                                absl::StrJoin(mesh.device_ids(), ","), " axes ",
                                absl::StrJoin(mesh.axis_names(), ","));
  return placement;
}

PlacementPtr SingleDevicePlacement() {
  static const PlacementPtr* placement = [] {
    absl::StatusOr<spmd::Mesh> mesh = spmd::Mesh::Create({1});
    return new PlacementPtr(
        std::make_shared<Placement>(Placement{*mesh, *mesh, {0}, "device 0", false}));
  }();
  return *placement;
}

}  // namespace vkspmd::lazy
