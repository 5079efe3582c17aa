// Dot kernel tiling (see dot_tiling.h).
#include "src/codegen/dot_tiling.h"

#include <algorithm>

namespace vkspmd::codegen {

std::vector<int64_t> FreeDims(const ir::Instruction& operand, const std::vector<int64_t>& batch,
                              const std::vector<int64_t>& contracting) {
  std::vector<int64_t> free;
  for (int64_t k = 0; k < operand.shape().rank(); ++k) {
    if (std::find(batch.begin(), batch.end(), k) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), k) == contracting.end()) {
      free.push_back(k);
    }
  }
  return free;
}

namespace {

int64_t FreeSize(const ir::Instruction& operand, const std::vector<int64_t>& batch,
                 const std::vector<int64_t>& contracting) {
  std::vector<int64_t> sizes;
  for (int64_t dim : FreeDims(operand, batch, contracting)) {
    sizes.push_back(operand.shape().dimension(dim));
  }
  return ir::Product(sizes);
}

}  // namespace

DotTiling TileDot(const ir::Instruction& dot, const TargetInfo& target, int64_t max_iterations) {
  const ir::DotDimensions& d = dot.attributes().dot;
  DotTiling tiling;
  tiling.rows = FreeSize(*dot.operand(0), d.lhs_batch, d.lhs_contracting);
  tiling.columns = FreeSize(*dot.operand(1), d.rhs_batch, d.rhs_contracting);
  std::vector<int64_t> batch_sizes(dot.shape().dimensions().begin(),
                                   dot.shape().dimensions().begin() + d.lhs_batch.size());
  std::vector<int64_t> contracting_sizes;
  for (int64_t dim : d.lhs_contracting) {
    contracting_sizes.push_back(dot.operand(0)->shape().dimension(dim));
  }
  tiling.contraction = ir::Product(contracting_sizes);
  tiling.chunk = max_iterations;
  if (dot.shape().ElementCount() == 0) return tiling;  // Nothing to compute or store.

  // Lanes run along the longer free side (the result's columns unless it has fewer columns than
  // rows and fewer than a workgroup of lanes, as in a matrix-vector product).
  // At least 64 lanes: llvmpipe runs a workgroup's groups of 8 lanes back to back (8-lane
  // workgroups measured 2x slower), and 64 is two warps or one wavefront on GPUs.
  const int64_t lanes = std::max<int64_t>(64, target.subgroup_size);
  tiling.lanes = lanes;
  tiling.swapped = tiling.columns < lanes && tiling.columns < tiling.rows;
  const int64_t uniform_size = tiling.swapped ? tiling.columns : tiling.rows;
  const int64_t lane_size = tiling.swapped ? tiling.rows : tiling.columns;
  tiling.per_lane =
      std::clamp<int64_t>((lane_size + lanes - 1) / lanes, int64_t{1}, kColumnsPerLane);
  tiling.tiles = (uniform_size + kRowsPerTile - 1) / kRowsPerTile;
  tiling.blocks = (lane_size + lanes * tiling.per_lane - 1) / (lanes * tiling.per_lane);
  tiling.chunks = std::max<int64_t>((tiling.contraction + max_iterations - 1) / max_iterations, 1);
  tiling.groups = ir::Product(batch_sizes) * tiling.tiles * tiling.blocks * tiling.chunks;
  return tiling;
}

}  // namespace vkspmd::codegen
