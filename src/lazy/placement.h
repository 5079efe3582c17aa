// Placement: where a value lives. A user's mesh names real mesh-device ids, which may be any
// subset of the process's devices; the partitioner and ShardedBuffer want ids 0..N-1, so each
// placement keeps the same mesh over local ids and the mesh device each local id runs on.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/spmd/mesh.h"

namespace vkspmd::lazy {

struct Placement {
  spmd::Mesh mesh;               // The user's mesh, with real device ids.
  spmd::Mesh local_mesh;         // The same shape and names over ids 0..N-1.
  std::vector<int64_t> devices;  // devices[local id] = mesh device index.
  std::string key;               // Equal keys mean the same placement.
  bool is_mesh = true;           // False for the single device (device 0) of unsharded tensors.
};
using PlacementPtr = std::shared_ptr<const Placement>;

// The placement of a user's mesh: local id k is the k-th smallest real id.
absl::StatusOr<PlacementPtr> PlacementForMesh(const spmd::Mesh& mesh);
// Mesh device 0 alone: where tensors without a mesh run.
PlacementPtr SingleDevicePlacement();

inline bool SamePlacement(const PlacementPtr& a, const PlacementPtr& b) {
  return a == b || (a != nullptr && b != nullptr && a->key == b->key);
}

}  // namespace vkspmd::lazy
