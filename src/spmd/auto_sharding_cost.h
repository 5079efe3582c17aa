// Auto-sharding's cost model: an α/β time per collective kind and mesh axis, a kernel's time
// (dispatch + flops + bytes; measured on the devices or the defaults), resharding times.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "src/ir/shape.h"
#include "src/spmd/axis_sharding.h"
#include "src/spmd/mesh.h"

namespace vkspmd::spmd {

enum class CollectiveKind {
  kAllReduce = 0,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kCollectivePermute
};
inline constexpr int kCollectiveKinds = 5;
absl::string_view CollectiveKindName(CollectiveKind kind);

// time = alpha + beta · moved bytes, where a collective over n devices on `bytes` per device moves
// 2(n-1)/n·bytes (all-reduce), all of `bytes` (collective-permute) or (n-1)/n·bytes (the others;
// for all-gather `bytes` is the gathered result) per device: the ring algorithms' volumes
// (GSPMD-NOTES 5.2). Measured, alpha also holds what the collective costs the step around it
// (the host waits for the device's kernels before it and submits the ones after it).
struct AlphaBeta {
  double alpha = 0;  // seconds
  double beta = 0;   // seconds per byte
};

// The least-squares line time = alpha + beta · x through samples (x, seconds): exact on
// samples that lie on a line. Fewer than two distinct x: alpha is their mean, beta 0. A negative
// fit (noise) is clamped: beta ≥ 0, then alpha ≥ 0 refitted.
AlphaBeta FitAlphaBeta(const std::vector<std::pair<double, double>>& samples);

struct CostModel {
  std::vector<std::array<AlphaBeta, kCollectiveKinds>> axes;  // per mesh axis
  // A kernel on one device while every device of the mesh runs its own (they may share the
  // hardware: lavapipe's devices share the CPU): kernel_seconds per dispatch, plus a dot's flops
  // at flops_per_second, plus every other op's elements (its iteration space: an elementwise op's
  // result, a reduce's input) at element_ops_per_second, plus bytes read and written at
  // bytes_per_second (0: bytes are not charged). Elementwise work runs at its own rate: on
  // lavapipe a fused chain's op costs an element 20-40 times what a dot's flop does.
  double flops_per_second = 0;
  double element_ops_per_second = 0;
  double bytes_per_second = 0;
  double kernel_seconds = 0;
  // What one run of a step's program costs besides its kernels and collectives (submitting to
  // every device and waiting for them): the same for every plan, so it changes no choice, but it
  // is part of a modelled step.
  double run_seconds = 0;

  // Unmeasured defaults for `mesh`: α 20 µs, β 1/(2 GB/s) on every axis, 20 GFLOP/s and 2e10
  // element ops per second, dispatches, bytes and runs free. Deterministic: what the golden plans
  // are computed with.
  static CostModel Default(const Mesh& mesh);
  // Seconds of one collective along `axis` on `bytes` per device (see AlphaBeta). `bucketed`: an
  // all-reduce the runtime packs with others into one rendezvous (exec/collective_step.h's
  // buckets: a training step's gradients), whose alpha the bucket pays once: beta alone here.
  double Collective(CollectiveKind kind, int64_t axis, int64_t bytes, const Mesh& mesh,
                    bool bucketed = false) const;
  // Seconds of `kernels` dispatches doing `flops` (a dot's 2·M·N·K) and `element_ops` (other
  // ops' iteration spaces) and moving `bytes` through memory on one device.
  double Kernel(double flops, double bytes, double kernels = 1, double element_ops = 0) const;
  // Seconds to move a value of `shape` from `from` to `to`: a dim's axes that stay are free,
  // axes that become split are a local slice (a kernel writing the new shard), an axis moving to
  // another dim is an all-to-all, an axis no longer used is an all-gather (volumes growing as axes
  // are gathered). Device orders that differ gather everything first.
  double Reshard(const ir::Shape& shape, const AxisSharding& from, const AxisSharding& to,
                 const Mesh& mesh) const;

  // One line per axis and kind: "axis 0 all-reduce alpha_s=2e-05 beta_s_per_byte=5e-10", then
  // "flops_per_second=2e10", "element_ops_per_second=2e10", "bytes_per_second=0",
  // "kernel_seconds=0", "run_seconds=0"; Parse reads it back (the measured cache's and
  // --cost-model's format; the lines after flops_per_second may be left out: element ops then
  // run at flops_per_second, the others are 0).
  std::string Serialize(const Mesh& mesh) const;
  static absl::StatusOr<CostModel> Parse(absl::string_view text, const Mesh& mesh);
};

}  // namespace vkspmd::spmd
