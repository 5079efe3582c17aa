// XLA's replica-group semantics: which devices take part together in a collective, given
// channel_id, use_global_device_ids and replica_groups (list or iota form).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/instruction.h"

namespace vkspmd::ir {

// XLA's CollectiveOpGroupMode.
enum class CollectiveGroupMode {
  kCrossReplica,              // no channel_id: groups of replica ids, per partition
  kCrossPartition,            // channel_id on ops without use_global_device_ids: partition ids
  kCrossReplicaAndPartition,  // channel_id, use_global_device_ids=false: replica ids, all
                              // partitions
  kFlattenedId,               // channel_id, use_global_device_ids=true: global device ids
};

absl::StatusOr<CollectiveGroupMode> GetCollectiveGroupMode(const Instruction& collective);

// Groups of global device ids (replica * partition_count + partition) that run the collective
// together; every device is in exactly one group. Errors for ids out of range or repeated.
absl::StatusOr<std::vector<std::vector<int64_t>>> CollectiveDeviceGroups(
    const Instruction& collective, int64_t replica_count, int64_t partition_count);

// For collective-permute: (source, target) pairs of global device ids.
absl::StatusOr<std::vector<std::pair<int64_t, int64_t>>> CollectivePermuteDevicePairs(
    const Instruction& collective, int64_t replica_count, int64_t partition_count);

}  // namespace vkspmd::ir
