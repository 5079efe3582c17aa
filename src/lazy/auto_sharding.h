// Auto-sharding in the lazy runtime: a mesh placement registered by vkspmd::auto_shard has every
// graph lowered for it sharded by the ILP (spmd/auto_sharding.h) before it compiles.
#pragma once

#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "src/lazy/lowering.h"
#include "src/lazy/placement.h"
#include "src/spmd/auto_sharding.h"

namespace vkspmd::lazy {

struct AutoShardingConfig {
  spmd::CostModel model;  // over the placement's local mesh
  spmd::AutoShardingOptions options;
};

// What the ILP chose for the graphs it planned on a placement since the record was last taken:
// the last graph's plan, and each leaf's sharding from the first graph that read it.
struct AutoShardingRecord {
  spmd::AutoShardingPlan plan;  // its `shardings` cleared (they pointed into the graph's module)
  std::string report;           // AutoShardingPlan::Report of the graph
  // The sharding chosen for each leaf the graph read (its parameters).
  absl::flat_hash_map<const Node*, spmd::AxisSharding> parameters;
};

// Registers `placement` (a mesh) for auto-sharding with `config`, replacing an earlier config;
// nullopt unregisters it. Each registration starts a new generation (see CacheKeyPrefix).
void SetAutoSharding(const Placement& placement, std::optional<AutoShardingConfig> config);

// "" for a placement that is not registered, else a prefix naming the registration, for the
// lowering cache's keys: a module lowered under another registration (or none) is not reused.
std::string AutoShardingCacheKeyPrefix(const Placement& placement);

// When the graph's placement is registered: chooses every instruction's sharding by the ILP
// (entry parameters without sharding=, such as free leaves, included; annotated ones kept), writes
// them as sharding= and keeps the plan as the placement's record. Otherwise does nothing. A graph
// the ILP cannot plan (UNIMPLEMENTED: an op without a rule, a manual region's collectives) that
// reads no free leaf is left to propagation.
absl::Status AutoShardGraph(LoweredGraph& graph);

// The record of the last graph planned on `placement` since the last call, taken out.
std::optional<AutoShardingRecord> TakeAutoShardingRecord(const Placement& placement);

}  // namespace vkspmd::lazy
