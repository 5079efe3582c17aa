// A value that lives on the devices of a mesh as shards: one device buffer per mesh device, in
// the padded shard shape its sharding gives, holding the elements as the device stores them.
// Partitioned programs take and return ShardedBuffers, so values stay on the devices between
// runs; Scatter and Gather move them from and to the host.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/literal.h"
#include "src/runtime/buffer.h"
#include "src/runtime/mesh_device.h"
#include "src/spmd/axis_sharding.h"
#include "src/spmd/mesh.h"

namespace vkspmd::exec {

class ShardedBuffer {
 public:
  // Splits `value` under `sharding` and uploads shard d to `devices[d]` (one per mesh device,
  // in the mesh's device-id order 0..N-1; borrowed, they must outlive the buffer). A null device
  // is another process's: its shard is left out (not addressable here).
  static absl::StatusOr<std::unique_ptr<ShardedBuffer>> Scatter(
      const ir::Literal& value, const spmd::AxisSharding& sharding, const spmd::Mesh& mesh,
      const std::vector<runtime::MeshDevice*>& devices);
  // Uploads `shards[d]` (device d's shard in the padded shard shape, padding zero) to
  // `devices[d]` (none where devices[d] is null): a value assembled shard by shard (a restored
  // checkpoint) never exists whole.
  static absl::StatusOr<std::unique_ptr<ShardedBuffer>> FromHostShards(
      const ir::Shape& shape, const spmd::AxisSharding& sharding, const spmd::Mesh& mesh,
      const std::vector<runtime::MeshDevice*>& devices, const std::vector<ir::Literal>& shards);
  // Takes ownership of per-device buffers already holding the shards (e.g. a program's results).
  // A null shard is one this process cannot address (it lives in another process's devices).
  static absl::StatusOr<std::unique_ptr<ShardedBuffer>> FromShards(
      const ir::Shape& shape, const spmd::AxisSharding& sharding, const spmd::Mesh& mesh,
      std::vector<std::unique_ptr<runtime::Buffer>> shards);

  // Downloads every shard and assembles the full value. An error when some shard is not
  // addressable or the value was donated.
  absl::StatusOr<ir::Literal> Gather() const;
  // Device d's shard as stored (the padded shard shape), downloaded.
  absl::StatusOr<ir::Literal> DownloadShard(size_t device) const;
  // The same straight into `bytes` (the padded shard's size), without a converted copy: false
  // (nothing read) where the device stores the elements differently from the host (word-sized
  // predicates) or the shard cannot be read; DownloadShard then says why.
  absl::StatusOr<bool> DownloadShardBytes(size_t device, std::span<std::byte> bytes) const;

  // Whether this process holds device d's shard.
  bool addressable(size_t device) const { return shards_[device] != nullptr; }
  // Gives up every shard, as a donated argument does: the value no longer exists afterwards.
  std::vector<std::unique_ptr<runtime::Buffer>> Donate();
  bool donated() const { return donated_; }

  const ir::Shape& shape() const { return shape_; }
  const ir::Shape& shard_shape() const { return shard_shape_; }
  const spmd::AxisSharding& sharding() const { return sharding_; }
  const spmd::Mesh& mesh() const { return mesh_; }
  size_t shard_count() const { return shards_.size(); }
  const runtime::Buffer& shard(size_t device) const { return *shards_[device]; }

 private:
  ShardedBuffer(ir::Shape shape, ir::Shape shard_shape, spmd::AxisSharding sharding,
                spmd::Mesh mesh)
      : shape_(std::move(shape)),
        shard_shape_(std::move(shard_shape)),
        sharding_(std::move(sharding)),
        mesh_(std::move(mesh)) {}

  ir::Shape shape_;
  ir::Shape shard_shape_;
  spmd::AxisSharding sharding_;
  spmd::Mesh mesh_;
  std::vector<std::unique_ptr<runtime::Buffer>> shards_;
  bool donated_ = false;
};

}  // namespace vkspmd::exec
