// Dot kernel generation (see dot_kernel.h).
#include "src/codegen/dot_kernel.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/codegen/dot_kernel_context.h"
#include "src/codegen/dot_tiling.h"
#include "src/codegen/fused_ops.h"
#include "src/codegen/glsl_types.h"
#include "src/codegen/kernel_writer.h"

namespace vkspmd::codegen {

using ir::Instruction;
using ir::Opcode;

std::string Offset(const std::string& index, const ir::Shape& shape,
                   const std::vector<int64_t>& dims) {
  const std::vector<int64_t> strides = ir::RowMajorStrides(shape.dimensions());
  std::vector<int64_t> sizes;
  for (int64_t dim : dims) sizes.push_back(shape.dimension(dim));
  const std::vector<int64_t> flat_strides = ir::RowMajorStrides(sizes);
  // `index` is below the dims' product, so the outermost dim (of size above 1) needs no modulo.
  std::string code;
  for (size_t j = 0; j < dims.size(); ++j) {
    if (sizes[j] == 1) continue;
    std::string term = absl::StrCat("(", index, ")");
    if (flat_strides[j] != 1) term = absl::StrCat("(", term, " / ", flat_strides[j], "u)");
    if (!code.empty()) term = absl::StrCat("(", term, " % ", sizes[j], "u)");
    absl::StrAppend(&code, code.empty() ? "(" : " + ", term, " * ", strides[dims[j]], "u");
  }
  return code.empty() ? "0u" : code + ")";
}

namespace {

// Shared-memory tiles (GPUs): the workgroup stages kSharedDepth steps of `tile` rows and columns,
// each invocation accumulates per x per results from them (tiling.rows_per_tile, per_lane).
std::string SharedTiles(const DotContext& context, KernelWriter& writer) {
  const DotTiling& tiling = context.tiling;
  const std::string& type = context.type;
  const int64_t threads = tiling.lanes;
  const int64_t tile = tiling.rows_per_tile;
  const int64_t per = tiling.per_lane;
  const int64_t side = tile / per;  // Invocations along each tile side.
  const std::string lhs_tile = writer.AddShared(type, kSharedDepth * tile);
  const std::string rhs_tile = writer.AddShared(type, kSharedDepth * tile);
  std::string body = context.Workgroup();
  absl::StrAppend(&body, "  uint lane = gl_LocalInvocationID.x;\n  uint tx = lane % ", side,
                  "u;\n  uint ty = lane / ", side, "u;\n  uint row0 = tile * ", tile,
                  "u;\n  uint column0 = block * ", tile,
                  "u;\n  uint lhs_base = ", context.BatchOffset(context.lhs),
                  ";\n  uint rhs_base = ", context.BatchOffset(context.rhs), ";\n");
  for (int64_t t = 0; t < per; ++t) {
    for (int64_t c = 0; c < per; ++c) {
      absl::StrAppend(&body, "  ", type, " acc", t, "_", c, " = ", type, "(0);\n");
    }
  }
  // Each invocation stages (kSharedDepth * tile / threads) elements of each operand. Consecutive
  // invocations read consecutive addresses: along the contraction where it is the operand's
  // minor dim (x.W's x, x.W^T's W), else along its rows or columns.
  const auto stage = [&](const Side& operand, const std::string& shared, const std::string& first,
                         int64_t size, const std::string& base) {
    const std::vector<int64_t> strides = ir::RowMajorStrides(operand.shape.dimensions());
    const bool contraction_minor =
        operand.contracting.size() == 1 && strides[operand.contracting[0]] == 1;
    std::string code;
    for (int64_t j = 0; j < kSharedDepth * tile / threads; ++j) {
      const std::string e = absl::StrCat("(lane + ", j * threads, "u)");
      const std::string m = contraction_minor ? absl::StrCat(e, " / ", kSharedDepth, "u")
                                              : absl::StrCat(e, " % ", tile, "u");
      const std::string q = contraction_minor ? absl::StrCat(e, " % ", kSharedDepth, "u")
                                              : absl::StrCat(e, " / ", tile, "u");
      absl::StrAppend(
          &code, "    {\n      uint m = ", m, ";\n      uint q = ", q,
          ";\n      uint k = k0 + q;\n      uint index = ", first, " + m;\n      ", shared, "[q * ",
          tile, "u + m] = (index < ", size, "u && k < k_end) ? ", operand.value, "(", base, " + ",
          Offset(absl::StrCat("min(index, ", size - 1, "u)"), operand.shape, operand.free), " + ",
          context.ContractionOffset(operand, absl::StrCat("min(k, ", tiling.contraction - 1, "u)")),
          ") : ", type, "(0);\n    }\n");
    }
    return code;
  };
  absl::StrAppend(&body, "  for (uint k0 = k_begin; k0 < k_end; k0 += ", kSharedDepth, "u) {\n",
                  stage(context.lhs, lhs_tile, "row0", tiling.rows, "lhs_base"),
                  stage(context.rhs, rhs_tile, "column0", tiling.columns, "rhs_base"));
  absl::StrAppend(&body, "    barrier();\n    for (uint q = 0u; q < ", kSharedDepth, "u; ++q) {\n");
  for (int64_t t = 0; t < per; ++t) {
    absl::StrAppend(&body, "      ", type, " x", t, " = ", lhs_tile, "[q * ", tile, "u + ty + ",
                    t * side, "u];\n");
  }
  for (int64_t c = 0; c < per; ++c) {
    absl::StrAppend(&body, "      ", type, " y", c, " = ", rhs_tile, "[q * ", tile, "u + tx + ",
                    c * side, "u];\n");
  }
  for (int64_t t = 0; t < per; ++t) {
    for (int64_t c = 0; c < per; ++c) {
      absl::StrAppend(&body, "      acc", t, "_", c, " += x", t, " * y", c, ";\n");
    }
  }
  absl::StrAppend(&body, "    }\n    barrier();\n  }\n");
  for (int64_t t = 0; t < per; ++t) {
    for (int64_t c = 0; c < per; ++c) {
      absl::StrAppend(&body, "  {\n    uint row = row0 + ty + ", t * side,
                      "u;\n    uint column = column0 + tx + ", c * side, "u;\n    if (row < ",
                      tiling.rows, "u && column < ", tiling.columns, "u) ", context.store,
                      "(out_base + row * ", tiling.columns, "u + column, acc", t, "_", c,
                      ");\n  }\n");
    }
  }
  return body;
}

// The function a dot kernel with an epilogue (KernelPlan::epilogue) passes each result element
// to: the element goes into a private variable that the dot's value function returns (the
// epilogue reads the dot only at its own index), then the epilogue's value and every other value
// the kernel stores are computed, all before any is stored (a stored value may overwrite, in
// place, a parameter another one reads), and stored. Returns its name.
absl::StatusOr<std::string> EpilogueFunction(const KernelPlan& kernel, const std::string& type,
                                             KernelWriter& writer) {
  const Instruction& dot = *kernel.root;
  VKSPMD_ASSIGN_OR_RETURN(std::string variable, writer.DeclareRowValue(&dot));
  VKSPMD_ASSIGN_OR_RETURN(std::string value, writer.Value(kernel.epilogue, /*compute=*/true));
  VKSPMD_ASSIGN_OR_RETURN(std::string value_type, GlslType(kernel.epilogue->shape().dtype()));
  std::string code = absl::StrCat("void epilogue(uint i, ", type, " value) {\n  ", variable,
                                  " = value;\n  ", value_type, " r0 = ", value, "(i);\n");
  std::string stores = "  store(i, r0);\n";
  for (size_t k = 0; k < kernel.also_stores.size(); ++k) {
    const Instruction* stored = kernel.also_stores[k];
    if (stored == &dot) {
      absl::StrAppend(&stores, "  store", k + 1, "(i, value);\n");
      continue;
    }
    VKSPMD_ASSIGN_OR_RETURN(std::string function, writer.Value(stored));
    VKSPMD_ASSIGN_OR_RETURN(std::string stored_type, GlslType(stored->shape().dtype()));
    absl::StrAppend(&code, "  ", stored_type, " r", k + 1, " = ", function, "(i);\n");
    absl::StrAppend(&stores, "  store", k + 1, "(i, r", k + 1, ");\n");
  }
  writer.AddFunction(absl::StrCat(code, stores, "}\n"));
  return std::string("epilogue");
}

// Whether the register tiles give the epilogue each row's 4 consecutive results at once: each
// lane's run of 4 columns starts at a multiple of 4 (or past the last column) in one row of the
// result, so the epilogue's own-index reads and its stores can be vector loads and stores.
// llvmpipe runs every load and store of a varying address as a loop over the lanes: an AdamW
// update (3 reads, 3 stores per element) nearly doubled a weight gradient's dot.
bool RunsOfFourToTheEpilogue(const DotTiling& tiling) {
  return !tiling.cooperative_matrix && !tiling.shared_memory && tiling.lane_runs &&
         tiling.per_lane == 4 && !tiling.swapped && tiling.columns % 4 == 0 && tiling.chunks == 1;
}

// A value the runs' epilogue reads 4 elements of with one vector load: `value`, read at the
// epilogue's own index, is `buffer`'s value (period 0) or a broadcast of `buffer` along the
// result's leading dims, whose element i is the buffer's element i % period (a bias).
struct RunRead {
  const Instruction* value;
  const Instruction* buffer;
  int64_t period;
};

// Whether `value` broadcasts its operand along leading dims only (dims = the trailing dims, in
// order) of a whole number of runs of 4: elements 4j..4j+3 of it are elements 4j % period ..
// + 3 of the operand.
bool BroadcastOfRuns(const Instruction& value) {
  if (value.opcode() != Opcode::kBroadcast) return false;
  const std::vector<int64_t>& dims = value.attributes().dimensions;
  const int64_t rank = value.shape().rank();
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] != rank - static_cast<int64_t>(dims.size()) + static_cast<int64_t>(d)) {
      return false;
    }
  }
  const int64_t period = value.operand(0)->shape().ElementCount();
  return !dims.empty() && period % 4 == 0;
}

// The values the epilogue (and the other values the kernel stores) read only at the element it
// computes, each with one buffer behind it: values with buffers, except the dot's operands (read
// elsewhere by the contraction), and broadcasts of such values (BroadcastOfRuns).
std::vector<RunRead> ReadsAtTheEpiloguesIndex(const KernelPlan& kernel, const ProgramPlan& plan,
                                              const std::vector<const Instruction*>& roots) {
  const std::set<const Instruction*> here(kernel.also_stores.begin(), kernel.also_stores.end());
  const auto has_buffer = [&](const Instruction* value) {
    return plan.materialized.count(value) && !here.count(value) &&
           value != kernel.dot_operands.lhs.value && value != kernel.dot_operands.rhs.value;
  };
  std::vector<RunRead> candidates;
  std::set<const Instruction*> visited;
  std::vector<const Instruction*> pending(roots.begin(), roots.end());
  while (!pending.empty()) {
    const Instruction* value = pending.back();
    pending.pop_back();
    for (const Instruction* operand : value->operands()) {
      if (operand == kernel.root || !visited.insert(operand).second) continue;
      if (plan.materialized.count(operand) && !here.count(operand)) {
        if (has_buffer(operand)) candidates.push_back({operand, operand, 0});
      } else if (BroadcastOfRuns(*operand) && has_buffer(operand->operand(0))) {
        candidates.push_back(
            {operand, operand->operand(0), operand->operand(0)->shape().ElementCount()});
      } else {
        pending.push_back(operand);
      }
    }
  }
  std::vector<RunRead> reads;
  for (const RunRead& candidate : candidates) {
    bool own_index = true;
    for (const Instruction* root : roots) {
      std::set<std::pair<const Instruction*, bool>> checked;
      own_index = own_index && ReadsOnlyAtOwnIndex(plan.materialized, root, candidate.value, true,
                                                   true, here, checked);
    }
    if (own_index) reads.push_back(candidate);
  }
  return reads;
}

// The epilogue for runs of 4 (RunsOfFourToTheEpilogue): `void epilogue4(uint i, <vec4> value)`
// takes results i..i+3 (i a multiple of 4), loads each value read at the epilogue's own index
// once for the 4 (a vector load where VectorRead gives one), computes the 4 elements' values,
// then stores them (vector stores where VectorStore gives one). As EpilogueFunction, every value
// is computed before any is stored. nullopt (and nothing written) where a stored value or the
// dot has no 4-vector GLSL type (64-bit types); narrower stored types are stored one by one.
absl::StatusOr<std::optional<std::string>> EpilogueOfRunsOfFour(const KernelPlan& kernel,
                                                                const std::string& type,
                                                                KernelWriter& writer) {
  const Instruction& dot = *kernel.root;
  std::vector<const Instruction*> stored = {kernel.epilogue};
  stored.insert(stored.end(), kernel.also_stores.begin(), kernel.also_stores.end());
  std::vector<std::string> vector_types;
  for (const Instruction* value : stored) {
    VKSPMD_ASSIGN_OR_RETURN(std::string value_type, GlslType(value->shape().dtype()));
    vector_types.push_back(Vec4Type(value_type));
    if (vector_types.back().empty()) return std::nullopt;
  }
  const std::string dot_vector = Vec4Type(type);
  if (dot_vector.empty()) return std::nullopt;
  std::vector<const Instruction*> roots;
  for (const Instruction* value : stored) {
    if (value != &dot) roots.push_back(value);
  }
  std::string loads, sets;
  int quads = 0;
  for (const RunRead& read : ReadsAtTheEpiloguesIndex(kernel, writer.plan(), roots)) {
    std::optional<KernelWriter::VectorFunction> vector = writer.VectorRead(read.buffer);
    if (!vector) continue;
    std::string variable;
    if (read.period == 0) {
      VKSPMD_ASSIGN_OR_RETURN(variable, writer.ReadAsVariable(read.value));
    } else {
      VKSPMD_ASSIGN_OR_RETURN(variable, writer.DeclareRowValue(read.value, /*keep_bits=*/true));
    }
    const std::string index =
        read.period == 0 ? "i / 4u" : absl::StrCat("(i % ", read.period, "u) / 4u");
    absl::StrAppend(&loads, "  ", vector->type, " q", quads, " = ", vector->name, "(", index,
                    ");\n");
    absl::StrAppend(&sets, "    ", variable, " = q", quads, "[c];\n");
    ++quads;
  }
  VKSPMD_ASSIGN_OR_RETURN(std::string dot_variable, writer.DeclareRowValue(&dot));
  std::string code = absl::StrCat("void epilogue4(uint i, ", dot_vector, " value) {\n", loads);
  std::string computes, stores;
  for (size_t k = 0; k < stored.size(); ++k) {
    absl::StrAppend(&code, "  ", vector_types[k], " o", k, ";\n");
    std::string function = "value";
    if (stored[k] != &dot) {
      VKSPMD_ASSIGN_OR_RETURN(function, writer.Value(stored[k], /*compute=*/k == 0));
      function = absl::StrCat(function, "(i + c)");
    } else {
      function = "value[c]";
    }
    absl::StrAppend(&computes, "    o", k, "[c] = ", function, ";\n");
    const std::string scalar_store = absl::StrCat("store", k == 0 ? "" : absl::StrCat(k));
    if (std::optional<std::string> vector_store = writer.VectorStore(k)) {
      absl::StrAppend(&stores, "  ", *vector_store, "(i / 4u, o", k, ");\n");
    } else {
      absl::StrAppend(&stores, "  for (uint c = 0u; c < 4u; ++c) ", scalar_store, "(i + c, o", k,
                      "[c]);\n");
    }
  }
  absl::StrAppend(&code, "  for (uint c = 0u; c < 4u; ++c) {\n    ", dot_variable, " = value[c];\n",
                  sets, computes, "  }\n", stores, "}\n");
  writer.AddFunction(code);
  return std::string("epilogue4");
}

}  // namespace

absl::StatusOr<std::string> WriteDotKernel(const KernelPlan& kernel, KernelWriter& writer) {
  const Instruction& dot = *kernel.root;
  if (dot.shape().dtype() == ir::DType::kPred) {
    return absl::UnimplementedError("dot of pred is not supported on devices (" + dot.Describe() +
                                    ")");
  }
  VKSPMD_ASSIGN_OR_RETURN(std::string type, GlslType(dot.shape().dtype()));
  if (dot.shape().ElementCount() == 0) return std::string();  // Nothing to compute or store.
  const DotOperands& operands = kernel.dot_operands;
  VKSPMD_ASSIGN_OR_RETURN(std::string lhs_value, writer.Value(operands.lhs.value));
  VKSPMD_ASSIGN_OR_RETURN(std::string rhs_value, writer.Value(operands.rhs.value));
  auto side = [](const DotOperandView& view, const std::string& value) {
    return Side{view.value, value, view.shape, view.free, view.batch, view.contracting};
  };
  DotContext context{dot, kernel.dot, type, side(operands.lhs, lhs_value),
                     side(operands.rhs, rhs_value)};
  const DotTiling& tiling = kernel.dot;
  if (kernel.epilogue != nullptr && RunsOfFourToTheEpilogue(tiling)) {
    VKSPMD_ASSIGN_OR_RETURN(std::optional<std::string> runs,
                            EpilogueOfRunsOfFour(kernel, type, writer));
    if (runs) context.store_runs_of_four = *runs;
  }
  if (kernel.epilogue != nullptr && context.store_runs_of_four.empty()) {
    VKSPMD_ASSIGN_OR_RETURN(context.store, EpilogueFunction(kernel, type, writer));
  }
  if (tiling.cooperative_matrix) return CooperativeMatrixTiles(context, writer);
  if (tiling.shared_memory) return SharedTiles(context, writer);
  return RegisterTiles(context, writer);
}

}  // namespace vkspmd::codegen
