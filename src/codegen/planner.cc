// Planning: which instructions get buffers, and the kernels that compute them (see planner.h).
#include "src/codegen/planner.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/codegen/collective_scheduling.h"
#include "src/codegen/dot_epilogue_fusion.h"
#include "src/codegen/dot_tiling.h"
#include "src/codegen/fused_ops.h"
#include "src/codegen/horizontal_fusion.h"
#include "src/codegen/kernel_reads.h"
#include "src/codegen/multi_output_fusion.h"
#include "src/codegen/reduction_folding.h"
#include "src/codegen/row_fusion.h"

namespace vkspmd::codegen {
namespace {

using ir::Instruction;
using ir::Opcode;

constexpr uint32_t kLocalSize = 64;

// Whether device kernels handle values of `type` at all (the target may still lack its width).
bool IsDeviceType(ir::DType type) {
  switch (type) {
    case ir::DType::kPred:
    case ir::DType::kS8:
    case ir::DType::kS16:
    case ir::DType::kS32:
    case ir::DType::kS64:
    case ir::DType::kU8:
    case ir::DType::kU16:
    case ir::DType::kU32:
    case ir::DType::kU64:
    case ir::DType::kF16:
    case ir::DType::kBF16:
    case ir::DType::kF32:
    case ir::DType::kF64:
      return true;
    default:
      return false;
  }
}

absl::Status Check(const ir::Computation& entry, const TargetInfo& target) {
  for (const auto& instruction : entry.instructions()) {
    const Opcode opcode = instruction->opcode();
    if (opcode == Opcode::kTuple && instruction.get() == entry.root()) continue;
    // A sort's elements are computed by its readers (sort_code.h): get-tuple-elements of it.
    if (opcode == Opcode::kSort && instruction->shape().IsTuple() &&
        instruction.get() != entry.root()) {
      continue;
    }
    const bool sorted_element =
        opcode == Opcode::kGetTupleElement && instruction->operand(0)->opcode() == Opcode::kSort;
    // Collectives run on the host (exec checks their reducers); variadic ones are not handled.
    const bool unsupported_collective =
        ir::IsCollective(opcode) && instruction->operand_count() != 1;
    if (instruction->shape().IsTuple() || (opcode == Opcode::kGetTupleElement && !sorted_element) ||
        unsupported_collective || opcode == Opcode::kRngBitGenerator ||
        opcode == Opcode::kCustomCall) {
      return absl::UnimplementedError(absl::StrCat("the device compiler does not support ",
                                                   std::string(ir::OpcodeName(opcode)), " yet (",
                                                   instruction->Describe(), ")"));
    }
    const ir::DType type = instruction->shape().dtype();
    if (!IsDeviceType(type)) {
      return absl::UnimplementedError(absl::StrCat(
          "the device compiler supports pred, s8-s64, u8-u64, f16, bf16, f32 and f64; ",
          instruction->Describe(), " is ", instruction->shape().ToString()));
    }
    const int64_t bytes = ir::DTypeByteSize(type);
    const bool supported =
        type == ir::DType::kPred || (bytes == 1 && target.int8_buffers) ||
        (bytes == 2 && target.int16_buffers) || bytes == 4 ||
        (bytes == 8 && (type == ir::DType::kF64 ? target.float64 : target.int64));
    if (!supported && (type == ir::DType::kF16 || type == ir::DType::kBF16)) {
      // Stored as uint16_t bit patterns and converted in the kernel (glsl_types.h).
      return absl::UnimplementedError(absl::StrCat(
          instruction->Describe(), " is ", instruction->shape().ToString(),
          ", but the device has no 16-bit storage buffers with 16-bit integers in shaders "
          "(storageBuffer16BitAccess and shaderInt16), which f16 and bf16 values need"));
    }
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

// Values every user may recompute instead of reading a buffer: constants, iota, and broadcasts,
// reshapes or slices of a parameter, a constant or an iota, through any chain of those (one read
// or one expression per element; AdamW's step scalars are slices of one host tensor).
bool CheapToRecompute(const Instruction& instruction) {
  auto index_only = [](Opcode opcode) {
    return opcode == Opcode::kBroadcast || opcode == Opcode::kReshape || opcode == Opcode::kSlice;
  };
  const Opcode opcode = instruction.opcode();
  if (opcode == Opcode::kConstant || opcode == Opcode::kIota) return true;
  if (!index_only(opcode)) return false;
  const Instruction* source = instruction.operand(0);
  while (index_only(source->opcode())) source = source->operand(0);
  const Opcode source_opcode = source->opcode();
  return source_opcode == Opcode::kParameter || source_opcode == Opcode::kConstant ||
         source_opcode == Opcode::kIota;
}

// Gives a buffer to every instruction that would otherwise be the kMaxFusedInstructions-th
// (or later) instruction computed inline by one kernel, counted over its operands not read from
// buffers. A chain of 100,000 elementwise ops thus becomes kernels of at most that many
// functions each: planning and writing stay linear, their recursion shallow, and every shader
// small enough to compile quickly. One pass in definition order.
void SplitLongFusions(const ir::Computation& entry, std::set<const Instruction*>& needs_buffer) {
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

// Gives a buffer to every instruction whose inline computation would read more than `max_reads`
// buffers: a sum of 40 gradients' norms becomes kernels that each bind at most that many, where
// one kernel would bind more storage buffers than the device allows. One pass in definition
// order; the sets stay small (at most max_reads + 1 each).
void SplitWideFusions(const ir::Computation& entry, std::set<const Instruction*>& needs_buffer,
                      size_t max_reads) {
  std::map<const Instruction*, std::set<const Instruction*>> reads;  // Empty for buffered ones.
  for (const auto& owned : entry.instructions()) {
    const Instruction* instruction = owned.get();
    if (needs_buffer.count(instruction) || instruction == entry.root()) continue;
    std::set<const Instruction*>& own = reads[instruction];
    for (const Instruction* operand : instruction->operands()) {
      if (needs_buffer.count(operand)) {
        own.insert(operand);
      } else if (auto found = reads.find(operand); found != reads.end()) {
        own.insert(found->second.begin(), found->second.end());
      }
    }
    if (own.size() > max_reads) {
      needs_buffer.insert(instruction);
      reads.erase(instruction);
    }
  }
}

using UserLists = std::map<const Instruction*, std::vector<const Instruction*>>;

// Whether `user` of `value` (a transpose or reshape) needs no value of it: a dot reading it
// through to a buffer (dot_tiling.h: ViewThrough; `needs_buffer` holds the buffers decided so
// far, those below `value`), or a transpose or reshape that only such dots read.
bool OnlyReadThrough(const Instruction& user, const Instruction& value, const UserLists& user_lists,
                     const std::set<const Instruction*>& needs_buffer,
                     const std::set<const Instruction*>& outputs) {
  if (user.opcode() == Opcode::kDot) {
    for (int64_t k = 0; k < 2; ++k) {
      if (user.operand(k) == &value && !ViewThrough(user, k, [&](const Instruction* buffered) {
            return needs_buffer.count(buffered) > 0;
          })) {
        return false;
      }
    }
    return true;
  }
  if ((user.opcode() != Opcode::kTranspose && user.opcode() != Opcode::kReshape) ||
      outputs.count(&user) > 0) {
    return false;
  }
  auto found = user_lists.find(&user);
  if (found == user_lists.end()) return false;
  return std::all_of(found->second.begin(), found->second.end(), [&](const Instruction* next) {
    return OnlyReadThrough(*next, user, user_lists, needs_buffer, outputs);
  });
}

// The instructions that get buffers before row fusion: parameters, dots, reduces, collectives
// and their operands, outputs, array constants, and values used twice unless cheap to recompute.
std::set<const Instruction*> NeedsBuffer(const ir::Computation& entry,
                                         const std::set<const Instruction*>& outputs,
                                         bool tuple_result, const TargetInfo& target) {
  std::map<const Instruction*, int> users;
  UserLists user_lists;
  std::set<const Instruction*> collective_operands;  // The host reads them from buffers.
  for (const auto& instruction : entry.instructions()) {
    std::set<const Instruction*> distinct(instruction->operands().begin(),
                                          instruction->operands().end());
    for (const Instruction* operand : distinct) {
      users[operand] += 1;
      user_lists[operand].push_back(instruction.get());
    }
    if (ir::IsCollective(instruction->opcode())) {
      collective_operands.insert(instruction->operands().begin(), instruction->operands().end());
    }
  }
  std::set<const Instruction*> needs_buffer;
  for (const auto& owned : entry.instructions()) {
    const Instruction* instruction = owned.get();
    if (instruction == entry.root() && tuple_result) continue;
    // Sorts whose readers are get-tuple-elements have no buffer of their own.
    if (instruction->shape().IsTuple()) continue;
    const Opcode opcode = instruction->opcode();
    // Dots reading a transpose or reshape through (down to a buffer: the chain below comes
    // first, so which of it has buffers is known here) make no use of its value.
    if (opcode == Opcode::kTranspose || opcode == Opcode::kReshape) {
      for (const Instruction* user : user_lists[instruction]) {
        if (OnlyReadThrough(*user, *instruction, user_lists, needs_buffer, outputs)) {
          users[instruction] -= 1;
        }
      }
    }
    // An elementwise value of a dot's result, read at the dot's own index, whose transposes or
    // reshapes only dots read (the attention heads' Q, K and V after their bias adds): in a buffer,
    // the dot kernel stores it as its epilogue (dot_epilogue_fusion.h) and the dots reading it
    // view through those transposes, which need no kernel.
    if (target.dot_epilogues && IsFusedElementwise(opcode) && !outputs.count(instruction) &&
        !needs_buffer.count(instruction) &&
        IsDotEpilogue(*instruction,
                      [&](const Instruction* value) { return needs_buffer.count(value) > 0; })) {
      needs_buffer.insert(instruction);
      const bool read_through = std::any_of(
          user_lists[instruction].begin(), user_lists[instruction].end(),
          [&](const Instruction* user) {
            return (user->opcode() == Opcode::kTranspose || user->opcode() == Opcode::kReshape) &&
                   OnlyReadThrough(*user, *instruction, user_lists, needs_buffer, outputs);
          });
      if (!read_through) needs_buffer.erase(instruction);
    }
    if (opcode == Opcode::kParameter || opcode == Opcode::kDot || opcode == Opcode::kReduce ||
        ir::IsCollective(opcode) || collective_operands.count(instruction) > 0 ||
        outputs.count(instruction) > 0 ||
        (opcode == Opcode::kConstant && instruction->shape().rank() > 0) ||
        (users[instruction] > 1 && !CheapToRecompute(*instruction))) {
      needs_buffer.insert(instruction);
    }
    // A scatter's elements each loop over every update: its indices and updates are read from
    // buffers rather than recomputed in that loop, and its result is never recomputed inline.
    // A sorted element is found by ranking its row: stored, and its operands too.
    const bool sorted =
        opcode == Opcode::kSort ||
        (opcode == Opcode::kGetTupleElement && instruction->operand(0)->opcode() == Opcode::kSort);
    if (sorted) {
      needs_buffer.insert(instruction);
      const Instruction* sort = opcode == Opcode::kSort ? instruction : instruction->operand(0);
      for (const Instruction* operand : sort->operands()) {
        if (!CheapToRecompute(*operand)) needs_buffer.insert(operand);
      }
    }
    if (opcode == Opcode::kScatter) {
      needs_buffer.insert(instruction);
      for (int64_t k = 1; k < 3; ++k) {
        const Instruction* operand = instruction->operand(k);
        if (!CheapToRecompute(*operand)) needs_buffer.insert(operand);
      }
    }
  }
  SplitLongFusions(entry, needs_buffer);
  // Room for the kernel's output and a split buffer or two; CheckLimits reports what is left.
  SplitWideFusions(entry, needs_buffer,
                   std::max<size_t>(target.max_storage_buffers_per_stage, 8) - 4);
  return needs_buffer;
}

// Contraction steps per invocation of a dot kernel. Chunks of 512 keep the slab of the
// right-hand operand a workgroup streams through small enough for a CPU's cache (1024^3 on
// llvmpipe: 236 ms with 512, 272 ms with 4096; 2048^3: 3.0 s against 4.8 s; with the shuffled
// register tiles, 2048^3 takes 0.99 s with 512, 1.09 s with 1024, 1.25 s unsplit, 1.31 s with
// 256), at the price of a split-K partial buffer, which may use at most 64 MiB; otherwise chunks
// grow up to the iteration bound.
int64_t DotChunk(const Instruction& dot) {
  int64_t contraction = 1;
  for (int64_t dim : dot.attributes().dot.lhs_contracting) {
    contraction *= dot.operand(0)->shape().dimension(dim);
  }
  // Partial products are f32 (f64 for f64 dots): 4 or 8 bytes per element.
  const int64_t result_bytes =
      dot.shape().ElementCount() * std::max<int64_t>(4, ir::DTypeByteSize(dot.shape().dtype()));
  for (int64_t chunk = 512; chunk < kMaxElementsPerInvocation; chunk *= 2) {
    const int64_t chunks = (contraction + chunk - 1) / chunk;
    if (chunks == 1 || chunks * result_bytes <= (int64_t{64} << 20)) return chunk;
  }
  return kMaxElementsPerInvocation;
}

class Planner {
 public:
  Planner(const ir::Module& module, const TargetInfo& target, DeviceIds ids)
      : module_(module), target_(target) {
    plan_.ids = ids;
    plan_.subgroup_size = target.subgroup_shuffle ? target.subgroup_size : 0;
    plan_.row_cache_slots = target.row_cache_slots;
    plan_.preserve_float32_denormals = target.preserve_float32_denormals;
    plan_.texel_reads = target.texel_reads;
    plan_.max_texel_buffer_elements = target.max_texel_buffer_elements;
  }

  absl::StatusOr<ProgramPlan> Plan() {
    const ir::Computation& entry = *module_.entry();
    VKSPMD_RETURN_IF_ERROR(Check(entry, target_));
    const Instruction* root = entry.root();
    std::vector<const Instruction*> outputs;
    if (root->opcode() == Opcode::kTuple) {
      plan_.tuple_result = true;
      outputs.assign(root->operands().begin(), root->operands().end());
    } else {
      outputs.push_back(root);
    }
    std::set<const Instruction*> output_set(outputs.begin(), outputs.end());
    std::set<const Instruction*> needs_buffer =
        NeedsBuffer(entry, output_set, plan_.tuple_result, target_);
    row_fusions_ =
        PlanRowFusions(entry, needs_buffer, output_set, Lanes(), kMaxElementsPerInvocation);
    for (const auto& owned : entry.instructions()) {
      if (ir::IsCollective(owned->opcode())) {
        collective_operands_.insert(owned->operands().begin(), owned->operands().end());
      }
    }
    for (const auto& owned : entry.instructions()) {
      if (!needs_buffer.count(owned.get())) continue;
      if (IsBufferAlias(*owned, output_set)) {
        // Operands come first in definition order, so the operand's buffer exists already.
        plan_.materialized[owned.get()] = plan_.materialized.at(owned->operand(0));
        aliases_.insert(owned.get());
      } else {
        Materialize(*owned);
      }
    }
    for (const auto& owned : entry.instructions()) {
      const Instruction* instruction = owned.get();
      auto found = plan_.materialized.find(instruction);
      if (found == plan_.materialized.end() || aliases_.count(instruction)) continue;
      const Opcode opcode = instruction->opcode();
      if (opcode == Opcode::kParameter || opcode == Opcode::kConstant) continue;
      if (opcode == Opcode::kDot) {
        PlanDot(*instruction, found->second);
      } else if (opcode == Opcode::kReduce) {
        PlanReduce(*instruction, found->second);
      } else if (ir::IsCollective(opcode)) {
        KernelPlan& step =
            AddKernel(instruction->name(), KernelKind::kCollective, *instruction, found->second,
                      {plan_.materialized.at(instruction->operand(0))}, 0, kLocalSize);
        step.collective = instruction;
      } else if (row_fusions_.count(instruction)) {
        PlanRowKernel(*instruction, found->second);
      } else {
        KernelReads reads(plan_.materialized);
        reads.Compute(instruction);
        AddKernel(instruction->name(), KernelKind::kMap, *instruction, found->second,
                  reads.inputs(), instruction->shape().ElementCount(), kLocalSize);
      }
    }
    for (const Instruction* output : outputs)
      plan_.outputs.push_back(plan_.materialized.at(output));
    FuseProducersIntoConsumers(plan_, target_, kMaxFusedInstructions, kMaxElementsPerInvocation);
    FoldReductionsIntoReaders(plan_, target_, kMaxElementsPerInvocation);
    if (target_.dot_epilogues) FuseDotEpilogues(plan_, target_, kMaxFusedInstructions);
    ScheduleAllReducesInWaves(plan_);
    PlanDonations(entry, outputs);
    FuseIndependentMapKernels(plan_, target_);
    VKSPMD_RETURN_IF_ERROR(CheckLimits());
    return std::move(plan_);
  }

 private:
  // A reshape of a value already in a buffer reads that buffer as it is: row-major, both hold the
  // same elements in the same order, and kernels read buffers by linear index. So it gets no
  // kernel and no buffer of its own. Not for outputs (they own their buffers) or values the host
  // reads for a collective (it reads them with the collective's operand shape).
  bool IsBufferAlias(const Instruction& instruction,
                     const std::set<const Instruction*>& outputs) const {
    if (instruction.opcode() != Opcode::kReshape || outputs.count(&instruction) ||
        row_fusions_.count(&instruction) || !plan_.materialized.count(instruction.operand(0)) ||
        instruction.operand(0)->shape().IsTuple()) {
      return false;
    }
    return !collective_operands_.count(&instruction);
  }

  void PlanDonations(const ir::Computation& entry, const std::vector<const Instruction*>& outputs) {
    for (const ir::InputOutputAlias& alias : module_.input_output_aliases()) {
      if (!alias.parameter_index.empty() || alias.output_index.size() > 1) continue;
      size_t k = alias.output_index.empty() ? 0 : static_cast<size_t>(alias.output_index[0]);
      if (k >= outputs.size() || alias.parameter_number >= entry.parameter_count()) continue;
      const Instruction* output = outputs[k];
      const Instruction* parameter = entry.parameter(alias.parameter_number);
      const int output_buffer = plan_.materialized.at(output);
      const int parameter_buffer = plan_.materialized.at(parameter);
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
        const std::vector<int> written = plan_.kernels[kernel].outputs();
        if (std::count(written.begin(), written.end(), output_buffer)) writer = kernel;
      }
      if (writer == plan_.kernels.size()) continue;
      bool read_later = false;
      for (size_t kernel = writer + 1; kernel < plan_.kernels.size(); ++kernel) {
        const std::vector<int>& inputs = plan_.kernels[kernel].inputs;
        read_later |= std::find(inputs.begin(), inputs.end(), parameter_buffer) != inputs.end();
      }
      // Every value the writing kernel computes (it may store several) must read the parameter
      // only at its own index: an invocation then reads the element before it overwrites it, and
      // no other invocation reads it.
      const KernelPlan& writing = plan_.kernels[writer];
      const std::set<const Instruction*> here(writing.also_stores.begin(),
                                              writing.also_stores.end());
      std::vector<const Instruction*> roots = {writing.root};
      if (writing.epilogue != nullptr) roots.push_back(writing.epilogue);
      roots.insert(roots.end(), writing.also_stores.begin(), writing.also_stores.end());
      bool in_place = true;
      for (const Instruction* root : roots) {
        std::set<std::pair<const Instruction*, bool>> checked;
        in_place = in_place && ReadsOnlyAtOwnIndex(plan_.materialized, root, parameter, true, true,
                                                   here, checked);
      }
      if (read_later || !in_place) continue;
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
      uint64_t bindings = 0;
      for (int output : kernel.outputs()) bindings += plan_.buffers[output].parts();
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

  // A buffer holding an instruction's value stores f16/bf16 in 2 bytes; scratch buffers (partial
  // reductions, split-K products) keep them in f32, so a split reduction rounds once, at its end.
  uint32_t ElementBytes(ir::DType type, bool instruction_value) const {
    if (type == ir::DType::kPred) return target_.byte_predicates ? 1 : 4;
    if (type == ir::DType::kF16 || type == ir::DType::kBF16) return instruction_value ? 2 : 4;
    return static_cast<uint32_t>(ir::DTypeByteSize(type));
  }

  int AddBuffer(ir::Shape shape, const std::string& name, bool instruction_value = false) {
    BufferPlan buffer;
    buffer.shape = std::move(shape);
    buffer.name = name;
    buffer.element_bytes = ElementBytes(buffer.shape.dtype(), instruction_value);
    buffer.part_elements = PartElements(buffer.element_bytes);
    plan_.buffers.push_back(std::move(buffer));
    return static_cast<int>(plan_.buffers.size()) - 1;
  }

  void Materialize(const Instruction& instruction) {
    const int id = AddBuffer(instruction.shape(), instruction.name(), /*instruction_value=*/true);
    plan_.materialized[&instruction] = id;
    if (instruction.opcode() == Opcode::kParameter) {
      plan_.buffers[id].origin = BufferOrigin::kParameter;
      plan_.buffers[id].parameter_number = instruction.attributes().parameter_number;
    } else if (instruction.opcode() == Opcode::kConstant) {
      plan_.buffers[id].origin = BufferOrigin::kConstant;
      plan_.buffers[id].constant = &*instruction.attributes().literal;
    }
  }

  // Lanes that share one row of a reduction: a subgroup where shuffles exist.
  uint32_t Lanes() const {
    return target_.subgroup_shuffle ? std::clamp<uint32_t>(target_.subgroup_size, 1, 128) : 1;
  }

  KernelPlan& AddKernel(const std::string& name, KernelKind kind, const Instruction& root,
                        int output, std::vector<int> inputs, uint64_t invocations,
                        uint32_t local_size) {
    KernelPlan kernel;
    kernel.name = name;
    kernel.kind = kind;
    kernel.root = &root;
    kernel.inputs = std::move(inputs);
    kernel.output = output;
    kernel.invocations = invocations;
    kernel.local_size = local_size;
    plan_.kernels.push_back(std::move(kernel));
    return plan_.kernels.back();
  }

  // The passes of a reduction (see ReductionPass) whose first pass reads the buffers in `reads`
  // and `partials` (-1: the operand of `root`, a reduce). When consecutive elements are adjacent
  // in memory (`contiguous`), a workgroup of lanes shares each chunk; otherwise each invocation
  // reduces its chunk alone.
  void PlanReduction(const Instruction& root, int output, int64_t outer, int64_t inner,
                     int partials, KernelReads& reads, bool contiguous) {
    ReductionPass pass;
    pass.outer = outer;
    pass.inner = inner;
    pass.partials = partials;
    pass.lanes = contiguous && inner >= 4 * int64_t{Lanes()} ? Lanes() : 1;
    pass.chunk = kMaxElementsPerInvocation * pass.lanes;
    pass.chunks = std::max<int64_t>((inner + pass.chunk - 1) / pass.chunk, 1);
    const std::string& name = root.name();
    const int destination =
        pass.final()
            ? output
            : AddBuffer(ir::Shape(root.shape().dtype(), {outer, pass.chunks}), name + ".partial");
    if (pass.final() && root.opcode() == Opcode::kReduce) reads.Read(root.operand(1));
    AddKernel(pass.final() ? name : name + ".partial", KernelKind::kReduction, root, destination,
              reads.inputs(), outer * pass.chunks * pass.lanes,
              pass.lanes > 1 ? pass.lanes : kLocalSize)
        .reduction = pass;
    if (pass.final()) return;
    // Combine the partial results: a reduction over [outer, chunks] along the chunks.
    KernelReads next(plan_.materialized);
    next.ReadBuffer(destination);
    PlanReduction(root, output, outer, pass.chunks, destination, next, /*contiguous=*/true);
  }

  void PlanReduce(const Instruction& reduce, int output) {
    const std::vector<int64_t>& dims = reduce.operand(0)->shape().dimensions();
    const std::vector<int64_t>& reduced = reduce.attributes().dimensions;
    int64_t outer = 1;
    int64_t inner = 1;
    for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
      const bool is_reduced = std::find(reduced.begin(), reduced.end(), d) != reduced.end();
      (is_reduced ? inner : outer) *= dims[d];
    }
    KernelReads reads(plan_.materialized);
    reads.Read(reduce.operand(0));
    PlanReduction(reduce, output, std::max<int64_t>(outer, 1), inner, /*partials=*/-1, reads,
                  ReducesTrailingDims(reduce));
  }

  // A kernel computing its output row by row, with the row reductions it absorbed computed first
  // in the same workgroup (see row_fusion.h).
  void PlanRowKernel(const Instruction& root, int output) {
    const RowFusion& fusion = row_fusions_.at(&root);
    const uint32_t lanes = Lanes();
    KernelReads reads(plan_.materialized);
    for (const Instruction* reduce : fusion.reductions) {
      reads.Hold(reduce);
      reads.Read(reduce->operand(0));
      reads.Read(reduce->operand(1));
    }
    reads.Compute(&root);
    KernelPlan& kernel = AddKernel(root.name(), KernelKind::kRows, root, output, reads.inputs(),
                                   fusion.rows * lanes, lanes > 1 ? lanes : kLocalSize);
    kernel.row = {fusion.rows, lanes, fusion.reductions};
  }

  void PlanDot(const Instruction& dot, int output) {
    const DotOperands operands = ViewDotOperands(
        dot, [&](const Instruction* value) { return plan_.materialized.count(value) > 0; });
    const DotTiling tiling = TileDot(dot, operands, target_, DotChunk(dot));
    KernelReads reads(plan_.materialized);
    reads.Read(operands.lhs.value);
    reads.Read(operands.rhs.value);
    const uint64_t invocations = static_cast<uint64_t>(tiling.groups * tiling.lanes);
    const uint32_t local_size = static_cast<uint32_t>(tiling.lanes);
    if (tiling.chunks == 1) {
      KernelPlan& kernel = AddKernel(dot.name(), KernelKind::kDot, dot, output, reads.inputs(),
                                     invocations, local_size);
      kernel.dot = tiling;
      kernel.dot_operands = operands;
      return;
    }
    // Split-K: partial products per chunk of the contraction, then their sum.
    std::vector<int64_t> partial_dims = {tiling.chunks};
    partial_dims.insert(partial_dims.end(), dot.shape().dimensions().begin(),
                        dot.shape().dimensions().end());
    const int partial =
        AddBuffer(ir::Shape(dot.shape().dtype(), partial_dims), dot.name() + ".split_k");
    KernelPlan& kernel = AddKernel(dot.name() + ".split_k", KernelKind::kDot, dot, partial,
                                   reads.inputs(), invocations, local_size);
    kernel.dot = tiling;
    kernel.dot_operands = operands;
    KernelReads sum(plan_.materialized);
    sum.ReadBuffer(partial);
    PlanReduction(dot, output, dot.shape().ElementCount(), tiling.chunks, partial, sum,
                  /*contiguous=*/false);
  }

  const ir::Module& module_;
  const TargetInfo& target_;
  ProgramPlan plan_;
  std::map<const Instruction*, RowFusion> row_fusions_;
  std::set<const Instruction*> aliases_;  // Reshapes reading their operand's buffer.
  std::set<const Instruction*> collective_operands_;
};

}  // namespace

absl::StatusOr<ProgramPlan> PlanKernels(const ir::Module& module, const TargetInfo& target,
                                        DeviceIds ids) {
  if (module.entry() == nullptr) return absl::InvalidArgumentError("the module has no entry");
  return Planner(module, target, ids).Plan();
}

}  // namespace vkspmd::codegen
