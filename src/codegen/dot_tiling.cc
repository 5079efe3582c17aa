// Dot kernel tiling (see dot_tiling.h).
#include "src/codegen/dot_tiling.h"

#include <algorithm>

namespace vkspmd::codegen {

std::vector<int64_t> FreeDims(int64_t rank, const std::vector<int64_t>& batch,
                              const std::vector<int64_t>& contracting) {
  std::vector<int64_t> free;
  for (int64_t k = 0; k < rank; ++k) {
    if (std::find(batch.begin(), batch.end(), k) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), k) == contracting.end()) {
      free.push_back(k);
    }
  }
  return free;
}

namespace {

int64_t SizeOf(const DotOperandView& view, const std::vector<int64_t>& dims) {
  int64_t size = 1;
  for (int64_t dim : dims) size *= view.shape.dimension(dim);
  return size;
}

bool FreeDimsTrailing(const DotOperandView& view) {
  const int64_t rank = view.shape.rank();
  const int64_t count = static_cast<int64_t>(view.free.size());
  for (int64_t j = 0; j < count; ++j) {
    if (view.free[j] != rank - count + j) return false;
  }
  return true;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A buffered value's elements seen through transposes and reshapes: `order` lists parts of its
// row-major layout (outermost first; each part's size in `sizes`, indexed by part), and `dims[i]`
// the parts that make up dim i of the value seen, flattened row-major in that order. A reshape
// splits a part where a dim of its result takes only the part's outer factor.
struct Refinement {
  std::vector<int64_t> sizes;
  std::vector<int64_t> order;
  std::vector<std::vector<int64_t>> dims;
};

// Reshapes the value seen to `to`, whose dims each take the next parts of the layout in order;
// false where one would take part of a part that its size does not divide.
bool RefineByReshape(const ir::Shape& to, Refinement& view) {
  std::vector<int64_t> parts;
  for (const std::vector<int64_t>& dim : view.dims)
    parts.insert(parts.end(), dim.begin(), dim.end());
  std::vector<std::vector<int64_t>> dims;
  size_t next = 0;
  for (int64_t size : to.dimensions()) {
    std::vector<int64_t> dim;
    int64_t left = size;
    while (left > 1) {
      if (next == parts.size()) return false;
      const int64_t part = parts[next];
      const int64_t part_size = view.sizes[part];
      if (part_size <= left) {
        if (left % part_size != 0) return false;
        if (part_size > 1) dim.push_back(part);
        left /= part_size;
        ++next;
        continue;
      }
      if (part_size % left != 0) return false;
      // The dim takes the part's outer `left`; the inner rest is a new part right after it.
      const int64_t inner = static_cast<int64_t>(view.sizes.size());
      view.sizes.push_back(part_size / left);
      view.sizes[part] = left;
      view.order.insert(std::find(view.order.begin(), view.order.end(), part) + 1, inner);
      parts[next] = inner;
      dim.push_back(part);
      left = 1;
    }
    dims.push_back(std::move(dim));
  }
  for (; next < parts.size(); ++next) {
    if (view.sizes[parts[next]] != 1) return false;
  }
  view.dims = std::move(dims);
  return true;
}

}  // namespace

std::optional<DotOperandView> ViewThrough(
    const ir::Instruction& dot, int64_t k,
    const std::function<bool(const ir::Instruction*)>& in_buffer) {
  const ir::Instruction* operand = dot.operand(k);
  std::vector<const ir::Instruction*> chain;  // From the dot's operand down.
  const ir::Instruction* value = operand;
  while (!in_buffer(value)) {
    if (value->opcode() != ir::Opcode::kTranspose && value->opcode() != ir::Opcode::kReshape) {
      return std::nullopt;
    }
    chain.push_back(value);
    value = value->operand(0);
  }
  if (chain.empty() || value->shape().ElementCount() == 0) return std::nullopt;
  Refinement view;
  view.sizes = value->shape().dimensions();
  for (int64_t dim = 0; dim < value->shape().rank(); ++dim) {
    view.order.push_back(dim);
    view.dims.push_back({dim});
  }
  for (auto step = chain.rbegin(); step != chain.rend(); ++step) {
    if ((*step)->opcode() == ir::Opcode::kReshape) {
      if (!RefineByReshape((*step)->shape(), view)) return std::nullopt;
      continue;
    }
    std::vector<std::vector<int64_t>> dims;
    for (int64_t source : (*step)->attributes().dimensions) dims.push_back(view.dims[source]);
    view.dims = std::move(dims);
  }
  // Parts become the dims of the view's shape, numbered in layout order.
  std::vector<int64_t> position(view.sizes.size());
  std::vector<int64_t> sizes;
  for (size_t j = 0; j < view.order.size(); ++j) {
    position[view.order[j]] = static_cast<int64_t>(j);
    sizes.push_back(view.sizes[view.order[j]]);
  }
  const ir::DotDimensions& d = dot.attributes().dot;
  const std::vector<int64_t>& batch = k == 0 ? d.lhs_batch : d.rhs_batch;
  const std::vector<int64_t>& contracting = k == 0 ? d.lhs_contracting : d.rhs_contracting;
  auto parts_of = [&](const std::vector<int64_t>& operand_dims) {
    std::vector<int64_t> dims;
    for (int64_t dim : operand_dims) {
      for (int64_t part : view.dims[dim]) dims.push_back(position[part]);
    }
    return dims;
  };
  return DotOperandView{value, ir::Shape(value->shape().dtype(), std::move(sizes)), parts_of(batch),
                        parts_of(contracting),
                        parts_of(FreeDims(operand->shape().rank(), batch, contracting))};
}

DotOperands ViewDotOperands(const ir::Instruction& dot,
                            const std::function<bool(const ir::Instruction*)>& in_buffer) {
  const ir::DotDimensions& d = dot.attributes().dot;
  auto view = [&](int64_t k) {
    if (std::optional<DotOperandView> through = ViewThrough(dot, k, in_buffer)) return *through;
    const ir::Instruction* operand = dot.operand(k);
    const std::vector<int64_t>& batch = k == 0 ? d.lhs_batch : d.rhs_batch;
    const std::vector<int64_t>& contracting = k == 0 ? d.lhs_contracting : d.rhs_contracting;
    return DotOperandView{operand, operand->shape(), batch, contracting,
                          FreeDims(operand->shape().rank(), batch, contracting)};
  };
  return DotOperands{view(0), view(1)};
}

namespace {

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
      operands.lhs.shape.dtype() != ir::DType::kF16 ||
      operands.rhs.shape.dtype() != ir::DType::kF16) {
    return false;
  }
  // The IR's dot has one dtype for operands and result, so the result is f16 too.
  if (dot.shape().dtype() != ir::DType::kF16) return false;
  return SizeOf(operands.lhs, operands.lhs.free) >= shape.m &&
         SizeOf(operands.rhs, operands.rhs.free) >= shape.n &&
         SizeOf(operands.lhs, operands.lhs.contracting) >= shape.k;
}

bool MinorRunsOfFour(const ir::Shape& shape, const std::vector<int64_t>& dims) {
  const int64_t rank = shape.rank();
  const bool half = shape.dtype() == ir::DType::kF16 || shape.dtype() == ir::DType::kBF16;
  return !dims.empty() && dims.back() == rank - 1 && shape.dimension(rank - 1) % 4 == 0 &&
         (ir::DTypeByteSize(shape.dtype()) == 4 || half);
}

DotTiling TileDot(const ir::Instruction& dot, const DotOperands& operands, const TargetInfo& target,
                  int64_t max_iterations) {
  DotTiling tiling;
  tiling.rows = SizeOf(operands.lhs, operands.lhs.free);
  tiling.columns = SizeOf(operands.rhs, operands.rhs.free);
  std::vector<int64_t> batch_sizes(
      dot.shape().dimensions().begin(),
      dot.shape().dimensions().begin() + dot.attributes().dot.lhs_batch.size());
  tiling.contraction = SizeOf(operands.lhs, operands.lhs.contracting);
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
  // A lane reads a run of consecutive elements where they are contiguous in memory: llvmpipe
  // loads every lane's element separately, and a run shares that cost.
  tiling.lane_runs = FreeDimsTrailing(tiling.swapped ? operands.lhs : operands.rhs) &&
                     lane_size >= kColumnsPerLane;
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
  // With shuffles (CPU drivers): lanes whose columns have the contraction as their minor dim
  // (x.W^T's W) read each column 4 steps at a time as one vec4 (dot_register_tiles.cc), 4 columns
  // a lane, strided by the lanes; and at most kShuffledMaxLanes lanes, so that small dots still
  // spread over several workgroups (the weight gradient x^T.g [64,256] ran as 4 workgroups of 64
  // lanes on 2 threads).
  const DotOperandView& lane_view = tiling.swapped ? operands.lhs : operands.rhs;
  if (tiling.subgroup > 0 && tiling.subgroup % 4 == 0 && !tiling.lane_runs &&
      lane_size >= kColumnsPerLane && MinorRunsOfFour(lane_view.shape, lane_view.contracting)) {
    tiling.per_lane = kColumnsPerLane;
    tiling.lanes = CeilDiv(CeilDiv(lane_size, tiling.per_lane), 8) * 8;
  }
  if (tiling.subgroup > 0) {
    tiling.lanes = std::clamp<int64_t>(tiling.lanes, tiling.subgroup, kShuffledMaxLanes);
  }
  tiling.rows_per_tile =
      std::min<int64_t>(tiling.subgroup > 0 ? kShuffledRowsPerTile : kRowsPerTile, uniform_size);
  tiling.tiles = CeilDiv(uniform_size, tiling.rows_per_tile);
  tiling.blocks = CeilDiv(lane_size, tiling.lanes * tiling.per_lane);
  tiling.groups = ir::Product(batch_sizes) * tiling.tiles * tiling.blocks * tiling.chunks;
  return tiling;
}

}  // namespace vkspmd::codegen
