// Candidate meshes for a module partitioned without an explicit mesh.
#include "src/spmd/mesh_search.h"

#include <algorithm>

namespace vkspmd::spmd {
namespace {

// Adds a mesh of `shape` unless it is already listed or the list is full.
void AddCandidate(std::vector<int64_t> shape, size_t limit, std::vector<Mesh>& meshes) {
  if (meshes.size() >= limit) return;
  if (shape.empty()) shape = {1};
  for (const Mesh& mesh : meshes) {
    if (mesh.shape() == shape) return;
  }
  absl::StatusOr<Mesh> mesh = Mesh::Create(std::move(shape));
  if (mesh.ok()) meshes.push_back(*std::move(mesh));
}

void AddAnnotationShapes(const ir::Sharding& sharding, int64_t devices, size_t limit,
                         std::vector<Mesh>& meshes) {
  if (sharding.kind() == ir::Sharding::Kind::kTuple) {
    for (const ir::Sharding& element : sharding.tuple_elements()) {
      AddAnnotationShapes(element, devices, limit, meshes);
    }
    return;
  }
  if (sharding.kind() != ir::Sharding::Kind::kTiled || sharding.TotalNumTiles() != devices) return;
  std::vector<int64_t> shape;
  for (int64_t tiles : sharding.tile_assignment().dimensions) {
    if (tiles > 1) shape.push_back(tiles);
  }
  AddCandidate(std::move(shape), limit, meshes);
}

}  // namespace

std::vector<Mesh> CandidateMeshes(const ir::Module& module, size_t limit) {
  const int64_t devices = module.partition_count();
  std::vector<Mesh> meshes;
  AddCandidate({devices}, limit, meshes);
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      if (instruction->sharding().has_value()) {
        AddAnnotationShapes(*instruction->sharding(), devices, limit, meshes);
      }
    }
  }
  std::vector<int64_t> factors;
  int64_t rest = devices;
  for (int64_t p = 2; p * p <= rest; ++p) {
    for (; rest % p == 0; rest /= p) factors.push_back(p);
  }
  if (rest > 1) factors.push_back(rest);
  if (factors.size() < 2) return meshes;
  // Sorted, next_permutation visits each distinct order once; the limit stops it early.
  std::sort(factors.begin(), factors.end());
  do {
    AddCandidate(factors, limit, meshes);
  } while (meshes.size() < limit && std::next_permutation(factors.begin(), factors.end()));
  return meshes;
}

}  // namespace vkspmd::spmd
