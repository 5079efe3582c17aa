// The manifest of a checkpoint step (manifest.json): what every tensor is (global shape, dtype,
// the mesh and sharding it was saved from) and where each saved shard lies (file, offset,
// length, XXH3-64, the global index box it covers, the devices that held it), plus the state
// saved beside the tensors. Parsing checks everything a damaged or foreign manifest could get
// wrong, so the reader can trust what it returns.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/ir/dtype.h"

namespace vkspmd::io {

// The format this build writes and the newest it reads.
inline constexpr int64_t kCheckpointFormatVersion = 1;

struct ManifestShard {
  std::string file;  // A plain file name inside the step directory.
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t checksum = 0;       // XXH3-64 of the `length` bytes.
  std::vector<int64_t> start;  // The global index box [start, stop) per dim.
  std::vector<int64_t> stop;
  std::vector<int64_t> devices;  // Mesh device ids that held it (empty: host data).
};

struct ManifestTensor {
  std::string name;
  ir::DType dtype = ir::DType::kF32;
  std::vector<int64_t> shape;
  // The mesh it was saved from (empty shape: no mesh) and its sharding there, as HLO text and
  // as the per-dim axes ("[{dp}, {}]"), for people reading `vkspmd ckpt ls`.
  std::vector<int64_t> mesh_shape;
  std::vector<int64_t> mesh_devices;
  std::vector<std::string> mesh_axes;
  std::string sharding;
  std::string sharding_axes;
  // Disjoint boxes that cover the tensor exactly, each stored row-major, little-endian, bool as
  // one byte.
  std::vector<ManifestShard> shards;

  int64_t ByteSize() const;
};

struct Manifest {
  int64_t format_version = kCheckpointFormatVersion;
  std::string library_version;
  int64_t step = 0;
  std::string created;  // UTC, ISO 8601.
  std::vector<ManifestTensor> tensors;
  // State saved beside the tensors: integer lists (optimizer step counts, the data position, the
  // random generator's state) and the user's text metadata.
  std::map<std::string, std::vector<uint64_t>> integers;
  std::map<std::string, std::string> metadata;

  const ManifestTensor* Find(absl::string_view name) const;
};

std::string SerializeManifest(const Manifest& manifest);
// Errors name `path` and what is wrong: not JSON, a missing or mistyped field, a newer format
// ("unsupported checkpoint format vN (this build reads up to v1)"), an unknown dtype, a shard
// outside its tensor, overlapping shards or ones that leave elements uncovered, a length that is
// not the box's byte size, a file name that leaves the directory.
absl::StatusOr<Manifest> ParseManifest(absl::string_view text, absl::string_view path);

}  // namespace vkspmd::io
