// Planning: which instructions get buffers, and one kernel per computed buffer.
#include "src/codegen/program_plan.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "src/codegen/dot_kernel.h"
#include "src/codegen/kernel_writer.h"
#include "src/codegen/reduction_code.h"
#include "src/codegen/row_fusion.h"
#include "src/ir/status_macros.h"

namespace vkspmd::codegen {
namespace {

using ir::Instruction;
using ir::Opcode;

// The most elements one invocation of a reduce or dot kernel combines; longer reductions are
// split into passes, which keeps every invocation far below llvmpipe's 65,535-iteration limit.
constexpr int64_t kMaxElementsPerInvocation = 4096;
constexpr uint32_t kLocalSize = 64;
// The most instructions one kernel computes inline (see SplitLongFusions).
constexpr int64_t kMaxFusedInstructions = 128;

// GLSL for a reduction's initial value, written into the kernel that applies it.
using InitCode = std::function<absl::StatusOr<std::string>(KernelWriter&)>;

class Planner {
 public:
  Planner(const ir::Module& module, const TargetInfo& target, DeviceIds ids)
      : module_(module), target_(target) {
    plan_.ids = ids;
  }

  absl::StatusOr<ProgramPlan> Plan() {
    const ir::Computation& entry = *module_.entry();
    VKSPMD_RETURN_IF_ERROR(Check(entry));
    std::map<const Instruction*, int> users;
    for (const auto& instruction : entry.instructions()) {
      std::set<const Instruction*> distinct(instruction->operands().begin(),
                                            instruction->operands().end());
      for (const Instruction* operand : distinct) users[operand] += 1;
    }
    const Instruction* root = entry.root();
    std::vector<const Instruction*> outputs;
    if (root->opcode() == Opcode::kTuple) {
      plan_.tuple_result = true;
      outputs.assign(root->operands().begin(), root->operands().end());
    } else {
      outputs.push_back(root);
    }
    std::set<const Instruction*> output_set(outputs.begin(), outputs.end());
    std::set<const Instruction*> needs_buffer;
    std::set<const Instruction*> collective_operands;  // The host reads them from buffers.
    for (const auto& instruction : entry.instructions()) {
      if (ir::IsCollective(instruction->opcode())) {
        collective_operands.insert(instruction->operands().begin(), instruction->operands().end());
      }
    }
    for (const auto& owned : entry.instructions()) {
      const Instruction* instruction = owned.get();
      if (instruction == root && plan_.tuple_result) continue;
      Opcode opcode = instruction->opcode();
      const bool collective_operand = collective_operands.count(instruction) > 0;
      if (opcode == Opcode::kParameter || opcode == Opcode::kDot || opcode == Opcode::kReduce ||
          ir::IsCollective(opcode) || collective_operand || output_set.count(instruction) ||
          (opcode == Opcode::kConstant && instruction->shape().rank() > 0) ||
          (users[instruction] > 1 && !CheapToRecompute(*instruction))) {
        needs_buffer.insert(instruction);
      }
    }
    SplitLongFusions(entry, needs_buffer);
    row_fusions_ =
        PlanRowFusions(entry, needs_buffer, output_set, Lanes(), kMaxElementsPerInvocation);
    for (const auto& owned : entry.instructions()) {
      const Instruction* instruction = owned.get();
      if (!needs_buffer.count(instruction)) continue;
      int id = AddBuffer(*instruction);
      materialized_[instruction] = id;
      const Opcode opcode = instruction->opcode();
      if (opcode == Opcode::kParameter) {
        plan_.buffers[id].origin = BufferOrigin::kParameter;
        plan_.buffers[id].parameter_number = instruction->attributes().parameter_number;
      } else if (opcode == Opcode::kConstant) {
        plan_.buffers[id].origin = BufferOrigin::kConstant;
        plan_.buffers[id].constant = &*instruction->attributes().literal;
      }
    }
    for (const auto& owned : entry.instructions()) {
      const Instruction* instruction = owned.get();
      auto found = materialized_.find(instruction);
      if (found == materialized_.end()) continue;
      const Opcode opcode = instruction->opcode();
      if (opcode == Opcode::kParameter || opcode == Opcode::kConstant) continue;
      if (opcode == Opcode::kDot) {
        VKSPMD_RETURN_IF_ERROR(PlanDot(*instruction, found->second));
      } else if (opcode == Opcode::kReduce) {
        VKSPMD_RETURN_IF_ERROR(PlanReduce(*instruction, found->second));
      } else if (ir::IsCollective(opcode)) {
        KernelPlan step;  // Run by the host: see KernelPlan::collective.
        step.name = instruction->name();
        step.collective = instruction;
        step.inputs = {materialized_.at(instruction->operand(0))};
        step.output = found->second;
        plan_.kernels.push_back(std::move(step));
      } else if (row_fusions_.count(instruction)) {
        VKSPMD_RETURN_IF_ERROR(PlanRowKernel(*instruction, found->second));
      } else {
        VKSPMD_RETURN_IF_ERROR(PlanMap(*instruction, found->second));
      }
    }
    for (const Instruction* output : outputs) plan_.outputs.push_back(materialized_.at(output));
    PlanDonations(entry, outputs);
    VKSPMD_RETURN_IF_ERROR(CheckLimits());
    return std::move(plan_);
  }

 private:
  absl::Status Check(const ir::Computation& entry) {
    for (const auto& instruction : entry.instructions()) {
      const Opcode opcode = instruction->opcode();
      if (opcode == Opcode::kTuple && instruction.get() == entry.root()) continue;
      // Collectives run on the host (exec checks their reducers); variadic ones are not handled.
      const bool unsupported_collective =
          ir::IsCollective(opcode) && instruction->operand_count() != 1;
      if (instruction->shape().IsTuple() || opcode == Opcode::kGetTupleElement ||
          unsupported_collective || opcode == Opcode::kRngBitGenerator ||
          opcode == Opcode::kCustomCall) {
        return absl::UnimplementedError(absl::StrCat("the device compiler does not support ",
                                                     std::string(ir::OpcodeName(opcode)), " yet (",
                                                     instruction->Describe(), ")"));
      }
      const ir::DType type = instruction->shape().dtype();
      if (!GlslType(type).ok()) {
        return absl::UnimplementedError(
            absl::StrCat("the device compiler supports pred, s8-s64, u8-u64, f32 and f64; ",
                         instruction->Describe(), " is ", instruction->shape().ToString()));
      }
      const int64_t bytes = ir::DTypeByteSize(type);
      const bool supported =
          type == ir::DType::kPred || (bytes == 1 && target_.int8_buffers) ||
          (bytes == 2 && target_.int16_buffers) || bytes == 4 ||
          (bytes == 8 && (type == ir::DType::kF64 ? target_.float64 : target_.int64));
      if (!supported) {
        return absl::UnimplementedError(
            absl::StrCat(instruction->Describe(), " is ", instruction->shape().ToString(),
                         ", but the device has no ", bytes * 8, "-bit ",
                         ir::IsFloat(type) ? "floats" : "integers", " in shaders"));
      }
      if (instruction->opcode() == Opcode::kReduce && instruction->operand_count() != 2) {
        return absl::UnimplementedError(absl::StrCat(
            "variadic reduce is not supported on devices yet (", instruction->Describe(), ")"));
      }
    }
    return absl::OkStatus();
  }

  // Gives a buffer to every instruction that would otherwise be the kMaxFusedInstructions-th
  // (or later) instruction computed inline by one kernel, counted over its operands not read from
  // buffers. A chain of 100,000 elementwise ops thus becomes kernels of at most that many
  // functions each: planning and writing stay linear, their recursion shallow, and every shader
  // small enough to compile quickly. One pass in definition order.
  static void SplitLongFusions(const ir::Computation& entry,
                               std::set<const Instruction*>& needs_buffer) {
    std::map<const Instruction*, int64_t> inline_count;  // 0 for instructions with buffers.
    for (const auto& owned : entry.instructions()) {
      const Instruction* instruction = owned.get();
      if (needs_buffer.count(instruction) || instruction == entry.root()) {
        inline_count[instruction] = 0;
        continue;
      }
      int64_t count = 1;
      for (const Instruction* operand : instruction->operands()) count += inline_count[operand];
      if (count >= kMaxFusedInstructions) {
        needs_buffer.insert(instruction);
        count = 0;
      }
      inline_count[instruction] = count;
    }
  }

  // Values every user may recompute instead of reading a buffer: constants, iota, and broadcasts
  // or reshapes of a parameter, a constant or an iota (one read or one expression per element).
  static bool CheapToRecompute(const Instruction& instruction) {
    const Opcode opcode = instruction.opcode();
    if (opcode == Opcode::kConstant || opcode == Opcode::kIota) return true;
    if (opcode != Opcode::kBroadcast && opcode != Opcode::kReshape) return false;
    const Opcode source = instruction.operand(0)->opcode();
    return source == Opcode::kParameter || source == Opcode::kConstant || source == Opcode::kIota;
  }

  // Whether `value`, computed in the kernel of `root`, reads `parameter` only at the index it is
  // evaluated at (through elementwise ops alone), given whether the path so far kept the index.
  bool ReadsOnlyInPlace(const Instruction* value, const Instruction* parameter, bool same_index,
                        bool is_root) const {
    if (value == parameter) return same_index;
    if (!is_root && materialized_.count(value)) return true;  // Read from its own buffer.
    const Opcode opcode = value->opcode();
    const bool elementwise = IsFusedElementwise(opcode);
    for (const Instruction* operand : value->operands()) {
      bool keeps_index =
          elementwise && operand->shape().dimensions() == value->shape().dimensions();
      if (!ReadsOnlyInPlace(operand, parameter, same_index && keeps_index, false)) return false;
    }
    return true;
  }

  void PlanDonations(const ir::Computation& entry, const std::vector<const Instruction*>& outputs) {
    for (const ir::InputOutputAlias& alias : module_.input_output_aliases()) {
      if (!alias.parameter_index.empty() || alias.output_index.size() > 1) continue;
      size_t k = alias.output_index.empty() ? 0 : static_cast<size_t>(alias.output_index[0]);
      if (k >= outputs.size() || alias.parameter_number >= entry.parameter_count()) continue;
      const Instruction* output = outputs[k];
      const Instruction* parameter = entry.parameter(alias.parameter_number);
      const int output_buffer = materialized_.at(output);
      const int parameter_buffer = materialized_.at(parameter);
      const Opcode opcode = output->opcode();
      if (opcode == Opcode::kParameter || opcode == Opcode::kConstant || opcode == Opcode::kDot ||
          opcode == Opcode::kReduce || output->shape() != parameter->shape()) {
        continue;
      }
      if (std::count(plan_.outputs.begin(), plan_.outputs.end(), output_buffer) != 1 ||
          std::count(plan_.outputs.begin(), plan_.outputs.end(), parameter_buffer) != 0) {
        continue;
      }
      size_t writer = plan_.kernels.size();
      for (size_t kernel = 0; kernel < plan_.kernels.size(); ++kernel) {
        if (plan_.kernels[kernel].output == output_buffer) writer = kernel;
      }
      bool read_later = false;
      for (size_t kernel = writer + 1; kernel < plan_.kernels.size(); ++kernel) {
        const std::vector<int>& inputs = plan_.kernels[kernel].inputs;
        read_later |= std::find(inputs.begin(), inputs.end(), parameter_buffer) != inputs.end();
      }
      if (writer == plan_.kernels.size() || read_later ||
          !ReadsOnlyInPlace(output, parameter, true, true)) {
        continue;
      }
      plan_.donations.emplace_back(output_buffer, parameter_buffer);
    }
  }

  // Kernels binding more buffers (counting each part of a split one) than the device allows, and
  // buffers too long for the kernels' 32-bit element index, are clear errors.
  absl::Status CheckLimits() const {
    for (const BufferPlan& buffer : plan_.buffers) {
      if (buffer.element_count() > std::numeric_limits<uint32_t>::max()) {
        return absl::UnimplementedError(absl::StrCat(
            "%", buffer.name, " (", buffer.shape.ToString(), ") has ", buffer.element_count(),
            " elements; device kernels index at most 2^32 - 1"));
      }
    }
    for (const KernelPlan& kernel : plan_.kernels) {
      if (kernel.collective != nullptr) continue;
      uint64_t bindings = plan_.buffers[kernel.output].parts();
      for (int input : kernel.inputs) bindings += plan_.buffers[input].parts();
      if (bindings > target_.max_storage_buffers_per_stage) {
        return absl::UnimplementedError(absl::StrCat("kernel ", kernel.name, " binds ", bindings,
                                                     " storage buffer ranges; the device allows ",
                                                     target_.max_storage_buffers_per_stage));
      }
    }
    return absl::OkStatus();
  }

  // The largest power-of-two element count whose bytes one binding can cover.
  uint64_t PartElements(uint32_t element_bytes) const {
    uint64_t limit = std::max<uint64_t>(target_.max_storage_buffer_range / element_bytes, 1);
    uint64_t part = 1;
    while (part * 2 <= limit) part *= 2;
    return part;
  }

  uint32_t ElementBytes(ir::DType type) const {
    if (type == ir::DType::kPred) return target_.byte_predicates ? 1 : 4;
    return static_cast<uint32_t>(ir::DTypeByteSize(type));
  }

  int AddBuffer(const Instruction& instruction) {
    BufferPlan buffer;
    buffer.shape = instruction.shape();
    buffer.name = instruction.name();
    buffer.element_bytes = ElementBytes(buffer.shape.dtype());
    buffer.part_elements = PartElements(buffer.element_bytes);
    plan_.buffers.push_back(std::move(buffer));
    return static_cast<int>(plan_.buffers.size()) - 1;
  }

  int AddScratch(ir::DType type, std::vector<int64_t> dimensions, const std::string& name) {
    BufferPlan buffer;
    buffer.shape = ir::Shape(type, std::move(dimensions));
    buffer.name = name;
    buffer.element_bytes = ElementBytes(type);
    buffer.part_elements = PartElements(buffer.element_bytes);
    plan_.buffers.push_back(std::move(buffer));
    return static_cast<int>(plan_.buffers.size()) - 1;
  }

  // Lanes that share one row of a reduction: a subgroup where shuffles exist.
  uint32_t Lanes() const {
    return target_.subgroup_shuffle ? std::clamp<uint32_t>(target_.subgroup_size, 1, 128) : 1;
  }

  void AddKernel(const std::string& name, KernelWriter& writer, int output, const std::string& body,
                 uint64_t invocations, uint32_t local_size = kLocalSize) {
    KernelPlan kernel;
    kernel.name = name;
    kernel.glsl = writer.Finish(output, body, local_size);
    kernel.inputs = writer.inputs();
    kernel.push_constants = writer.sizes();
    kernel.output = output;
    kernel.invocations = invocations;
    kernel.local_size = local_size;
    plan_.kernels.push_back(std::move(kernel));
  }

  absl::Status PlanMap(const Instruction& instruction, int output) {
    KernelWriter writer(materialized_, plan_);
    VKSPMD_ASSIGN_OR_RETURN(std::string value, writer.Value(&instruction, /*compute=*/true));
    uint64_t count = instruction.shape().ElementCount();
    AddKernel(
        instruction.name(), writer, output,
        absl::StrCat("  if (i >= ", writer.Size(count), ") return;\n  store(i, ", value, "(i));\n"),
        count);
    return absl::OkStatus();
  }

  // out[o] = init ⊕ input(o, 0) ⊕ ... ⊕ input(o, R-1), where `input(o, r)` is GLSL code of the
  // element and the reduction runs in passes of at most kMaxElementsPerInvocation iterations per
  // invocation. When consecutive r are adjacent in memory (`contiguous`), a workgroup of lanes
  // shares each chunk; otherwise each invocation reduces its chunk alone.
  absl::Status PlanReduction(const std::string& name, KernelWriter& writer, int output,
                             int64_t outer, int64_t inner, const std::string& element_code,
                             const std::string& combine, const InitCode& init_code, ir::DType type,
                             bool contiguous) {
    VKSPMD_ASSIGN_OR_RETURN(std::string glsl_type, GlslType(type));
    const uint32_t lanes = contiguous && inner >= 4 * int64_t{Lanes()} ? Lanes() : 1;
    const int64_t chunk = kMaxElementsPerInvocation * lanes;
    const int64_t chunks = std::max<int64_t>((inner + chunk - 1) / chunk, 1);
    const bool final_pass = chunks == 1;
    int destination = final_pass ? output : AddScratch(type, {outer, chunks}, name + ".partial");
    LaneReduction reduction;
    reduction.type = glsl_type;
    reduction.element = element_code;
    reduction.begin = "begin";
    reduction.end = "end";
    reduction.combine = combine;
    reduction.result = "result";
    reduction.lanes = lanes;
    if (final_pass) {
      VKSPMD_ASSIGN_OR_RETURN(reduction.init, init_code(writer));
    }
    std::string body = absl::StrCat(
        "  uint w = i / ", lanes, "u;\n  if (w >= ", outer * chunks, "u) return;\n",
        "  uint o = w / ", chunks, "u;\n  uint begin = (w % ", chunks, "u) * ", chunk, "u;\n",
        "  uint end = min(begin + ", chunk, "u, ", inner, "u);\n  ", glsl_type, " result;\n",
        LaneReductionCode(reduction, writer),
        lanes > 1 ? "  if (gl_LocalInvocationID.x == 0u) " : "  ", "store(w, result);\n");
    AddKernel(final_pass ? name : name + ".partial", writer, destination, body,
              outer * chunks * lanes, lanes > 1 ? lanes : kLocalSize);
    if (final_pass) return absl::OkStatus();
    // Combine the partial results: a reduction over [outer, chunks] along the chunks.
    KernelWriter next(materialized_, plan_);
    std::string read = next.ReadBuffer(destination);
    return PlanReduction(name, next, output, outer, chunks,
                         absl::StrCat(read, "(o * ", chunks, "u + r)"), combine, init_code, type,
                         /*contiguous=*/true);
  }

  // A kernel computing its output row by row, with the row reductions it absorbed computed first
  // in the same workgroup (see row_fusion.h).
  absl::Status PlanRowKernel(const Instruction& root, int output) {
    const RowFusion& fusion = row_fusions_.at(&root);
    const uint32_t lanes = Lanes();
    const std::string lane = lanes > 1 ? "gl_LocalInvocationID.x" : "0u";
    KernelWriter writer(materialized_, plan_);
    std::string body =
        absl::StrCat("  uint o = i / ", lanes, "u;\n  if (o >= ", fusion.rows, "u) return;\n");
    for (const Instruction* reduce : fusion.reductions) {
      const int64_t row_length = reduce->operand(0)->shape().ElementCount() / fusion.rows;
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
      absl::StrAppend(&body, LaneReductionCode(reduction, writer));
    }
    VKSPMD_ASSIGN_OR_RETURN(std::string value, writer.Value(&root, /*compute=*/true));
    const int64_t row_length = root.shape().ElementCount() / fusion.rows;
    absl::StrAppend(&body, "  for (uint r = ", lane, "; r < ", row_length, "u; r += ", lanes,
                    "u) {\n    uint e = o * ", row_length, "u + r;\n    store(e, ", value,
                    "(e));\n  }\n");
    AddKernel(root.name(), writer, output, body, fusion.rows * lanes,
              lanes > 1 ? lanes : kLocalSize);
    return absl::OkStatus();
  }

  absl::Status PlanReduce(const Instruction& reduce, int output) {
    const Instruction* operand = reduce.operand(0);
    const std::vector<int64_t>& dims = operand->shape().dimensions();
    const std::vector<int64_t>& reduced = reduce.attributes().dimensions;
    std::vector<int64_t> kept;
    std::vector<int64_t> reduced_sizes;
    for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
      if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) {
        kept.push_back(d);
      }
    }
    std::vector<int64_t> sorted_reduced = reduced;
    std::sort(sorted_reduced.begin(), sorted_reduced.end());
    for (int64_t d : sorted_reduced) reduced_sizes.push_back(dims[d]);
    std::vector<int64_t> kept_sizes;
    for (int64_t d : kept) kept_sizes.push_back(dims[d]);
    std::vector<int64_t> strides = ir::RowMajorStrides(dims);
    std::vector<int64_t> kept_strides = ir::RowMajorStrides(kept_sizes);
    std::vector<int64_t> reduced_strides = ir::RowMajorStrides(reduced_sizes);

    KernelWriter writer(materialized_, plan_);
    VKSPMD_ASSIGN_OR_RETURN(std::string input, writer.Value(operand));
    VKSPMD_ASSIGN_OR_RETURN(std::string combine, CombinerCode(reduce));
    // The operand's linear index from the kept coordinates (of o) and the reduced ones (of r).
    std::string index = "0u";
    for (size_t k = 0; k < kept.size(); ++k) {
      absl::StrAppend(&index, " + ((o / ", kept_strides[k], "u) % ", kept_sizes[k], "u) * ",
                      strides[kept[k]], "u");
    }
    for (size_t k = 0; k < sorted_reduced.size(); ++k) {
      absl::StrAppend(&index, " + ((r / ", reduced_strides[k], "u) % ", reduced_sizes[k], "u) * ",
                      strides[sorted_reduced[k]], "u");
    }
    return PlanReduction(
        reduce.name(), writer, output, std::max<int64_t>(ir::Product(kept_sizes), 1),
        ir::Product(reduced_sizes), absl::StrCat(input, "(", index, ")"), combine,
        [&reduce](KernelWriter& kernel) -> absl::StatusOr<std::string> {
          VKSPMD_ASSIGN_OR_RETURN(std::string init, kernel.Value(reduce.operand(1)));
          return absl::StrCat(init, "(0u)");
        },
        reduce.shape().dtype(), ReducesTrailingDims(reduce));
  }

  // Contraction steps per invocation of a dot kernel. Chunks of 512 keep the slab of the
  // right-hand operand a workgroup streams through small enough for a CPU's cache (1024^3 on
  // llvmpipe: 236 ms with 512, 272 ms with 4096; 2048^3: 3.0 s against 4.8 s), at the price of a
  // split-K partial buffer, which may use at most 64 MiB; otherwise chunks grow up to the
  // iteration bound.
  static int64_t DotChunk(const Instruction& dot) {
    int64_t contraction = 1;
    for (int64_t dim : dot.attributes().dot.lhs_contracting) {
      contraction *= dot.operand(0)->shape().dimension(dim);
    }
    const int64_t result_bytes = dot.shape().ElementCount() * 8;
    for (int64_t chunk = 512; chunk < kMaxElementsPerInvocation; chunk *= 2) {
      const int64_t chunks = (contraction + chunk - 1) / chunk;
      if (chunks == 1 || chunks * result_bytes <= (int64_t{64} << 20)) return chunk;
    }
    return kMaxElementsPerInvocation;
  }

  absl::Status PlanDot(const Instruction& dot, int output) {
    KernelWriter writer(materialized_, plan_);
    VKSPMD_ASSIGN_OR_RETURN(std::string lhs, writer.Value(dot.operand(0)));
    VKSPMD_ASSIGN_OR_RETURN(std::string rhs, writer.Value(dot.operand(1)));
    VKSPMD_ASSIGN_OR_RETURN(DotKernel kernel,
                            WriteDotKernel(dot, lhs, rhs, target_, DotChunk(dot)));
    const int64_t count = dot.shape().ElementCount();
    if (kernel.k_chunks == 1) {
      AddKernel(dot.name(), writer, output, kernel.body, kernel.invocations, kernel.local_size);
      return absl::OkStatus();
    }
    // Split-K: partial products per chunk of the contraction, then their sum.
    std::vector<int64_t> partial_dims = {kernel.k_chunks};
    partial_dims.insert(partial_dims.end(), dot.shape().dimensions().begin(),
                        dot.shape().dimensions().end());
    int partial = AddScratch(dot.shape().dtype(), partial_dims, dot.name() + ".split_k");
    AddKernel(dot.name() + ".split_k", writer, partial, kernel.body, kernel.invocations,
              kernel.local_size);
    KernelWriter sum(materialized_, plan_);
    std::string read = sum.ReadBuffer(partial);
    VKSPMD_ASSIGN_OR_RETURN(std::string type, GlslType(dot.shape().dtype()));
    return PlanReduction(
        dot.name(), sum, output, count, kernel.k_chunks,
        absl::StrCat(read, "(r * ", count, "u + o)"), "a + b",
        [type](KernelWriter&) -> absl::StatusOr<std::string> { return absl::StrCat(type, "(0)"); },
        dot.shape().dtype(), /*contiguous=*/false);
  }

  const ir::Module& module_;
  const TargetInfo& target_;
  ProgramPlan plan_;
  std::map<const Instruction*, int> materialized_;
  std::map<const Instruction*, RowFusion> row_fusions_;
};

}  // namespace

absl::StatusOr<std::string> GlslType(ir::DType type) {
  switch (type) {
    case ir::DType::kF32:
      return std::string("float");
    case ir::DType::kS8:
    case ir::DType::kS16:
    case ir::DType::kS32:
      return std::string("int");
    case ir::DType::kU8:
    case ir::DType::kU16:
    case ir::DType::kU32:
    case ir::DType::kPred:
      return std::string("uint");
    case ir::DType::kS64:
      return std::string("int64_t");
    case ir::DType::kU64:
      return std::string("uint64_t");
    case ir::DType::kF64:
      return std::string("double");
    default:
      return absl::UnimplementedError(absl::StrCat("type ", std::string(ir::DTypeName(type)),
                                                   " is not supported on devices yet"));
  }
}

absl::StatusOr<ProgramPlan> PlanProgram(const ir::Module& module, const TargetInfo& target,
                                        DeviceIds ids) {
  if (module.entry() == nullptr) return absl::InvalidArgumentError("the module has no entry");
  return Planner(module, target, ids).Plan();
}

}  // namespace vkspmd::codegen
