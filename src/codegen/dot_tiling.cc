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

namespace {

bool FreeDimsTrailing(const ir::Instruction& operand, const std::vector<int64_t>& free) {
  for (size_t j = 0; j < free.size(); ++j) {
    if (free[j] != operand.shape().rank() - static_cast<int64_t>(free.size() - j)) return false;
  }
  return true;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

namespace {

// The dims of the transpose `operand` mapped onto its operand's dims; false where the free dims
// would not stay in increasing order.
bool MapThroughTranspose(const ir::Instruction& operand, std::vector<int64_t>& batch,
                         std::vector<int64_t>& contracting) {
  const std::vector<int64_t>& permutation = operand.attributes().dimensions;
  int64_t previous = -1;
  for (int64_t dim : FreeDims(operand, batch, contracting)) {
    if (permutation[dim] <= previous) return false;
    previous = permutation[dim];
  }
  for (int64_t& dim : batch) dim = permutation[dim];
  for (int64_t& dim : contracting) dim = permutation[dim];
  return true;
}

// The chunks of a GPU tile kernel (tiles and blocks set): the whole contraction, or split-K while
// the result has fewer than kGpuWorkgroupTarget workgroups, in whole slabs of `depth` steps of at
// least kGpuMinChunk, with at most 64 MiB of f32 partial sums, and within `max_iterations` where
// the device bounds loops (lavapipe running this variant in tests).
void SplitGpuContraction(const ir::Instruction& dot, const TargetInfo& target, int64_t batch,
                         int64_t depth, int64_t max_iterations, DotTiling& tiling) {
  const int64_t output_groups = batch * tiling.tiles * tiling.blocks;
  const int64_t partial_bytes = dot.shape().ElementCount() * 4;
  int64_t chunks = 1;
  if (output_groups < kGpuWorkgroupTarget) {
    chunks =
        std::min(CeilDiv(kGpuWorkgroupTarget, output_groups), tiling.contraction / kGpuMinChunk);
    chunks = std::min(chunks, std::max<int64_t>((int64_t{64} << 20) / partial_bytes, 1));
    chunks = std::max<int64_t>(chunks, 1);
  }
  int64_t chunk = CeilDiv(CeilDiv(tiling.contraction, chunks), depth) * depth;
  if (target.loop_iteration_limit != 0) {
    chunk = std::min(chunk, std::max(max_iterations / depth, int64_t{1}) * depth);
  }
  tiling.chunk = chunk;
  tiling.chunks = CeilDiv(tiling.contraction, chunk);
  tiling.groups = output_groups * tiling.chunks;
}

}  // namespace

int64_t MatrixSharedBytes(const DotTiling& tiling) {
  const int64_t rows = tiling.warps_m * tiling.frags_m * tiling.matrix_m;
  const int64_t columns = tiling.warps_n * tiling.frags_n * tiling.matrix_n;
  const int64_t staged = rows * (tiling.depth + kMatrixPad) + tiling.depth * (columns + kMatrixPad);
  return 2 * staged + 4 * tiling.warps_m * tiling.warps_n * tiling.matrix_m * tiling.matrix_n;
}

bool UseCooperativeMatrix(const ir::Instruction& dot, const DotOperands& operands,
                          const TargetInfo& target) {
  const TargetInfo::MatrixShape& shape = target.cooperative_matrix_f16;
  DotTiling small;
  small.matrix_m = shape.m;
  small.matrix_n = shape.n;
  small.depth = std::max<int64_t>(kMatrixDepth, shape.k);
  small.warps_m = kMatrixWarpsM;
  small.warps_n = kMatrixWarpsN;
  small.frags_m = small.frags_n = kMatrixFrags;
  if (shape.m == 0 || MatrixSharedBytes(small) > target.max_shared_memory_bytes ||
      operands.lhs->shape().dtype() != ir::DType::kF16 ||
      operands.rhs->shape().dtype() != ir::DType::kF16) {
    return false;
  }
  // The IR's dot has one dtype for operands and result, so the result is f16 too.
  if (dot.shape().dtype() != ir::DType::kF16) return false;
  const ir::DotDimensions& d = operands.dims;
  int64_t contraction = 1;
  for (int64_t dim : d.lhs_contracting) contraction *= operands.lhs->shape().dimension(dim);
  return FreeSize(*operands.lhs, d.lhs_batch, d.lhs_contracting) >= shape.m &&
         FreeSize(*operands.rhs, d.rhs_batch, d.rhs_contracting) >= shape.n &&
         contraction >= shape.k;
}

bool CanReadThroughTranspose(const ir::Instruction& dot, int64_t k) {
  const ir::Instruction& operand = *dot.operand(k);
  if (operand.opcode() != ir::Opcode::kTranspose) return false;
  const ir::DotDimensions& d = dot.attributes().dot;
  std::vector<int64_t> batch = k == 0 ? d.lhs_batch : d.rhs_batch;
  std::vector<int64_t> contracting = k == 0 ? d.lhs_contracting : d.rhs_contracting;
  return MapThroughTranspose(operand, batch, contracting);
}

DotOperands ViewDotOperands(const ir::Instruction& dot,
                            const std::function<bool(const ir::Instruction*)>& in_buffer) {
  DotOperands view{dot.operand(0), dot.operand(1), dot.attributes().dot};
  auto look_through = [&](const ir::Instruction*& operand, std::vector<int64_t>& batch,
                          std::vector<int64_t>& contracting) {
    if (operand->opcode() != ir::Opcode::kTranspose || !in_buffer(operand->operand(0))) return;
    std::vector<int64_t> mapped_batch = batch, mapped_contracting = contracting;
    if (!MapThroughTranspose(*operand, mapped_batch, mapped_contracting)) return;
    operand = operand->operand(0);
    batch = std::move(mapped_batch);
    contracting = std::move(mapped_contracting);
  };
  look_through(view.lhs, view.dims.lhs_batch, view.dims.lhs_contracting);
  look_through(view.rhs, view.dims.rhs_batch, view.dims.rhs_contracting);
  return view;
}

DotTiling TileDot(const ir::Instruction& dot, const DotOperands& operands, const TargetInfo& target,
                  int64_t max_iterations) {
  const ir::DotDimensions& d = operands.dims;
  DotTiling tiling;
  tiling.rows = FreeSize(*operands.lhs, d.lhs_batch, d.lhs_contracting);
  tiling.columns = FreeSize(*operands.rhs, d.rhs_batch, d.rhs_contracting);
  std::vector<int64_t> batch_sizes(dot.shape().dimensions().begin(),
                                   dot.shape().dimensions().begin() + d.lhs_batch.size());
  std::vector<int64_t> contracting_sizes;
  for (int64_t dim : d.lhs_contracting) {
    contracting_sizes.push_back(operands.lhs->shape().dimension(dim));
  }
  tiling.contraction = ir::Product(contracting_sizes);
  tiling.chunk = max_iterations;
  if (dot.shape().ElementCount() == 0) return tiling;  // Nothing to compute or store.
  tiling.chunks = std::max<int64_t>(CeilDiv(tiling.contraction, max_iterations), 1);

  const int64_t batch = ir::Product(batch_sizes);
  if (UseCooperativeMatrix(dot, operands, target)) {
    tiling.cooperative_matrix = true;
    tiling.matrix_m = target.cooperative_matrix_f16.m;
    tiling.matrix_n = target.cooperative_matrix_f16.n;
    tiling.matrix_k = target.cooperative_matrix_f16.k;
    tiling.subgroup_size = target.subgroup_size;
    tiling.matrix_emulated = target.cooperative_matrix_emulated;
    tiling.depth = std::max(kMatrixDepth, tiling.matrix_k);
    // Large: twice the subgroups along N and twice the fragments along M, where the result has
    // enough such tiles and their shared memory fits.
    const int64_t large_rows = 2 * kMatrixWarpsM * kMatrixFrags * tiling.matrix_m;
    const int64_t large_columns = 2 * kMatrixWarpsN * kMatrixFrags * tiling.matrix_n;
    tiling.warps_m = kMatrixWarpsM;
    tiling.warps_n = 2 * kMatrixWarpsN;
    tiling.frags_m = 2 * kMatrixFrags;
    tiling.frags_n = kMatrixFrags;
    const bool large =
        batch * CeilDiv(tiling.rows, large_rows) * CeilDiv(tiling.columns, large_columns) >=
            kGpuWorkgroupTarget &&
        MatrixSharedBytes(tiling) <= target.max_shared_memory_bytes;
    if (!large) {
      tiling.warps_n = kMatrixWarpsN;
      tiling.frags_m = kMatrixFrags;
    }
    tiling.lanes = tiling.warps_m * tiling.warps_n * tiling.subgroup_size;
    tiling.tiles = CeilDiv(tiling.rows, tiling.warps_m * tiling.frags_m * tiling.matrix_m);
    tiling.blocks = CeilDiv(tiling.columns, tiling.warps_n * tiling.frags_n * tiling.matrix_n);
    SplitGpuContraction(dot, target, batch, tiling.depth, max_iterations, tiling);
    return tiling;
  }
  if (target.shared_memory_dot) {
    // The chunk is a whole number of staged slabs, so only the contraction's end is partial.
    // A workgroup of (tile / per_lane)^2 invocations, each per_lane x per_lane results of a
    // tile x tile block of the result.
    tiling.shared_memory = true;
    const bool large =
        CeilDiv(tiling.rows, kSharedLargeTile) * CeilDiv(tiling.columns, kSharedLargeTile) >=
        kSharedLargeWorkgroups;
    const int64_t tile = large ? kSharedLargeTile : kSharedTile;
    tiling.per_lane = large ? kSharedLargePerThread : kSharedPerThread;
    tiling.rows_per_tile = tile;
    tiling.lanes = (tile / tiling.per_lane) * (tile / tiling.per_lane);
    tiling.tiles = CeilDiv(tiling.rows, tile);
    tiling.blocks = CeilDiv(tiling.columns, tile);
    SplitGpuContraction(dot, target, batch, kSharedDepth, max_iterations, tiling);
    return tiling;
  }

  // Lanes run along the longer free side (the result's columns unless it has fewer columns than
  // rows and fewer than a workgroup of lanes, as in a matrix-vector product).
  // At most 64 lanes: llvmpipe runs a workgroup's groups of 8 lanes back to back, and 64 is two
  // warps or one wavefront on GPUs.
  const int64_t max_lanes = std::max<int64_t>(64, target.subgroup_size);
  tiling.swapped = tiling.columns < max_lanes && tiling.columns < tiling.rows;
  const int64_t uniform_size = tiling.swapped ? tiling.columns : tiling.rows;
  const int64_t lane_size = tiling.swapped ? tiling.rows : tiling.columns;
  const ir::Instruction& lane_operand = tiling.swapped ? *operands.lhs : *operands.rhs;
  const std::vector<int64_t> lane_free =
      tiling.swapped ? FreeDims(lane_operand, d.lhs_batch, d.lhs_contracting)
                     : FreeDims(lane_operand, d.rhs_batch, d.rhs_contracting);
  // A lane reads a run of consecutive elements where they are contiguous in memory: llvmpipe
  // loads every lane's element separately, and a run shares that cost.
  tiling.lane_runs = FreeDimsTrailing(lane_operand, lane_free) && lane_size >= kColumnsPerLane;
  if (tiling.lane_runs) {
    tiling.per_lane = kColumnsPerLane;
    tiling.per_lane = std::min(tiling.per_lane, lane_size);
    // Only as many lanes (whole groups of 8) as the columns need: idle lanes cost as much.
    tiling.lanes =
        std::clamp<int64_t>(CeilDiv(CeilDiv(lane_size, tiling.per_lane), 8) * 8, 8, max_lanes);
  } else {
    tiling.lanes = max_lanes;
    tiling.per_lane =
        std::clamp<int64_t>(CeilDiv(lane_size, tiling.lanes), int64_t{1}, kColumnsPerLane);
  }
  // 64-bit values: subgroup shuffles of them need an extension (shader_subgroup_extended_types)
  // that the kernels do not request, so each lane reads each value.
  if (target.subgroup_shuffle && target.subgroup_size > 1 && target.subgroup_size <= 8 &&
      ir::DTypeByteSize(dot.shape().dtype()) <= 4) {
    tiling.subgroup = target.subgroup_size;
  }
  tiling.rows_per_tile =
      std::min<int64_t>(tiling.subgroup > 0 ? kShuffledRowsPerTile : kRowsPerTile, uniform_size);
  tiling.tiles = CeilDiv(uniform_size, tiling.rows_per_tile);
  tiling.blocks = CeilDiv(lane_size, tiling.lanes * tiling.per_lane);
  tiling.groups = ir::Product(batch_sizes) * tiling.tiles * tiling.blocks * tiling.chunks;
  return tiling;
}

}  // namespace vkspmd::codegen
