// Device-to-host staging of the distinct shards of each tensor.
#include "src/checkpoint/snapshot.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/debug/metrics.h"
#include "src/debug/trace_writer.h"
#include "src/lazy/context.h"
#include "src/lazy/engine.h"
#include "src/spmd/axis_sharding.h"

namespace vkspmd::checkpoint {
namespace {

ShardBytes LiteralBytes(const ir::Literal& literal) {
  return ShardBytes(literal.bytes().begin(), literal.bytes().end());
}

// The global box of local device d's shard (the whole tensor for a maximal sharding).
Box DeviceBox(const ir::Shape& shape, const spmd::AxisSharding& sharding, const spmd::Mesh& mesh,
              int64_t device) {
  if (sharding.maximal_device.has_value()) return Box::Whole(shape.dimensions());
  Box box;
  for (int64_t dim = 0; dim < shape.rank(); ++dim) {
    const int64_t offset = spmd::ShardOffset(shape, sharding, dim, mesh, device);
    box.start.push_back(offset);
    box.stop.push_back(offset + spmd::ShardValidSize(shape, sharding, dim, mesh, device));
  }
  return box;
}

// Device d's shard into `shard.bytes`, only the elements of `shard.box`: straight from the device
// when the shard has no padding and the device stores elements as the host does (one copy),
// else through the padded shard.
absl::Status DownloadBox(const exec::ShardedBuffer& buffer, size_t d, int64_t element_bytes,
                         ShardSnapshot& shard) {
  const std::vector<int64_t>& padded_dims = buffer.shard_shape().dimensions();
  const Box& box = shard.box;
  shard.bytes.resize(static_cast<size_t>(box.ElementCount() * element_bytes));
  if (box.Extent() == padded_dims) {
    VKSPMD_ASSIGN_OR_RETURN(
        bool done, buffer.DownloadShardBytes(
                       d, std::span<std::byte>(reinterpret_cast<std::byte*>(shard.bytes.data()),
                                               shard.bytes.size())));
    if (done) return absl::OkStatus();
  }
  VKSPMD_ASSIGN_OR_RETURN(ir::Literal padded, buffer.DownloadShard(d));
  // The padded shard starts at the box's start; cut the valid part out of it.
  Box padded_box{box.start, box.start};
  for (size_t dim = 0; dim < padded_dims.size(); ++dim) padded_box.stop[dim] += padded_dims[dim];
  CopyRegion(box, padded.bytes().data(), padded_box, padded_dims, shard.bytes.data(), box,
             box.Extent(), element_bytes);
  return absl::OkStatus();
}

// Stages one tensor held on the devices (runs on the engine's worker).
absl::Status StageDeviceTensor(const lazy::DeviceValue& value, TensorSnapshot& tensor) {
  VKSPMD_ASSIGN_OR_RETURN(const exec::ShardedBuffer* buffer, value.WaitBuffer());
  const lazy::Placement& placement = *value.placement();
  const spmd::AxisSharding& sharding = buffer->sharding();
  if (sharding.manual) {
    return absl::FailedPreconditionError(
        absl::StrCat("tensor \"", tensor.description.name,
                     "\" is inside a manual sharding region; leave it before saving"));
  }
  if (placement.is_mesh) {
    tensor.description.mesh_shape = placement.mesh.shape();
    tensor.description.mesh_devices = placement.mesh.device_ids();
    tensor.description.mesh_axes = placement.mesh.axis_names();
    tensor.description.sharding = spmd::ToHloSharding(sharding, placement.mesh).ToString();
    tensor.description.sharding_axes = sharding.ToString(placement.mesh);
  }
  const ir::Shape& shape = buffer->shape();
  const int64_t element_bytes = ir::DTypeByteSize(shape.dtype());
  std::vector<Box> seen;
  for (size_t d = 0; d < buffer->shard_count(); ++d) {
    const int64_t device = static_cast<int64_t>(d);
    if (sharding.maximal_device.has_value() && *sharding.maximal_device != device) continue;
    // Another process's device (a job of several processes): that process saves its shards.
    if (!buffer->donated() && !buffer->addressable(d)) continue;
    Box box = DeviceBox(shape, sharding, placement.local_mesh, device);
    auto known = std::find(seen.begin(), seen.end(), box);
    if (known != seen.end()) {
      tensor.shards[known - seen.begin()].devices.push_back(placement.devices[d]);
      continue;
    }
    ShardSnapshot shard{box, {placement.devices[d]}, {}};
    VKSPMD_RETURN_IF_ERROR(DownloadBox(*buffer, d, element_bytes, shard));
    debug::RecordDeviceToHost(static_cast<int64_t>(shard.bytes.size()));
    seen.push_back(box);
    tensor.shards.push_back(std::move(shard));
  }
  return absl::OkStatus();
}

}  // namespace

int64_t Snapshot::ByteSize() const {
  int64_t bytes = 0;
  for (const TensorSnapshot& tensor : tensors) {
    for (const ShardSnapshot& shard : tensor.shards)
      bytes += static_cast<int64_t>(shard.bytes.size());
  }
  return bytes;
}

absl::StatusOr<Snapshot> TakeSnapshot(const std::vector<NamedTensor>& tensors) {
  debug::ScopedTraceSpan span("checkpoint stage", "checkpoint");
  span.AddArg("tensors", static_cast<double>(tensors.size()));
  std::set<std::string> names;
  std::vector<std::shared_ptr<lazy::TensorState>> states;
  for (const NamedTensor& tensor : tensors) {
    if (tensor.name.empty()) return absl::InvalidArgumentError("a tensor to save has no name");
    if (!names.insert(tensor.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("two tensors to save are both called \"", tensor.name, "\""));
    }
    if (tensor.state == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("tensor \"", tensor.name, "\" is undefined"));
    }
    states.push_back(tensor.state);
  }
  VKSPMD_RETURN_IF_ERROR(lazy::Context::Get().Sync(states, lazy::SyncCause::kUserSync,
                                                   std::source_location::current()));
  Snapshot snapshot;
  // The nodes as they are now: later assignments (on this thread) do not change what is staged.
  std::vector<lazy::NodePtr> nodes;
  for (const NamedTensor& tensor : tensors) nodes.push_back(tensor.state->node);
  VKSPMD_RETURN_IF_ERROR(lazy::Engine::Get().Call([&](lazy::DevicePool&) -> absl::Status {
    for (size_t i = 0; i < tensors.size(); ++i) {
      const lazy::Node& node = *nodes[i];
      TensorSnapshot tensor;
      tensor.description.name = tensors[i].name;
      tensor.description.dtype = node.shape().dtype();
      tensor.description.shape = node.shape().dimensions();
      if (node.device_value != nullptr) {
        absl::Status staged = StageDeviceTensor(*node.device_value, tensor);
        if (!staged.ok()) {
          return absl::Status(staged.code(), absl::StrCat("saving tensor \"", tensors[i].name,
                                                          "\": ", staged.message()));
        }
      } else if (node.host_value.has_value()) {
        tensor.shards.push_back(
            {Box::Whole(node.shape().dimensions()), {}, LiteralBytes(*node.host_value)});
      } else {
        return absl::InternalError(
            absl::StrCat("tensor \"", tensors[i].name, "\" is still pending after a sync"));
      }
      snapshot.tensors.push_back(std::move(tensor));
    }
    return absl::OkStatus();
  }));
  return snapshot;
}

}  // namespace vkspmd::checkpoint
