// Dot kernel generation (see dot_kernel.h).
#include "src/codegen/dot_kernel.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "src/codegen/kernel_writer.h"
#include "src/codegen/program_plan.h"
#include "src/ir/status_macros.h"

namespace vkspmd::codegen {
namespace {

using ir::Instruction;

// Result rows per workgroup (uniform operand reads) and columns per lane: 4 x 4 accumulators
// fit the sixteen 256-bit registers a CPU driver has per group of lanes. On llvmpipe every
// shape from 2 x 8 to 16 x 1 with 32 to 128 lanes measured within 10% of this one (1024^3 in
// about 230 ms); 2 x 2 and 8-lane workgroups were slower.
constexpr int64_t kRowsPerTile = 4;
constexpr int64_t kColumnsPerLane = 4;

std::vector<int64_t> FreeDims(const Instruction& operand, const std::vector<int64_t>& batch,
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

// GLSL for the linear offset in `operand` of the element whose coordinates along `dims` are the
// row-major decomposition of `index` (an index over those dims flattened).
std::string Offset(const std::string& index, const Instruction& operand,
                   const std::vector<int64_t>& dims) {
  if (dims.empty()) return "0u";
  std::vector<int64_t> strides = ir::RowMajorStrides(operand.shape().dimensions());
  if (dims.size() == 1) return absl::StrCat("(", index, ") * ", strides[dims[0]], "u");
  std::vector<int64_t> sizes;
  for (int64_t dim : dims) sizes.push_back(operand.shape().dimension(dim));
  std::vector<int64_t> flat_strides = ir::RowMajorStrides(sizes);
  std::string code = "(0u";
  for (size_t j = 0; j < dims.size(); ++j) {
    absl::StrAppend(&code, " + ((", index, ") / ", flat_strides[j], "u % ", sizes[j], "u) * ",
                    strides[dims[j]], "u");
  }
  return code + ")";
}

// One operand's view: its value function, free dims and contracting dims.
struct Side {
  const Instruction* operand;
  std::string value;
  std::vector<int64_t> free;
  std::vector<int64_t> batch;
  std::vector<int64_t> contracting;
  int64_t size() const {
    std::vector<int64_t> sizes;
    for (int64_t dim : free) sizes.push_back(operand->shape().dimension(dim));
    return ir::Product(sizes);
  }
};

}  // namespace

absl::StatusOr<DotKernel> WriteDotKernel(const Instruction& dot, const std::string& lhs_value,
                                         const std::string& rhs_value, const TargetInfo& target,
                                         int64_t max_iterations) {
  if (dot.shape().dtype() == ir::DType::kPred) {
    return absl::UnimplementedError("dot of pred is not supported on devices (" + dot.Describe() +
                                    ")");
  }
  VKSPMD_ASSIGN_OR_RETURN(std::string type, GlslType(dot.shape().dtype()));
  const ir::DotDimensions& d = dot.attributes().dot;
  Side lhs{dot.operand(0), lhs_value, {}, d.lhs_batch, d.lhs_contracting};
  Side rhs{dot.operand(1), rhs_value, {}, d.rhs_batch, d.rhs_contracting};
  lhs.free = FreeDims(*lhs.operand, d.lhs_batch, d.lhs_contracting);
  rhs.free = FreeDims(*rhs.operand, d.rhs_batch, d.rhs_contracting);
  const int64_t rows = lhs.size(), columns = rhs.size();
  std::vector<int64_t> batch_sizes(dot.shape().dimensions().begin(),
                                   dot.shape().dimensions().begin() + d.lhs_batch.size());
  std::vector<int64_t> contracting_sizes;
  for (int64_t dim : d.lhs_contracting) {
    contracting_sizes.push_back(lhs.operand->shape().dimension(dim));
  }
  const int64_t batch_count = ir::Product(batch_sizes);
  const int64_t contraction = ir::Product(contracting_sizes);
  DotKernel kernel;
  if (dot.shape().ElementCount() == 0) return kernel;  // Nothing to compute or store.

  // Lanes run along the longer free side (the result's columns unless it has fewer columns than
  // rows and fewer than a workgroup of lanes, as in a matrix-vector product).
  // At least 64 lanes: llvmpipe runs a workgroup's groups of 8 lanes back to back (8-lane
  // workgroups measured 2x slower), and 64 is two warps or one wavefront on GPUs.
  const int64_t lanes = std::max<int64_t>(64, target.subgroup_size);
  const bool swapped = columns < lanes && columns < rows;
  const Side& uniform = swapped ? rhs : lhs;
  const Side& lane_side = swapped ? lhs : rhs;
  const int64_t uniform_size = swapped ? columns : rows;
  const int64_t lane_size = swapped ? rows : columns;
  const int64_t per_lane =
      std::clamp<int64_t>((lane_size + lanes - 1) / lanes, int64_t{1}, kColumnsPerLane);
  const int64_t tiles = (uniform_size + kRowsPerTile - 1) / kRowsPerTile;
  const int64_t blocks = (lane_size + lanes * per_lane - 1) / (lanes * per_lane);
  const int64_t chunks = std::max<int64_t>((contraction + max_iterations - 1) / max_iterations, 1);
  const int64_t groups = batch_count * tiles * blocks * chunks;

  std::vector<int64_t> batch_strides = ir::RowMajorStrides(batch_sizes);
  std::vector<int64_t> contracting_strides = ir::RowMajorStrides(contracting_sizes);
  auto base = [&](const Side& side) {
    std::vector<int64_t> strides = ir::RowMajorStrides(side.operand->shape().dimensions());
    std::string code = "0u";
    for (size_t b = 0; b < side.batch.size(); ++b) {
      absl::StrAppend(&code, " + ((batch / ", batch_strides[b], "u) % ", batch_sizes[b], "u) * ",
                      strides[side.batch[b]], "u");
    }
    return code;
  };
  auto k_offset = [&](const Side& side) {
    std::vector<int64_t> strides = ir::RowMajorStrides(side.operand->shape().dimensions());
    std::string code = "0u";
    for (size_t c = 0; c < side.contracting.size(); ++c) {
      absl::StrAppend(&code, " + ((r / ", contracting_strides[c], "u) % ", contracting_sizes[c],
                      "u) * ", strides[side.contracting[c]], "u");
    }
    return code;
  };

  kernel.local_size = static_cast<uint32_t>(lanes);
  kernel.invocations = static_cast<uint64_t>(groups * lanes);
  kernel.k_chunks = chunks;
  std::string& body = kernel.body;
  absl::StrAppend(&body, "  uint w = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;\n",
                  "  if (w >= ", groups, "u) return;\n  uint lane = gl_LocalInvocationID.x;\n",
                  "  uint chunk = w % ", chunks, "u;\n  uint rest = w / ", chunks, "u;\n",
                  // Row tiles vary fastest: consecutive workgroups stream the same columns of the
                  // right-hand operand, which then stay in cache.
                  "  uint tile = rest % ", tiles, "u;\n  rest = rest / ", tiles, "u;\n",
                  "  uint block = rest % ", blocks, "u;\n  uint batch = rest / ", blocks, "u;\n",
                  "  uint uniform_base = ", base(uniform),
                  ";\n  uint lane_base = ", base(lane_side), ";\n");
  for (int64_t t = 0; t < kRowsPerTile; ++t) {
    absl::StrAppend(&body, "  uint u", t, " = tile * ", kRowsPerTile, "u + ", t, "u;\n",
                    "  uint uo", t, " = uniform_base + ",
                    Offset(absl::StrCat("min(u", t, ", ", uniform_size - 1, "u)"), *uniform.operand,
                           uniform.free),
                    ";\n");
  }
  for (int64_t c = 0; c < per_lane; ++c) {
    absl::StrAppend(&body, "  uint l", c, " = block * ", lanes * per_lane, "u + lane + ", c * lanes,
                    "u;\n", "  uint lo", c, " = lane_base + ",
                    Offset(absl::StrCat("min(l", c, ", ", lane_size - 1, "u)"), *lane_side.operand,
                           lane_side.free),
                    ";\n");
  }
  for (int64_t t = 0; t < kRowsPerTile; ++t) {
    for (int64_t c = 0; c < per_lane; ++c) {
      absl::StrAppend(&body, "  ", type, " acc", t, "_", c, " = ", type, "(0);\n");
    }
  }
  absl::StrAppend(&body, "  uint k_end = min(chunk * ", max_iterations, "u + ", max_iterations,
                  "u, ", contraction, "u);\n", "  for (uint r = chunk * ", max_iterations,
                  "u; r < k_end; ++r) {\n", "    uint uk = ", k_offset(uniform),
                  ";\n    uint lk = ", k_offset(lane_side), ";\n");
  for (int64_t t = 0; t < kRowsPerTile; ++t) {
    absl::StrAppend(&body, "    ", type, " x", t, " = ", uniform.value, "(uo", t, " + uk);\n");
  }
  for (int64_t c = 0; c < per_lane; ++c) {
    absl::StrAppend(&body, "    ", type, " y", c, " = ", lane_side.value, "(lo", c, " + lk);\n");
  }
  for (int64_t t = 0; t < kRowsPerTile; ++t) {
    for (int64_t c = 0; c < per_lane; ++c) {
      absl::StrAppend(&body, "    acc", t, "_", c, " += x", t, " * y", c, ";\n");
    }
  }
  absl::StrAppend(&body, "  }\n  uint out_base = ", chunks > 1 ? "chunk * " : "0u * ",
                  dot.shape().ElementCount(), "u + batch * ", rows * columns, "u;\n");
  for (int64_t t = 0; t < kRowsPerTile; ++t) {
    for (int64_t c = 0; c < per_lane; ++c) {
      const std::string row = swapped ? absl::StrCat("l", c) : absl::StrCat("u", t);
      const std::string column = swapped ? absl::StrCat("u", t) : absl::StrCat("l", c);
      absl::StrAppend(&body, "  if (u", t, " < ", uniform_size, "u && l", c, " < ", lane_size,
                      "u) store(out_base + ", row, " * ", columns, "u + ", column, ", acc", t, "_",
                      c, ");\n");
    }
  }
  return kernel;
}

}  // namespace vkspmd::codegen
