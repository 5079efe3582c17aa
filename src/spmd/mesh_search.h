// The meshes to try when a module is partitioned without one: a short, bounded list of likely
// shapes for its num_partitions, so that a partition count with many factors stays cheap.
#pragma once

#include <cstddef>
#include <vector>

#include "src/ir/module.h"
#include "src/spmd/mesh.h"

namespace vkspmd::spmd {

// How many meshes CandidateMeshes returns at most (each failed try costs a partitioning).
inline constexpr size_t kMaxCandidateMeshes = 24;

// Meshes over the module's partitions 0..N-1, most likely first: one axis over every partition,
// then the shapes of the module's tiled annotations (their tile dims above 1, when they use every
// partition), then the prime factors of N in distinct orders, so that 2-D and 3-D annotations
// over iota device arrays are expressible. Duplicates are dropped; at most `limit` meshes.
std::vector<Mesh> CandidateMeshes(const ir::Module& module, size_t limit = kMaxCandidateMeshes);

}  // namespace vkspmd::spmd
