// Writing the kernels of a plan (see program_writer.h).
#include "src/codegen/program_writer.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/codegen/dot_kernel.h"
#include "src/codegen/kernel_writer.h"
#include "src/codegen/reduction_code.h"
#include "src/codegen/row_cache.h"

namespace vkspmd::codegen {
namespace {

using ir::Instruction;
using ir::Opcode;

// The reduce's operand element (o, r): its linear index from the kept coordinates (of o) and the
// reduced ones (of r).
absl::StatusOr<std::string> ReducedElement(const Instruction& reduce, KernelWriter& writer) {
  const Instruction* operand = reduce.operand(0);
  const std::vector<int64_t>& dims = operand->shape().dimensions();
  const std::vector<int64_t>& reduced = reduce.attributes().dimensions;
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
    if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) kept.push_back(d);
  }
  std::vector<int64_t> sorted_reduced = reduced;
  std::sort(sorted_reduced.begin(), sorted_reduced.end());
  std::vector<int64_t> reduced_sizes;
  for (int64_t d : sorted_reduced) reduced_sizes.push_back(dims[d]);
  std::vector<int64_t> kept_sizes;
  for (int64_t d : kept) kept_sizes.push_back(dims[d]);
  std::vector<int64_t> strides = ir::RowMajorStrides(dims);
  std::vector<int64_t> kept_strides = ir::RowMajorStrides(kept_sizes);
  std::vector<int64_t> reduced_strides = ir::RowMajorStrides(reduced_sizes);
  VKSPMD_ASSIGN_OR_RETURN(std::string input, writer.Value(operand));
  std::string index = "0u";
  for (size_t k = 0; k < kept.size(); ++k) {
    absl::StrAppend(&index, " + ((o / ", kept_strides[k], "u) % ", kept_sizes[k], "u) * ",
                    strides[kept[k]], "u");
  }
  for (size_t k = 0; k < sorted_reduced.size(); ++k) {
    absl::StrAppend(&index, " + ((r / ", reduced_strides[k], "u) % ", reduced_sizes[k], "u) * ",
                    strides[sorted_reduced[k]], "u");
  }
  return absl::StrCat(input, "(", index, ")");
}

// The reduces a map kernel holds (KernelPlan::held_reductions), each into a variable: element o
// of the reduce, o being the kernel's own index i, combined by this invocation alone.
absl::StatusOr<std::string> HeldReductions(const KernelPlan& kernel, KernelWriter& writer) {
  if (kernel.held_reductions.empty()) return std::string();
  std::string code = "  uint o = i;\n";
  for (const Instruction* reduce : kernel.held_reductions) {
    LaneReduction reduction;
    VKSPMD_ASSIGN_OR_RETURN(reduction.type, GlslType(reduce->shape().dtype()));
    VKSPMD_ASSIGN_OR_RETURN(reduction.result, writer.DeclareRowValue(reduce));
    VKSPMD_ASSIGN_OR_RETURN(reduction.element, ReducedElement(*reduce, writer));
    VKSPMD_ASSIGN_OR_RETURN(std::string init, writer.Value(reduce->operand(1)));
    VKSPMD_ASSIGN_OR_RETURN(reduction.combine, CombinerCode(*reduce));
    reduction.init = init + "(0u)";
    reduction.begin = "0u";
    reduction.end = absl::StrCat(reduce->operand(0)->shape().ElementCount() /
                                     std::max<int64_t>(reduce->shape().ElementCount(), 1),
                                 "u");
    reduction.lanes = 1;
    absl::StrAppend(&code, LaneReductionCode(reduction, writer));
  }
  return code;
}

// Element i of the root and of the values fused into its kernel (KernelPlan::also_stores), all
// computed before any is stored; values several of them read at i (the root reads the others)
// are computed once, into variables (KernelWriter::ShareValues). The stores are
// store<first_store>, store<+1>, ...
absl::StatusOr<std::string> MapBody(const KernelPlan& kernel, KernelWriter& writer,
                                    size_t first_store = 0) {
  auto store = [](size_t k) { return k == 0 ? std::string("store") : absl::StrCat("store", k); };
  std::string body =
      absl::StrCat("  if (i >= ", writer.Size(kernel.root->shape().ElementCount()), ") return;\n");
  writer.EndSharing();  // An earlier part's shared variables are not set in this part.
  VKSPMD_ASSIGN_OR_RETURN(std::string reductions, HeldReductions(kernel, writer));
  absl::StrAppend(&body, reductions);
  std::vector<const Instruction*> roots = {kernel.root};
  roots.insert(roots.end(), kernel.also_stores.begin(), kernel.also_stores.end());
  VKSPMD_ASSIGN_OR_RETURN(std::string shared, writer.ShareValues(roots));
  absl::StrAppend(&body, shared);
  VKSPMD_ASSIGN_OR_RETURN(std::string value, writer.Value(kernel.root, /*compute=*/true));
  if (kernel.also_stores.empty()) {
    return absl::StrCat(body, "  ", store(first_store), "(i, ", value, "(i));\n");
  }
  std::string stores = absl::StrCat("  ", store(first_store), "(i, r0);\n");
  VKSPMD_ASSIGN_OR_RETURN(std::string type, GlslType(kernel.root->shape().dtype()));
  absl::StrAppend(&body, "  ", type, " r0 = ", value, "(i);\n");
  for (size_t k = 0; k < kernel.also_stores.size(); ++k) {
    const Instruction* stored = kernel.also_stores[k];
    VKSPMD_ASSIGN_OR_RETURN(std::string function, writer.Value(stored));
    VKSPMD_ASSIGN_OR_RETURN(std::string stored_type, GlslType(stored->shape().dtype()));
    absl::StrAppend(&body, "  ", stored_type, " r", k + 1, " = ", function, "(i);\n");
    absl::StrAppend(&stores, "  ", store(first_store + k + 1), "(i, r", k + 1, ");\n");
  }
  return body + stores;
}

// A map kernel with parts (horizontal_fusion.h): each part's body is a function of its own
// element index, and main() calls the one whose range of invocations holds i. It picks the part
// by workgroup, a uniform value (parts start at workgroup boundaries): CPU drivers then branch
// instead of running every part under a mask (on lavapipe, three AdamW updates fused took twice
// as long as their separate kernels with the choice made per invocation).
absl::StatusOr<std::string> PartsBody(const KernelPlan& kernel, KernelWriter& writer) {
  const std::vector<uint64_t> starts = kernel.PartStarts();
  std::string body = "  uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;\n";
  size_t first_store = 0;
  for (size_t p = 0; p < starts.size(); ++p) {
    const KernelPlan& part = p == 0 ? kernel : kernel.parts[p - 1];
    VKSPMD_ASSIGN_OR_RETURN(std::string code, MapBody(part, writer, first_store));
    first_store += 1 + part.also_stores.size();
    writer.AddFunction(absl::StrCat("void part", p, "(uint i) {\n", code, "}\n"));
    if (p + 1 < starts.size()) {
      absl::StrAppend(&body, "  if (group < ", starts[p + 1] / kernel.local_size, "u) {\n    part",
                      p, "(i - ", starts[p], "u);\n    return;\n  }\n");
    } else {
      absl::StrAppend(&body, "  part", p, "(i - ", starts[p], "u);\n");
    }
  }
  return body;
}

// One pass of a reduce, or of the sum of a dot's split-K partial products (see ReductionPass).
absl::StatusOr<std::string> ReductionBody(const KernelPlan& kernel, KernelWriter& writer,
                                          uint32_t subgroup_size) {
  const ReductionPass& pass = kernel.reduction;
  const Instruction& root = *kernel.root;
  const bool is_dot = root.opcode() == Opcode::kDot;
  const ir::DType type = root.shape().dtype();
  VKSPMD_ASSIGN_OR_RETURN(std::string glsl_type, GlslType(type));
  LaneReduction reduction;
  reduction.type = glsl_type;
  if (pass.partials < 0) {
    VKSPMD_ASSIGN_OR_RETURN(reduction.element, ReducedElement(root, writer));
  } else {
    const std::string read = writer.ReadBuffer(pass.partials);
    reduction.element = is_dot ? absl::StrCat(read, "(r * ", pass.outer, "u + o)")
                               : absl::StrCat(read, "(o * ", pass.inner, "u + r)");
  }
  if (is_dot) {
    reduction.combine = "a + b";
  } else {
    VKSPMD_ASSIGN_OR_RETURN(reduction.combine, CombinerCode(root));
  }
  if (pass.final()) {
    if (is_dot) {
      reduction.init = absl::StrCat(glsl_type, "(0)");
    } else {
      VKSPMD_ASSIGN_OR_RETURN(std::string init, writer.Value(root.operand(1)));
      reduction.init = absl::StrCat(init, "(0u)");
    }
  }
  reduction.begin = "begin";
  reduction.end = "end";
  reduction.result = "result";
  reduction.lanes = pass.lanes;
  reduction.subgroup_size = subgroup_size;
  const uint32_t lanes = pass.lanes;
  const int64_t chunks = pass.chunks;
  return absl::StrCat(
      "  uint w = i / ", lanes, "u;\n  if (w >= ", pass.outer * chunks, "u) return;\n",
      "  uint o = w / ", chunks, "u;\n  uint begin = (w % ", chunks, "u) * ", pass.chunk, "u;\n",
      "  uint end = min(begin + ", pass.chunk, "u, ", pass.inner, "u);\n  ", glsl_type,
      " result;\n", LaneReductionCode(reduction, writer),
      lanes > 1 ? "  if (gl_LocalInvocationID.x == 0u) " : "  ", "store(w, result);\n");
}

// Row by row, the row reductions first (see row_fusion.h), keeping the values several loops
// read in per-invocation arrays where they fit (row_cache.h).
absl::StatusOr<std::string> RowsBody(const ProgramPlan& plan, const KernelPlan& kernel,
                                     KernelWriter& writer) {
  const RowPlan& row = kernel.row;
  const uint32_t lanes = row.lanes;
  const std::string lane = lanes > 1 ? "gl_LocalInvocationID.x" : "0u";
  std::string body =
      absl::StrCat("  uint o = i / ", lanes, "u;\n  if (o >= ", row.rows, "u) return;\n");
  const std::vector<RowCache> caches = PlanRowCaches(plan, kernel, plan.row_cache_slots);
  std::vector<std::string> arrays;
  for (const RowCache& cache : caches) {
    VKSPMD_ASSIGN_OR_RETURN(std::string array, writer.DeclareRowCache(cache.value, cache.slots));
    arrays.push_back(array);
  }
  // Makes Value() give the kept values as loop `loop` reads them; whether the loop reads any (it
  // is then written out iteration by iteration).
  const auto use_caches = [&](size_t loop) {
    if (caches.empty()) return false;
    std::map<const Instruction*, KernelWriter::RowCacheUse> uses;
    bool reads = false;
    for (size_t c = 0; c < caches.size(); ++c) {
      const std::vector<size_t>& loops = caches[c].loops;
      if (loop < loops[0]) continue;
      uses[caches[c].value] = {arrays[c], loop > loops[0]};
      reads = reads || std::find(loops.begin(), loops.end(), loop) != loops.end();
    }
    writer.UseRowCaches(std::move(uses));
    return reads;
  };
  const auto slots = [&](int64_t row_length) { return (row_length + lanes - 1) / lanes; };
  for (size_t loop = 0; loop < row.reductions.size(); ++loop) {
    const Instruction* reduce = row.reductions[loop];
    const int64_t row_length = reduce->operand(0)->shape().ElementCount() / row.rows;
    const bool unrolled = use_caches(loop);
    LaneReduction reduction;
    VKSPMD_ASSIGN_OR_RETURN(reduction.type, GlslType(reduce->shape().dtype()));
    VKSPMD_ASSIGN_OR_RETURN(reduction.result, writer.DeclareRowValue(reduce));
    VKSPMD_ASSIGN_OR_RETURN(std::string element, writer.Value(reduce->operand(0)));
    VKSPMD_ASSIGN_OR_RETURN(std::string init, writer.Value(reduce->operand(1)));
    VKSPMD_ASSIGN_OR_RETURN(reduction.combine, CombinerCode(*reduce));
    reduction.element = absl::StrCat(element, "(o * ", row_length, "u + r)");
    reduction.init = init + "(0u)";
    reduction.begin = "0u";
    reduction.end = absl::StrCat(row_length, "u");
    reduction.lanes = lanes;
    reduction.subgroup_size = plan.subgroup_size;
    if (unrolled) {
      reduction.slots = slots(row_length);
      reduction.length = row_length;
    }
    absl::StrAppend(&body, LaneReductionCode(reduction, writer));
  }
  // The root and the values multi-output fusion added (a row kernel folded into its map reader),
  // each stored at the element it computes; a value with one element per row (a row reduction,
  // layer norm's rsqrt of it) other kernels read, once per row.
  const bool unrolled = use_caches(row.reductions.size());
  VKSPMD_ASSIGN_OR_RETURN(std::string value, writer.Value(kernel.root, /*compute=*/true));
  const int64_t row_length = kernel.root->shape().ElementCount() / row.rows;
  std::string stores = absl::StrCat("    store(e, ", value, "(e));\n");
  for (size_t k = 0; k < kernel.also_stores.size(); ++k) {
    const Instruction* also = kernel.also_stores[k];
    VKSPMD_ASSIGN_OR_RETURN(std::string stored, writer.Value(also));
    const int64_t count = also->shape().ElementCount();
    if (count == row.rows && row_length != 1) {
      absl::StrAppend(&body, "  if (", lane, " == 0u) store", k + 1, "(o, ", stored, "(o));\n");
    } else if (count == row.rows * row_length) {
      absl::StrAppend(&stores, "    store", k + 1, "(e, ", stored, "(e));\n");
    } else {
      return absl::InternalError(absl::StrCat("row kernel ", kernel.root->name(), " of ", row.rows,
                                              " rows cannot store ", also->name(), " (", count,
                                              " elements)"));
    }
  }
  const std::string element = absl::StrCat("    uint e = o * ", row_length, "u + r;\n");
  if (unrolled) {
    absl::StrAppend(&body,
                    UnrolledRowLoop(0, slots(row_length), row_length, lanes, element + stores));
  } else {
    absl::StrAppend(&body, "  for (uint r = ", lane, "; r < ", row_length, "u; r += ", lanes,
                    "u) {\n", element, stores, "  }\n");
  }
  return body;
}

absl::Status WriteKernel(const ProgramPlan& plan, KernelPlan& kernel) {
  KernelWriter writer(plan, kernel);
  absl::StatusOr<std::string> body;
  switch (kernel.kind) {
    case KernelKind::kCollective:
      return absl::OkStatus();
    case KernelKind::kMap:
      body = kernel.parts.empty() ? MapBody(kernel, writer) : PartsBody(kernel, writer);
      break;
    case KernelKind::kReduction:
      body = ReductionBody(kernel, writer, plan.subgroup_size);
      break;
    case KernelKind::kRows:
      body = RowsBody(plan, kernel, writer);
      break;
    case KernelKind::kDot:
      body = WriteDotKernel(kernel, writer);
      break;
  }
  VKSPMD_RETURN_IF_ERROR(body.status());
  VKSPMD_ASSIGN_OR_RETURN(kernel.glsl, writer.Finish(*body));
  kernel.push_constants = writer.sizes();
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteKernels(ProgramPlan& plan) {
  for (KernelPlan& kernel : plan.kernels) {
    VKSPMD_RETURN_IF_ERROR(WriteKernel(plan, kernel));
  }
  return absl::OkStatus();
}

}  // namespace vkspmd::codegen
