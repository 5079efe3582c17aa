// Gathering values whose shards live in several processes.
#include "src/exec/sharded_gather.h"

#include <cstring>
#include <map>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/exec/sharded_value.h"

namespace vkspmd::exec {
namespace {

// Which tile of the value device d holds: its shard index along every dim.
std::vector<int64_t> TileOf(const ShardedBuffer& buffer, int64_t device) {
  std::vector<int64_t> tile;
  for (int64_t dim = 0; dim < buffer.shape().rank(); ++dim) {
    tile.push_back(spmd::ShardIndex(buffer.sharding(), dim, buffer.mesh(), device));
  }
  return tile;
}

// For every device, an addressable device holding the same tile (itself when addressable), or
// nullopt where there is none.
std::vector<std::optional<size_t>> LocalReplicas(const ShardedBuffer& buffer) {
  const size_t n = buffer.shard_count();
  std::vector<std::optional<size_t>> replica(n);
  if (buffer.sharding().maximal_device.has_value()) {
    // Only the maximal device's shard is read (AssembleLiteral).
    const size_t maximal = static_cast<size_t>(*buffer.sharding().maximal_device);
    if (maximal < n && buffer.addressable(maximal)) replica[maximal] = maximal;
    return replica;
  }
  std::map<std::vector<int64_t>, size_t> local;
  for (size_t d = 0; d < n; ++d) {
    if (buffer.addressable(d)) local.emplace(TileOf(buffer, static_cast<int64_t>(d)), d);
  }
  for (size_t d = 0; d < n; ++d) {
    auto found = local.find(TileOf(buffer, static_cast<int64_t>(d)));
    if (found != local.end()) replica[d] = found->second;
  }
  return replica;
}

}  // namespace

bool CoveredByAddressable(const ShardedBuffer& buffer) {
  if (buffer.donated()) return true;  // Gather reports it.
  const std::vector<std::optional<size_t>> replica = LocalReplicas(buffer);
  if (buffer.sharding().maximal_device.has_value()) {
    const size_t maximal = static_cast<size_t>(*buffer.sharding().maximal_device);
    return maximal >= replica.size() || replica[maximal].has_value();
  }
  for (const std::optional<size_t>& r : replica) {
    if (!r.has_value()) return false;
  }
  return true;
}

absl::StatusOr<ir::Literal> GatherAddressable(const ShardedBuffer& buffer) {
  const size_t n = buffer.shard_count();
  bool all = true;
  for (size_t d = 0; d < n; ++d) all = all && buffer.addressable(d);
  if (all || buffer.donated()) return buffer.Gather();
  const std::vector<std::optional<size_t>> replica = LocalReplicas(buffer);
  std::map<size_t, ir::Literal> downloaded;
  std::vector<ir::Literal> shards(n);
  const std::optional<int64_t> maximal = buffer.sharding().maximal_device;
  for (size_t d = 0; d < n; ++d) {
    if (maximal.has_value() && static_cast<int64_t>(d) != *maximal) {
      shards[d] = ir::Literal(buffer.shard_shape());  // Not read.
      continue;
    }
    if (!replica[d].has_value()) {
      return absl::FailedPreconditionError(
          absl::StrCat("mesh device ", d, "'s shard of the ", buffer.shape().ToString(),
                       " value is not addressable from this process, nor replicated here"));
    }
    auto found = downloaded.find(*replica[d]);
    if (found == downloaded.end()) {
      VKSPMD_ASSIGN_OR_RETURN(ir::Literal shard, buffer.DownloadShard(*replica[d]));
      found = downloaded.emplace(*replica[d], std::move(shard)).first;
    }
    shards[d] = found->second;
  }
  return AssembleLiteral(shards, buffer.shape(), buffer.sharding(), buffer.mesh());
}

absl::StatusOr<ir::Literal> GatherThroughWorld(const ShardedBuffer& buffer,
                                               collectives::World& world) {
  const size_t n = buffer.shard_count();
  if (static_cast<size_t>(world.size()) != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gathering a value of ", n, " shards through a world of ", world.size(), " ranks"));
  }
  const std::vector<int> ranks = world.local_ranks();
  // Every local rank's shard as the host holds it; then one thread per local rank, since the
  // world meets this process's ranks together before it exchanges with the others.
  std::vector<ir::Literal> local(ranks.size());
  for (size_t k = 0; k < ranks.size(); ++k) {
    VKSPMD_ASSIGN_OR_RETURN(local[k], buffer.DownloadShard(static_cast<size_t>(ranks[k])));
  }
  const size_t shard_bytes = ir::Literal(buffer.shard_shape()).bytes().size();
  std::vector<std::byte> all(shard_bytes * n);
  std::vector<absl::Status> statuses(ranks.size());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < ranks.size(); ++k) {
    threads.emplace_back([&, k] {
      statuses[k] = [&]() -> absl::Status {
        VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<collectives::Communicator> communicator,
                                world.Connect(ranks[k]));
        const auto* data = reinterpret_cast<const std::byte*>(local[k].bytes().data());
        // Only the first local rank's output is kept; the others write into scratch space.
        std::vector<std::byte> scratch(k == 0 ? 0 : all.size());
        return communicator->AllGather(std::span(data, shard_bytes),
                                       k == 0 ? std::span(all) : std::span(scratch),
                                       collectives::ElementType::kU8, {});
      }();
      if (!statuses[k].ok()) world.Abort(statuses[k]);  // Local peers stop waiting for it.
    });
  }
  for (std::thread& thread : threads) thread.join();
  world.Reset();
  for (const absl::Status& status : statuses) VKSPMD_RETURN_IF_ERROR(status);
  std::vector<ir::Literal> shards;
  for (size_t d = 0; d < n; ++d) {
    ir::Literal shard(buffer.shard_shape());
    std::memcpy(shard.bytes().data(), all.data() + d * shard_bytes, shard_bytes);
    shards.push_back(std::move(shard));
  }
  return AssembleLiteral(shards, buffer.shape(), buffer.sharding(), buffer.mesh());
}

}  // namespace vkspmd::exec
