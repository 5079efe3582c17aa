// Host <-> device moves of lazy values.
#include "src/lazy/value_transfer.h"

#include "src/base/status_macros.h"
#include "src/debug/metrics.h"
#include "src/debug/trace_writer.h"
#include "src/exec/sharded_gather.h"
#include "src/lazy/distributed.h"

namespace vkspmd::lazy {

absl::StatusOr<std::unique_ptr<exec::ShardedBuffer>> UploadValue(const ir::Literal& value,
                                                                 const Placement& placement,
                                                                 const spmd::AxisSharding& sharding,
                                                                 DevicePool& pool) {
  debug::ScopedTraceSpan span("upload (host to device)");
  span.AddArg("bytes", static_cast<double>(value.bytes().size()));
  VKSPMD_ASSIGN_OR_RETURN(std::vector<runtime::MeshDevice*> devices, pool.DevicesFor(placement));
  VKSPMD_ASSIGN_OR_RETURN(
      std::unique_ptr<exec::ShardedBuffer> buffer,
      exec::ShardedBuffer::Scatter(value, sharding, placement.local_mesh, devices));
  debug::RecordHostToDevice(spmd::ByteSize(buffer->shard_shape()) *
                            static_cast<int64_t>(buffer->shard_count()));
  return buffer;
}

absl::StatusOr<ir::Literal> DownloadValue(const exec::ShardedBuffer& buffer) {
  debug::ScopedTraceSpan span("download (device to host)");
  // A shard of another process is read from a local replica of it where there is one, else
  // (only on the worker, in queue order) gathered through the job's collectives.
  const DistributedState* job = Distributed();
  absl::StatusOr<ir::Literal> gathered = job == nullptr || exec::CoveredByAddressable(buffer)
                                             ? exec::GatherAddressable(buffer)
                                             : exec::GatherThroughWorld(buffer, *job->world);
  VKSPMD_ASSIGN_OR_RETURN(ir::Literal value, std::move(gathered));
  debug::RecordDeviceToHost(spmd::ByteSize(buffer.shard_shape()) *
                            static_cast<int64_t>(buffer.shard_count()));
  return value;
}

absl::StatusOr<const exec::ShardedBuffer*> BufferAs(
    const DeviceValue& value, const Placement& placement, const spmd::AxisSharding& sharding,
    DevicePool& pool, std::vector<std::unique_ptr<exec::ShardedBuffer>>& copies) {
  VKSPMD_ASSIGN_OR_RETURN(const exec::ShardedBuffer* buffer, value.WaitBuffer());
  if (value.placement()->key == placement.key && buffer->sharding() == sharding) return buffer;
  VKSPMD_ASSIGN_OR_RETURN(ir::Literal host, DownloadValue(*buffer));
  VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<exec::ShardedBuffer> copy,
                          UploadValue(host, placement, sharding, pool));
  copies.push_back(std::move(copy));
  return copies.back().get();
}

}  // namespace vkspmd::lazy
