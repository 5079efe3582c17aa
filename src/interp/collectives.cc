// Collectives over emulated devices. Members of a group are taken in the order the group lists
// them, which fixes the reduction order and the concatenation order as XLA does.
#include "src/interp/collectives.h"

#include <algorithm>

#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/interp/shape_ops.h"
#include "src/ir/collective_groups.h"

namespace vkspmd::interp {
namespace {

using ir::Literal;

// The piece `index` of `count` equal pieces of `value` along `axis`.
Literal Chunk(const Literal& value, int64_t axis, int64_t index, int64_t count) {
  std::vector<int64_t> dims = value.shape().dimensions();
  dims[axis] /= count;
  Literal chunk(ir::Shape(value.dtype(), dims));
  std::vector<int64_t> start(dims.size(), 0);
  start[axis] = index * dims[axis];
  CopyBlock(value, start, chunk, std::vector<int64_t>(dims.size(), 0), dims);
  return chunk;
}

Literal Concatenate(const std::vector<const Literal*>& parts, int64_t axis) {
  std::vector<int64_t> dims = parts[0]->shape().dimensions();
  dims[axis] = 0;
  for (const Literal* part : parts) dims[axis] += part->shape().dimension(axis);
  Literal result(ir::Shape(parts[0]->dtype(), dims));
  std::vector<int64_t> start(dims.size(), 0);
  for (const Literal* part : parts) {
    CopyBlock(*part, std::vector<int64_t>(dims.size(), 0), result, start,
              part->shape().dimensions());
    start[axis] += part->shape().dimension(axis);
  }
  return result;
}

bool HasManualSubgroup(const ir::Sharding& sharding) {
  const std::vector<ir::SubgroupType>& types = sharding.subgroup_types();
  return sharding.kind() == ir::Sharding::Kind::kTiled &&
         std::find(types.begin(), types.end(), ir::SubgroupType::kManual) != types.end();
}

// The coordinates of `device` along the manual subgroup dims of `sharding`.
std::vector<int64_t> ManualIndex(const ir::Sharding& sharding, int64_t device) {
  const std::vector<int64_t> index = *sharding.TileIndexForDevice(device);
  const std::vector<ir::SubgroupType>& types = sharding.subgroup_types();
  const size_t first = index.size() - types.size();
  std::vector<int64_t> manual;
  for (size_t t = 0; t < types.size(); ++t) {
    if (types[t] == ir::SubgroupType::kManual) manual.push_back(index[first + t]);
  }
  return manual;
}

// The devices of `device`'s manual group under a sharding with a manual subgroup: those with
// its manual coordinates (the group that shares one manual value).
std::vector<int64_t> ManualGroup(const ir::Sharding& sharding, int64_t device) {
  const std::vector<int64_t> mine = ManualIndex(sharding, device);
  std::vector<int64_t> group;
  for (int64_t other : sharding.tile_assignment().Flatten()) {
    if (ManualIndex(sharding, other) == mine) group.push_back(other);
  }
  return group;
}

// Copies `device`'s tile of `from` under `from_sharding` to its tile of `to` under `to_sharding`
// (as much as both tiles hold): XLA's boundary ops hand each device's shard over unchanged.
void CopyTile(const Literal& from, const ir::Sharding& from_sharding, Literal& to,
              const ir::Sharding& to_sharding, int64_t device) {
  const std::vector<int64_t> from_start = from_sharding.TileOffsetForDevice(from.shape(), device);
  const std::vector<int64_t> from_limit = from_sharding.TileLimitForDevice(from.shape(), device);
  const std::vector<int64_t> to_start = to_sharding.TileOffsetForDevice(to.shape(), device);
  const std::vector<int64_t> to_limit = to_sharding.TileLimitForDevice(to.shape(), device);
  std::vector<int64_t> block;
  for (size_t i = 0; i < from_start.size(); ++i) {
    block.push_back(
        std::max<int64_t>(0, std::min(from_limit[i] - from_start[i], to_limit[i] - to_start[i])));
  }
  CopyBlock(from, from_start, to, to_start, block);
}

}  // namespace

absl::StatusOr<Literal> ExtractManualValue(const ir::Shape& manual_shape, const Literal& full,
                                           const ir::Sharding& full_sharding,
                                           const ir::Sharding& manual_sharding, int64_t partition) {
  if (!manual_sharding.TileIndexForDevice(partition).has_value()) {
    return absl::InvalidArgumentError(
        fmt::format("device {} is not in sharding {}", partition, manual_sharding.ToString()));
  }
  Literal manual(manual_shape);
  for (int64_t device : ManualGroup(manual_sharding, partition)) {
    CopyTile(full, full_sharding, manual, manual_sharding, device);
  }
  return manual;
}

absl::StatusOr<Literal> ExtractShard(const ir::Shape& shard_shape, const Literal& full,
                                     const ir::Sharding& sharding, int64_t partition) {
  Literal shard(shard_shape);
  if (sharding.kind() != ir::Sharding::Kind::kTiled) {
    if (shard_shape != full.shape()) {
      return absl::InvalidArgumentError("SPMDFullToShardShape of an untiled value changes shape");
    }
    return full;
  }
  if (!sharding.TileIndexForDevice(partition).has_value()) {
    return absl::InvalidArgumentError(
        fmt::format("device {} is not in sharding {}", partition, sharding.ToString()));
  }
  const std::vector<int64_t> start = sharding.TileOffsetForDevice(full.shape(), partition);
  const std::vector<int64_t> limit = sharding.TileLimitForDevice(full.shape(), partition);
  std::vector<int64_t> block;
  for (size_t i = 0; i < start.size(); ++i) {
    block.push_back(std::min(limit[i] - start[i], shard_shape.dimension(i)));
  }
  CopyBlock(full, start, shard, std::vector<int64_t>(start.size(), 0), block);
  return shard;
}

absl::StatusOr<std::vector<Literal>> EvaluateShardToFull(
    const ir::Instruction& instruction, const std::vector<const Literal*>& operands,
    int64_t partition_count) {
  const ir::Shape& full_shape = instruction.shape();
  std::vector<Literal> results;
  if (!instruction.sharding().has_value() ||
      instruction.sharding()->kind() != ir::Sharding::Kind::kTiled) {
    for (const Literal* operand : operands) {
      if (operand->shape() != full_shape) {
        return absl::InvalidArgumentError(
            fmt::format("{}: SPMDShardToFullShape needs a tiled sharding", instruction.Describe()));
      }
      results.push_back(*operand);
    }
    return results;
  }
  const ir::Sharding& sharding = *instruction.sharding();
  const int64_t device_count = static_cast<int64_t>(operands.size());
  const std::optional<ir::Sharding>& manual = instruction.operand(0)->sharding();
  if (manual.has_value() && HasManualSubgroup(*manual)) {
    // Each partition's tile of its manual value under the operand's sharding is its tile of
    // the result under the instruction's.
    for (int64_t device = 0; device < device_count; ++device) {
      Literal full(full_shape);
      const int64_t replica_base = device - device % partition_count;
      for (int64_t partition = 0; partition < partition_count; ++partition) {
        if (!sharding.TileIndexForDevice(partition).has_value() ||
            !manual->TileIndexForDevice(partition).has_value()) {
          continue;
        }
        CopyTile(*operands[replica_base + partition], *manual, full, sharding, partition);
      }
      results.push_back(std::move(full));
    }
    return results;
  }
  for (int64_t device = 0; device < device_count; ++device) {
    Literal full(full_shape);
    const int64_t replica_base = device - device % partition_count;
    for (int64_t partition = 0; partition < partition_count; ++partition) {
      // A partition outside the tile assignment holds nothing.
      if (!sharding.TileIndexForDevice(partition).has_value()) continue;
      const Literal& shard = *operands[replica_base + partition];
      const std::vector<int64_t> start = sharding.TileOffsetForDevice(full_shape, partition);
      const std::vector<int64_t> limit = sharding.TileLimitForDevice(full_shape, partition);
      std::vector<int64_t> block;
      for (size_t i = 0; i < start.size(); ++i) {
        block.push_back(std::min(limit[i] - start[i], shard.shape().dimension(i)));
      }
      CopyBlock(shard, std::vector<int64_t>(start.size(), 0), full, start, block);
    }
    results.push_back(std::move(full));
  }
  return results;
}

absl::StatusOr<std::vector<Literal>> EvaluateCollective(const ir::Instruction& instruction,
                                                        const std::vector<const Literal*>& operands,
                                                        int64_t replica_count,
                                                        int64_t partition_count,
                                                        const ComputationCaller& call) {
  const int64_t device_count = replica_count * partition_count;
  std::vector<Literal> results(device_count, Literal(instruction.shape()));
  if (instruction.opcode() == ir::Opcode::kCollectivePermute) {
    VKSPMD_ASSIGN_OR_RETURN(
        auto pairs, ir::CollectivePermuteDevicePairs(instruction, replica_count, partition_count));
    for (const auto& [source, target] : pairs) results[target] = *operands[source];
    return results;
  }
  VKSPMD_ASSIGN_OR_RETURN(auto groups,
                          ir::CollectiveDeviceGroups(instruction, replica_count, partition_count));
  const std::vector<int64_t>& dimensions = instruction.attributes().dimensions;
  for (const std::vector<int64_t>& group : groups) {
    const int64_t size = static_cast<int64_t>(group.size());
    std::vector<const Literal*> members;
    for (int64_t device : group) members.push_back(operands[device]);
    switch (instruction.opcode()) {
      case ir::Opcode::kAllReduce:
      case ir::Opcode::kReduceScatter: {
        Literal sum = *members[0];
        for (int64_t k = 1; k < size; ++k) {
          VKSPMD_RETURN_IF_ERROR(
              CombineElementwise(*instruction.attributes().to_apply, sum, *members[k], call));
        }
        for (int64_t k = 0; k < size; ++k) {
          results[group[k]] = instruction.opcode() == ir::Opcode::kAllReduce
                                  ? sum
                                  : Chunk(sum, dimensions[0], k, size);
        }
        break;
      }
      case ir::Opcode::kAllGather: {
        const Literal gathered = Concatenate(members, dimensions[0]);
        for (int64_t device : group) results[device] = gathered;
        break;
      }
      case ir::Opcode::kAllToAll: {
        for (int64_t receiver = 0; receiver < size; ++receiver) {
          std::vector<Literal> pieces;
          for (const Literal* sender : members) {
            pieces.push_back(Chunk(*sender, dimensions[0], receiver, size));
          }
          std::vector<const Literal*> parts;
          for (const Literal& piece : pieces) parts.push_back(&piece);
          results[group[receiver]] = Concatenate(parts, dimensions[0]);
        }
        break;
      }
      default:
        return absl::InternalError("not a collective");
    }
  }
  return results;
}

}  // namespace vkspmd::interp
