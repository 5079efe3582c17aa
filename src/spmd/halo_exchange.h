// GSPMD's halo exchange (GSPMD-NOTES, "windowed ops"): a device fetches the rows of a split dim
// it lacks from its neighbours with collective-permutes of only those rows; halo_ops.h builds the
// window-like ops on it.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/instruction.h"
#include "src/spmd/spmd_builder.h"

namespace vkspmd::spmd {

// Integer division of window positions, which may lie before the operand (negative), rounding
// down and up.
inline int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
inline int64_t CeilDivSigned(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -(-a / b); }

// What the device holding shard k of a split dim wants of that dim: the positions
// [start, start + size) (size is common to all shards), of which the first `valid` are the
// result's own elements (the rest is padding of the result and may hold anything).
struct HaloWindow {
  int64_t start = 0;
  int64_t valid = 0;
};

// `local` is every device's shard of a value split along `dim` over mesh `axes` (shard k holds
// positions [k*s, (k+1)*s), s = its size; positions from `valid_size` on are padding). Returns
// per device the window `windows[k]` of the device's shard index k, `size` long: wanted
// positions inside [0, valid_size) are exact, the others unspecified (callers mask them). Each
// neighbour distance a window reaches costs one collective-permute of only the rows some
// device needs from that distance; a window inside the device's own shard moves nothing.
absl::StatusOr<ir::Instruction*> ExchangeHalo(SpmdBuilder& builder, ir::Instruction* local,
                                              int64_t dim, const std::vector<int64_t>& axes,
                                              int64_t valid_size,
                                              const std::vector<HaloWindow>& windows, int64_t size);

// The device holding shard `index` along `axes` with the same coordinates as `device` on the
// other axes.
int64_t DeviceWithIndex(const Mesh& mesh, int64_t device, const std::vector<int64_t>& axes,
                        int64_t index);

// Per partition id: the value `by_shard` gives the device's shard index along `axes`.
std::vector<int64_t> ByPartition(const Mesh& mesh, const std::vector<int64_t>& axes,
                                 const std::vector<int64_t>& by_shard);

// Keeps `value` where positions windows[k].start + index along `dim` lie in [0, limit) (k the
// device's shard index along `axes`), else `fill` (of `value`'s shape).
absl::StatusOr<ir::Instruction*> KeepInside(SpmdBuilder& builder, ir::Instruction* value,
                                            int64_t dim, const std::vector<int64_t>& axes,
                                            const std::vector<HaloWindow>& windows, int64_t limit,
                                            ir::Instruction* fill);

// Windows of a result dim `result_size` long, split `tiles` ways, whose position q is the
// source's position q - `shift`.
std::vector<HaloWindow> ShiftedWindows(int64_t result_size, int64_t tiles, int64_t shift);

}  // namespace vkspmd::spmd
