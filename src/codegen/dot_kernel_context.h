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

// GLSL for the linear offset in (row-major) `shape` of the element whose coordinates along
// `dims` are the row-major decomposition of `index` (an index over those dims flattened).
std::string Offset(const std::string& index, const ir::Shape& shape,
                   const std::vector<int64_t>& dims);

// One operand's view (kernel_plan.h: DotOperandView): the value it reads, its value function
// (GLSL taking a linear offset in `shape`) and the dims of `shape` making up each index.
struct Side {
  const ir::Instruction* operand;
  std::string value;
  ir::Shape shape;
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
  // The GLSL function each result element goes to, (linear index, value): store, or the
  // epilogue's.
  std::string store = "store";
  // Where set, the function each row's run of 4 lane-side results goes to instead, (linear index
  // of the first, a multiple of 4; the 4 values as a vector): the epilogue's for runs of four.
  std::string store_runs_of_four;

  // GLSL for the offset in `side`'s operand of batch element `batch` (a GLSL uint).
  std::string BatchOffset(const Side& side) const {
    return side.batch.empty() ? "0u" : Offset("batch", side.shape, side.batch);
  }
  // GLSL for the offset in `side`'s operand of contraction step `k` (a GLSL uint below the
  // contraction's size, so its outermost dim needs no modulo).
  std::string ContractionOffset(const Side& side, const std::string& k) const {
    return Offset(k, side.shape, side.contracting);
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

// The register-tiled variant's body for CPU drivers (dot_register_tiles.cc).
std::string RegisterTiles(const DotContext& context, KernelWriter& writer);

// The cooperative-matrix (tensor core) variant's body (dot_kernel_matrix.cc).
std::string CooperativeMatrixTiles(const DotContext& context, KernelWriter& writer);

}  // namespace vkspmd::codegen
