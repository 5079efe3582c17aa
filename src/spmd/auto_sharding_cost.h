// Auto-sharding's cost model: an α/β time per collective kind and mesh axis (measured on the
// devices or the defaults), a compute rate, and the resharding time between two shardings.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/ir/shape.h"
#include "src/spmd/axis_sharding.h"
#include "src/spmd/mesh.h"

namespace vkspmd::spmd {

enum class CollectiveKind { kAllReduce = 0, kAllGather, kReduceScatter, kAllToAll };
inline constexpr int kCollectiveKinds = 4;
absl::string_view CollectiveKindName(CollectiveKind kind);

// time = alpha + beta · moved bytes, where a collective over n devices on `bytes` per device moves
// 2(n-1)/n·bytes (all-reduce) or (n-1)/n·bytes (the others; for all-gather `bytes` is the
// gathered result) per device: the ring algorithms' volumes (GSPMD-NOTES 5.2).
struct AlphaBeta {
  double alpha = 0;  // seconds
  double beta = 0;   // seconds per byte
};

struct CostModel {
  std::vector<std::array<AlphaBeta, kCollectiveKinds>> axes;  // per mesh axis
  double flops_per_second = 0;

  // Unmeasured defaults for `mesh`: α 20 µs, β 1/(2 GB/s) on every axis, 20 GFLOP/s, about what
  // lavapipe's host-staged collectives and kernels do on one CPU.
  static CostModel Default(const Mesh& mesh);
  // Seconds of one collective along `axis` on `bytes` per device (see AlphaBeta).
  double Collective(CollectiveKind kind, int64_t axis, int64_t bytes, const Mesh& mesh) const;
  // Seconds to move a value of `shape` from `from` to `to`: a dim's axes that stay are free,
  // axes that become split are a local slice (free), an axis moving to another dim is an
  // all-to-all, an axis no longer used is an all-gather (volumes growing as axes are gathered).
  // Device orders that differ gather everything first.
  double Reshard(const ir::Shape& shape, const AxisSharding& from, const AxisSharding& to,
                 const Mesh& mesh) const;

  // One line per axis and kind: "axis 0 all-reduce alpha_s=2e-05 beta_s_per_byte=5e-10", then
  // "flops_per_second=2e10"; Parse reads it back (the cache file's format).
  std::string Serialize(const Mesh& mesh) const;
  static absl::StatusOr<CostModel> Parse(absl::string_view text, const Mesh& mesh);
};

}  // namespace vkspmd::spmd
