// Moving sharded values between the host and the devices.
#include "src/exec/sharded_buffer.h"

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/exec/executable.h"
#include "src/exec/sharded_value.h"
#include "src/runtime/transfers.h"

namespace vkspmd::exec {

absl::StatusOr<std::unique_ptr<ShardedBuffer>> ShardedBuffer::Scatter(
    const ir::Literal& value, const spmd::AxisSharding& sharding, const spmd::Mesh& mesh,
    const std::vector<runtime::MeshDevice*>& devices) {
  if (static_cast<int64_t>(devices.size()) != mesh.device_count()) {
    return absl::InvalidArgumentError(absl::StrCat("mesh ", mesh.ToString(), " has ",
                                                   mesh.device_count(), " devices; ",
                                                   devices.size(), " were given"));
  }
  std::vector<ir::Literal> shards;
  for (int64_t d = 0; d < mesh.device_count(); ++d) {
    if (devices[d] == nullptr) {  // Another process's device: its shard is uploaded there.
      shards.emplace_back();
      continue;
    }
    VKSPMD_ASSIGN_OR_RETURN(ir::Literal shard, ShardLiteral(value, sharding, mesh, d));
    shards.push_back(std::move(shard));
  }
  return FromHostShards(value.shape(), sharding, mesh, devices, shards);
}

absl::StatusOr<std::unique_ptr<ShardedBuffer>> ShardedBuffer::FromHostShards(
    const ir::Shape& shape, const spmd::AxisSharding& sharding, const spmd::Mesh& mesh,
    const std::vector<runtime::MeshDevice*>& devices, const std::vector<ir::Literal>& shards) {
  if (static_cast<int64_t>(devices.size()) != mesh.device_count() ||
      shards.size() != devices.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("mesh ", mesh.ToString(), " has ", mesh.device_count(), " devices; ",
                     devices.size(), " devices and ", shards.size(), " shards were given"));
  }
  std::vector<std::unique_ptr<runtime::Buffer>> buffers;
  for (size_t d = 0; d < shards.size(); ++d) {
    if (devices[d] == nullptr) {
      buffers.emplace_back();  // Not addressable from this process.
      continue;
    }
    const uint32_t element_bytes = DeviceElementBytes(shape.dtype(), *devices[d]);
    // Where the device stores elements as the host does (all but word-sized predicates), the
    // literal's bytes go up as they are, without a converted copy.
    std::vector<std::byte> converted;
    std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(shards[d].bytes().data()),
                                     shards[d].bytes().size());
    if (element_bytes != ir::DTypeByteSize(shape.dtype())) {
      converted = ToDeviceBytes(shards[d], element_bytes);
      bytes = converted;
    }
    VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Buffer> buffer,
                            runtime::Buffer::Create(*devices[d], bytes.size()));
    if (!bytes.empty()) VKSPMD_RETURN_IF_ERROR(runtime::Upload(bytes, *buffer));
    buffers.push_back(std::move(buffer));
  }
  return FromShards(shape, sharding, mesh, std::move(buffers));
}

absl::StatusOr<std::unique_ptr<ShardedBuffer>> ShardedBuffer::FromShards(
    const ir::Shape& shape, const spmd::AxisSharding& sharding, const spmd::Mesh& mesh,
    std::vector<std::unique_ptr<runtime::Buffer>> shards) {
  if (static_cast<int64_t>(shards.size()) != mesh.device_count()) {
    return absl::InvalidArgumentError(
        absl::StrCat(shards.size(), " shards for mesh ", mesh.ToString()));
  }
  ir::Shape shard_shape =
      sharding.maximal_device.has_value() ? shape : spmd::ShardShape(shape, sharding, mesh);
  std::unique_ptr<ShardedBuffer> buffer(
      new ShardedBuffer(shape, std::move(shard_shape), sharding, mesh));
  buffer->shards_ = std::move(shards);
  return buffer;
}

std::vector<std::unique_ptr<runtime::Buffer>> ShardedBuffer::Donate() {
  donated_ = true;
  std::vector<std::unique_ptr<runtime::Buffer>> shards = std::move(shards_);
  shards_.clear();
  shards_.resize(shards.size());
  return shards;
}

absl::StatusOr<bool> ShardedBuffer::DownloadShardBytes(size_t device,
                                                       std::span<std::byte> bytes) const {
  if (donated_ || device >= shards_.size() || shards_[device] == nullptr) return false;
  const runtime::Buffer& buffer = *shards_[device];
  const uint32_t element_bytes = DeviceElementBytes(shape_.dtype(), buffer.device());
  if (element_bytes != ir::DTypeByteSize(shape_.dtype())) return false;
  if (bytes.size() != element_bytes * static_cast<size_t>(shard_shape_.ElementCount()) ||
      buffer.size() < bytes.size()) {
    return absl::InternalError(absl::StrCat("a shard download of ", bytes.size(), " bytes for ",
                                            shard_shape_.ToString(), " from a buffer of ",
                                            buffer.size()));
  }
  if (!bytes.empty()) VKSPMD_RETURN_IF_ERROR(runtime::Download(buffer, 0, bytes));
  return true;
}

absl::StatusOr<ir::Literal> ShardedBuffer::DownloadShard(size_t device) const {
  if (donated_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the ", shape_.ToString(), " value was donated to a program and no longer exists"));
  }
  if (device >= shards_.size() || shards_[device] == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("mesh device ", device, "'s shard of the ", shape_.ToString(),
                     " value is not addressable from this process"));
  }
  const runtime::Buffer& buffer = *shards_[device];
  const uint32_t element_bytes = DeviceElementBytes(shape_.dtype(), buffer.device());
  std::vector<std::byte> bytes(element_bytes * static_cast<size_t>(shard_shape_.ElementCount()));
  if (buffer.size() < bytes.size()) {
    return absl::InternalError(absl::StrCat("a shard buffer holds ", buffer.size(), " bytes; ",
                                            shard_shape_.ToString(), " needs ", bytes.size()));
  }
  if (!bytes.empty()) VKSPMD_RETURN_IF_ERROR(runtime::Download(buffer, 0, bytes));
  return FromDeviceBytes(shard_shape_, element_bytes, bytes);
}

absl::StatusOr<ir::Literal> ShardedBuffer::Gather() const {
  std::vector<ir::Literal> shards;
  for (size_t d = 0; d < shards_.size(); ++d) {
    VKSPMD_ASSIGN_OR_RETURN(ir::Literal shard, DownloadShard(d));
    shards.push_back(std::move(shard));
  }
  return AssembleLiteral(shards, shape_, sharding_, mesh_);
}

}  // namespace vkspmd::exec
