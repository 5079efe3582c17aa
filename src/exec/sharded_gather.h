// Reading a ShardedBuffer whose shards are spread over several processes: from the shards this
// process holds where they cover the value (replicas stand in for other processes' shards), else
// all-gathered through the job's collectives::World.
#pragma once

#include "absl/status/statusor.h"
#include "src/collectives/world.h"
#include "src/exec/sharded_buffer.h"
#include "src/ir/literal.h"

namespace vkspmd::exec {

// Whether every device's shard equals (by replication) a shard this process holds.
bool CoveredByAddressable(const ShardedBuffer& buffer);

// The full value from this process's shards; FAILED_PRECONDITION naming a device whose shard no
// local device replicates (or the donated value's error).
absl::StatusOr<ir::Literal> GatherAddressable(const ShardedBuffer& buffer);

// The full value on every process: each local device's shard is all-gathered over every rank of
// `world` (rank d = the buffer's mesh device d), then assembled. A collective: every process of
// the job must call it for the same value, in the same order relative to its other collectives,
// and no program of `world` may be running meanwhile.
absl::StatusOr<ir::Literal> GatherThroughWorld(const ShardedBuffer& buffer,
                                               collectives::World& world);

}  // namespace vkspmd::exec
