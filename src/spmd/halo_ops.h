// Window-like ops along split dims by GSPMD's halo exchange (halo_exchange.h): slice (any stride),
// pad (edge and interior), reverse, concatenate, dynamic-slice with constant starts and reshapes
// merging or splitting a split dim keep the tiling and move only the rows a device lacks.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/instruction.h"
#include "src/spmd/reshard.h"
#include "src/spmd/spmd_builder.h"

namespace vkspmd::spmd {

// The local form of such an op whose operands are split along a dim the op changes, run with halo
// exchange so that the result keeps the tiling: `operands` as they are now, `target` the result's
// wanted sharding. Operands of a slice, pad, reverse, concatenate or dynamic-slice split otherwise
// are resharded to `target` first. nullopt when the case is not one of these (the caller's
// general rule then gathers what must be whole, or masks a dynamic-slice): maximal or manual
// values, dynamic-slices of split dims at run-time starts, and reshapes other than merging or
// splitting one split dim with its unsplit neighbours in the result's device order.
absl::StatusOr<std::optional<PartitionedValue>> PartitionWithHalo(
    SpmdBuilder& builder, const ir::Instruction& instruction,
    const std::vector<PartitionedValue>& operands, const AxisSharding& target);

// Bytes per device PartitionWithHalo would send (its collectives emitted into a scratch
// program), or nullopt when it does not apply; the partitioner compares them with its rule's.
absl::StatusOr<std::optional<int64_t>> HaloBytes(const SpmdBuilder& builder,
                                                 const ir::Instruction& instruction,
                                                 const std::vector<PartitionedValue>& operands,
                                                 const AxisSharding& target);

}  // namespace vkspmd::spmd
