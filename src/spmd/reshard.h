// Resharding a partitioned value between any two shardings with the cheapest collectives
// (GSPMD-NOTES 3.2): collective-permute when only the device order differs, all-to-all when
// axes move from one dim to another, otherwise all-gather of what must be unsplit followed by a
// free dynamic-slice of what must be split; across device orders, where the tiles only get finer
// (coarser), GSPMD's local slice then one collective-permute (one collective-permute then
// all-gather) when that sends fewer bytes. Planning is separate from emitting so that the
// partitioner can price alternatives in bytes without emitting them.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "src/spmd/axis_sharding.h"
#include "src/spmd/spmd_builder.h"

namespace vkspmd::spmd {

// A value of the per-device program: its local (padded shard) instruction, the global shape and
// the sharding that relates them. Padding contents are unspecified.
struct PartitionedValue {
  ir::Instruction* local = nullptr;
  ir::Shape global;
  AxisSharding sharding;
};

struct ReshardStep {
  enum class Kind { kFromMaximal, kPermute, kAllToAll, kAllGather, kSlice };
  Kind kind = Kind::kSlice;
  int64_t dim = 0;         // all-gather / slice dim, all-to-all source dim
  int64_t target_dim = 0;  // all-to-all: the dim that gains the axes
  // Mesh axes it runs along (a slice: those the dim gains, empty where a local slice into another
  // device order gains no axes in order).
  std::vector<int64_t> axes;
  AxisSharding after;  // sharding once the step is done
};

std::vector<ReshardStep> PlanReshard(const ir::Shape& global, const AxisSharding& from,
                                     const AxisSharding& to, const Mesh& mesh);
// Bytes each device sends to carry out the plan.
int64_t ReshardBytes(const ir::Shape& global, const AxisSharding& from, const AxisSharding& to,
                     const Mesh& mesh);

// Emits the plan. A maximal target is met by holding the whole value everywhere.
absl::StatusOr<PartitionedValue> Reshard(SpmdBuilder& builder, const PartitionedValue& value,
                                         const AxisSharding& to);

}  // namespace vkspmd::spmd
