// What the dot kernel's variants share (dot_kernel.cc, dot_kernel_matrix.cc): the operands' views,
// sizes and the GLSL of index offsets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/codegen/kernel_plan.h"
#include "src/codegen/kernel_writer.h"
#include "src/ir/instruction.h"

namespace vkspmd::codegen {

// GLSL for the linear offset in `operand` of the element whose coordinates along `dims` are the
// row-major decomposition of `index` (an index over those dims flattened).
std::string Offset(const std::string& index, const ir::Instruction& operand,
                   const std::vector<int64_t>& dims);

// One operand's view: its value function, free dims and contracting dims.
struct Side {
  const ir::Instruction* operand;
  std::string value;
  std::vector<int64_t> free;
  std::vector<int64_t> batch;
  std::vector<int64_t> contracting;
};

// Everything both variants share: the operands' views, sizes and the GLSL of index offsets.
struct DotContext {
  const ir::Instruction& dot;
  const DotTiling& tiling;
  std::string type;
  Side lhs, rhs;
  std::vector<int64_t> batch_sizes, contracting_sizes;

  // GLSL for the offset in `side`'s operand of batch element `batch` (a GLSL uint).
  std::string BatchOffset(const Side& side) const {
    std::vector<int64_t> strides = ir::RowMajorStrides(side.operand->shape().dimensions());
    std::vector<int64_t> batch_strides = ir::RowMajorStrides(batch_sizes);
    std::string code = "0u";
    for (size_t b = 0; b < side.batch.size(); ++b) {
      absl::StrAppend(&code, " + ((batch / ", batch_strides[b], "u) % ", batch_sizes[b], "u) * ",
                      strides[side.batch[b]], "u");
    }
    return code;
  }
  // GLSL for the offset in `side`'s operand of contraction step `k` (a GLSL uint below the
  // contraction's size, so a single contracting dim needs no modulo).
  std::string ContractionOffset(const Side& side, const std::string& k) const {
    std::vector<int64_t> strides = ir::RowMajorStrides(side.operand->shape().dimensions());
    if (side.contracting.size() == 1) {
      return absl::StrCat("(", k, ") * ", strides[side.contracting[0]], "u");
    }
    std::vector<int64_t> contracting_strides = ir::RowMajorStrides(contracting_sizes);
    std::string code = "0u";
    for (size_t c = 0; c < side.contracting.size(); ++c) {
      absl::StrAppend(&code, " + (((", k, ") / ", contracting_strides[c], "u) % ",
                      contracting_sizes[c], "u) * ", strides[side.contracting[c]], "u");
    }
    return code;
  }
  // Declares `uint w` (the workgroup), `chunk`, `tile`, `block` and `batch`, returning early
  // from workgroups past the last.
  std::string Workgroup() const {
    auto split = [](const std::string& name, int64_t count) {
      return count == 1 ? absl::StrCat("  uint ", name, " = 0u;\n")
                        : absl::StrCat("  uint ", name, " = rest % ", count,
                                       "u;\n  rest /= ", count, "u;\n");
    };
    // Row tiles vary fastest: consecutive workgroups stream the same columns of the lane-side
    // operand, which then stay in cache.
    return absl::StrCat(
        "  uint w = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;\n",
        "  if (w >= ", tiling.groups, "u) return;\n  uint rest = w;\n",
        split("chunk", tiling.chunks), split("tile", tiling.tiles), split("block", tiling.blocks),
        "  uint batch = rest;\n", "  uint k_begin = chunk * ", tiling.chunk, "u;\n",
        "  uint k_end = min(k_begin + ", tiling.chunk, "u, ", tiling.contraction,
        "u);\n  uint out_base = ", tiling.chunks > 1 ? "chunk * " : "0u * ",
        dot.shape().ElementCount(), "u + batch * ", tiling.rows * tiling.columns, "u;\n");
  }
};

// The cooperative-matrix (tensor core) variant's body (dot_kernel_matrix.cc).
std::string CooperativeMatrixTiles(const DotContext& context, KernelWriter& writer);

}  // namespace vkspmd::codegen
