// Moving values between the host and the devices for the lazy runtime, counted in the metrics:
// uploads of host data, gathers for reading, and resharding a value that a graph wants on
// another mesh or with another sharding (through the host: gather, then scatter).
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "src/exec/sharded_buffer.h"
#include "src/lazy/device_pool.h"
#include "src/lazy/device_value.h"

namespace vkspmd::lazy {

absl::StatusOr<std::unique_ptr<exec::ShardedBuffer>> UploadValue(const ir::Literal& value,
                                                                 const Placement& placement,
                                                                 const spmd::AxisSharding& sharding,
                                                                 DevicePool& pool);

absl::StatusOr<ir::Literal> DownloadValue(const exec::ShardedBuffer& buffer);

// `value`'s buffer when it already lives on `placement` with `sharding`; otherwise a resharded
// copy, kept alive by `copies`.
absl::StatusOr<const exec::ShardedBuffer*> BufferAs(
    const DeviceValue& value, const Placement& placement, const spmd::AxisSharding& sharding,
    DevicePool& pool, std::vector<std::unique_ptr<exec::ShardedBuffer>>& copies);

}  // namespace vkspmd::lazy
