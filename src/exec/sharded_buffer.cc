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
  std::vector<std::unique_ptr<runtime::Buffer>> shards;
  for (int64_t d = 0; d < mesh.device_count(); ++d) {
    VKSPMD_ASSIGN_OR_RETURN(ir::Literal shard, ShardLiteral(value, sharding, mesh, d));
    const uint32_t element_bytes = DeviceElementBytes(value.dtype(), *devices[d]);
    std::vector<std::byte> bytes = ToDeviceBytes(shard, element_bytes);
    VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Buffer> buffer,
                            runtime::Buffer::Create(*devices[d], bytes.size()));
    if (!bytes.empty()) VKSPMD_RETURN_IF_ERROR(runtime::Upload(bytes, *buffer));
    shards.push_back(std::move(buffer));
  }
  return FromShards(value.shape(), sharding, mesh, std::move(shards));
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

absl::StatusOr<ir::Literal> ShardedBuffer::Gather() const {
  if (donated_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the ", shape_.ToString(), " value was donated to a program and no longer exists"));
  }
  std::vector<ir::Literal> shards;
  for (size_t d = 0; d < shards_.size(); ++d) {
    const std::unique_ptr<runtime::Buffer>& buffer = shards_[d];
    if (buffer == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot gather the ", shape_.ToString(), " value: mesh device ", d,
                       "'s shard is not addressable from this process"));
    }
    const uint32_t element_bytes = DeviceElementBytes(shape_.dtype(), buffer->device());
    std::vector<std::byte> bytes(element_bytes * static_cast<size_t>(shard_shape_.ElementCount()));
    if (buffer->size() < bytes.size()) {
      return absl::InternalError(absl::StrCat("a shard buffer holds ", buffer->size(), " bytes; ",
                                              shard_shape_.ToString(), " needs ", bytes.size()));
    }
    if (!bytes.empty()) VKSPMD_RETURN_IF_ERROR(runtime::Download(*buffer, 0, bytes));
    shards.push_back(FromDeviceBytes(shard_shape_, element_bytes, bytes));
  }
  return AssembleLiteral(shards, shape_, sharding_, mesh_);
}

}  // namespace vkspmd::exec
