// Host values split into the shards a sharding gives each device of a mesh, and shards assembled
// back: the arguments and results of a partitioned program. Shards have the padded shard shape
// (ceil(dim / tiles), as GSPMD pads uneven dims at the end); padding is zero going in and
// ignored coming out.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/literal.h"
#include "src/spmd/axis_sharding.h"
#include "src/spmd/mesh.h"

namespace vkspmd::exec {

// Device `device`'s shard of `full` (an array) under `sharding`.
absl::StatusOr<ir::Literal> ShardLiteral(const ir::Literal& full,
                                         const spmd::AxisSharding& sharding, const spmd::Mesh& mesh,
                                         int64_t device);

// The full array of `shape` from every device's shard (`shards[d]` is device d's). Where several
// devices hold the same element (replication), the first device's copy is used.
absl::StatusOr<ir::Literal> AssembleLiteral(const std::vector<ir::Literal>& shards,
                                            const ir::Shape& shape,
                                            const spmd::AxisSharding& sharding,
                                            const spmd::Mesh& mesh);

}  // namespace vkspmd::exec
