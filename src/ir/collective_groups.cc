// Expansion of replica groups into groups of global device ids following XLA's
// GetParticipatingDevices, for every CollectiveGroupMode.
#include "src/ir/collective_groups.h"

#include <numeric>

#include "absl/strings/str_join.h"
#include "fmt/format.h"

namespace vkspmd::ir {
namespace {

absl::Status CheckIds(const std::vector<std::vector<int64_t>>& groups, int64_t limit,
                      std::string_view what) {
  std::vector<bool> seen(limit, false);
  for (const std::vector<int64_t>& group : groups) {
    for (int64_t id : group) {
      if (id < 0 || id >= limit) {
        return absl::InvalidArgumentError(
            fmt::format("{} id {} in replica_groups is outside 0..{}", what, id, limit - 1));
      }
      if (seen[id]) {
        return absl::InvalidArgumentError(
            fmt::format("{} id {} appears twice in replica_groups", what, id));
      }
      seen[id] = true;
    }
  }
  return absl::OkStatus();
}

std::vector<std::vector<int64_t>> GroupsOrAll(const std::vector<std::vector<int64_t>>& groups,
                                              int64_t count) {
  if (!groups.empty()) return groups;
  std::vector<int64_t> all(count);
  std::iota(all.begin(), all.end(), 0);
  return {all};
}

}  // namespace

absl::StatusOr<CollectiveGroupMode> GetCollectiveGroupMode(const Instruction& collective) {
  const InstructionAttributes& attributes = collective.attributes();
  const bool has_global_flag = collective.opcode() == Opcode::kAllReduce ||
                               collective.opcode() == Opcode::kAllGather ||
                               collective.opcode() == Opcode::kReduceScatter;
  if (!attributes.channel_id.has_value()) {
    if (attributes.use_global_device_ids) {
      return absl::InvalidArgumentError("use_global_device_ids=true needs a channel_id");
    }
    return CollectiveGroupMode::kCrossReplica;
  }
  if (!has_global_flag) return CollectiveGroupMode::kCrossPartition;
  return attributes.use_global_device_ids ? CollectiveGroupMode::kFlattenedId
                                          : CollectiveGroupMode::kCrossReplicaAndPartition;
}

absl::StatusOr<std::vector<std::vector<int64_t>>> CollectiveDeviceGroups(
    const Instruction& collective, int64_t replica_count, int64_t partition_count) {
  absl::StatusOr<CollectiveGroupMode> mode = GetCollectiveGroupMode(collective);
  if (!mode.ok()) return mode.status();
  const std::vector<std::vector<int64_t>> listed = collective.attributes().replica_groups.Expand();
  std::vector<std::vector<int64_t>> device_groups;
  switch (*mode) {
    case CollectiveGroupMode::kCrossReplica: {
      const auto groups = GroupsOrAll(listed, replica_count);
      if (absl::Status status = CheckIds(groups, replica_count, "replica"); !status.ok()) {
        return status;
      }
      for (int64_t partition = 0; partition < partition_count; ++partition) {
        for (const auto& group : groups) {
          std::vector<int64_t> devices;
          for (int64_t replica : group) devices.push_back(replica * partition_count + partition);
          device_groups.push_back(devices);
        }
      }
      break;
    }
    case CollectiveGroupMode::kCrossPartition: {
      const auto groups = GroupsOrAll(listed, partition_count);
      if (absl::Status status = CheckIds(groups, partition_count, "partition"); !status.ok()) {
        return status;
      }
      for (int64_t replica = 0; replica < replica_count; ++replica) {
        for (const auto& group : groups) {
          std::vector<int64_t> devices;
          for (int64_t partition : group) devices.push_back(replica * partition_count + partition);
          device_groups.push_back(devices);
        }
      }
      break;
    }
    case CollectiveGroupMode::kCrossReplicaAndPartition: {
      const auto groups = GroupsOrAll(listed, replica_count);
      if (absl::Status status = CheckIds(groups, replica_count, "replica"); !status.ok()) {
        return status;
      }
      for (const auto& group : groups) {
        std::vector<int64_t> devices;
        for (int64_t replica : group) {
          for (int64_t partition = 0; partition < partition_count; ++partition) {
            devices.push_back(replica * partition_count + partition);
          }
        }
        device_groups.push_back(devices);
      }
      break;
    }
    case CollectiveGroupMode::kFlattenedId: {
      device_groups = GroupsOrAll(listed, replica_count * partition_count);
      if (absl::Status status = CheckIds(device_groups, replica_count * partition_count, "device");
          !status.ok()) {
        return status;
      }
      break;
    }
  }
  size_t covered = 0;
  for (const auto& group : device_groups) {
    if (group.size() != device_groups.front().size()) {
      return absl::InvalidArgumentError("replica groups must all have the same size");
    }
    covered += group.size();
  }
  if (static_cast<int64_t>(covered) != replica_count * partition_count) {
    return absl::InvalidArgumentError(
        fmt::format("replica groups cover {} of the {} devices ({} replicas x {} partitions)",
                    covered, replica_count * partition_count, replica_count, partition_count));
  }
  return device_groups;
}

absl::StatusOr<std::vector<std::pair<int64_t, int64_t>>> CollectivePermuteDevicePairs(
    const Instruction& collective, int64_t replica_count, int64_t partition_count) {
  const bool by_partition = collective.attributes().channel_id.has_value();
  const int64_t limit = by_partition ? partition_count : replica_count;
  std::vector<bool> source_seen(limit, false), target_seen(limit, false);
  for (const auto& [source, target] : collective.attributes().source_target_pairs) {
    if (source < 0 || source >= limit || target < 0 || target >= limit) {
      return absl::InvalidArgumentError(
          fmt::format("source_target_pairs {{{},{}}} is outside 0..{}", source, target, limit - 1));
    }
    if (source_seen[source] || target_seen[target]) {
      return absl::InvalidArgumentError(fmt::format(
          "source_target_pairs {{{},{}}} repeats a source or a target", source, target));
    }
    source_seen[source] = target_seen[target] = true;
  }
  std::vector<std::pair<int64_t, int64_t>> pairs;
  const int64_t other_count = by_partition ? replica_count : partition_count;
  for (int64_t other = 0; other < other_count; ++other) {
    for (const auto& [source, target] : collective.attributes().source_target_pairs) {
      if (by_partition) {
        pairs.emplace_back(other * partition_count + source, other * partition_count + target);
      } else {
        pairs.emplace_back(source * partition_count + other, target * partition_count + other);
      }
    }
  }
  return pairs;
}

}  // namespace vkspmd::ir
