// Dot kernel generation (see dot_kernel.h).
#include "src/codegen/dot_kernel.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/codegen/dot_tiling.h"
#include "src/codegen/kernel_writer.h"

namespace vkspmd::codegen {
namespace {

using ir::Instruction;

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
};

}  // namespace

absl::StatusOr<std::string> WriteDotKernel(const Instruction& dot, const DotTiling& tiling,
                                           const std::string& lhs_value,
                                           const std::string& rhs_value) {
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
  const int64_t rows = tiling.rows, columns = tiling.columns;
  std::vector<int64_t> batch_sizes(dot.shape().dimensions().begin(),
                                   dot.shape().dimensions().begin() + d.lhs_batch.size());
  std::vector<int64_t> contracting_sizes;
  for (int64_t dim : d.lhs_contracting) {
    contracting_sizes.push_back(lhs.operand->shape().dimension(dim));
  }
  const int64_t contraction = tiling.contraction;
  std::string body;
  if (dot.shape().ElementCount() == 0) return body;  // Nothing to compute or store.

  const int64_t lanes = tiling.lanes;
  const bool swapped = tiling.swapped;
  const Side& uniform = swapped ? rhs : lhs;
  const Side& lane_side = swapped ? lhs : rhs;
  const int64_t uniform_size = swapped ? columns : rows;
  const int64_t lane_size = swapped ? rows : columns;
  const int64_t per_lane = tiling.per_lane;
  const int64_t tiles = tiling.tiles;
  const int64_t blocks = tiling.blocks;
  const int64_t chunks = tiling.chunks;
  const int64_t groups = tiling.groups;
  const int64_t max_iterations = tiling.chunk;

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
  return body;
}

}  // namespace vkspmd::codegen
