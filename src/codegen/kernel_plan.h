// The plan of a program for one device, as plain data: its buffers, and its kernels in execution
// order with the buffers each binds. Planning (planner.h) fills all of it but the kernels' GLSL and
// push constants, which writing (program_writer.h) then adds; nothing here calls either.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/ir/module.h"

namespace vkspmd::codegen {

enum class BufferOrigin { kParameter, kConstant, kIntermediate };

struct BufferPlan {
  ir::Shape shape;             // An array shape.
  uint32_t element_bytes = 4;  // 4, or 1 for pred on devices with byte predicates.
  BufferOrigin origin = BufferOrigin::kIntermediate;
  int64_t parameter_number = -1;          // kParameter.
  const ir::Literal* constant = nullptr;  // kConstant; borrowed from the module.
  std::string name;                       // The instruction's name, for errors and dumps.
  // Elements per binding: a buffer larger than the device's maxStorageBufferRange is bound as
  // several consecutive ranges of this many elements (a power of two), else one range.
  uint64_t part_elements = 0;
  uint64_t byte_size() const { return element_bytes * static_cast<uint64_t>(shape.ElementCount()); }
  uint64_t element_count() const { return static_cast<uint64_t>(shape.ElementCount()); }
  // How many bindings the buffer takes (at least one).
  uint32_t parts() const {
    return element_count() <= part_elements
               ? 1
               : static_cast<uint32_t>((element_count() + part_elements - 1) / part_elements);
  }
};

// What a kernel computes, which decides how its GLSL is written.
enum class KernelKind {
  kMap,         // Element i of `root`, its fused operands computed inline.
  kRows,        // `root` row by row, the row reductions it absorbed computed first.
  kReduction,   // One pass of a reduction (see ReductionPass).
  kDot,         // `root`, a dot, by register tiles (see DotTiling).
  kCollective,  // Run by the host between kernels, no shader: see KernelPlan::collective.
};

// One pass of out[o] = init ⊕ element(o, 0) ⊕ ... ⊕ element(o, inner - 1) for o < outer, each
// result split into `chunks` chunks of `chunk` elements. With several chunks the pass writes the
// chunks' partial results ([outer, chunks]) and a later pass combines them. `root` is the reduce,
// or the dot whose split-K partial products the pass adds.
struct ReductionPass {
  int64_t outer = 1;
  int64_t inner = 1;
  int64_t chunk = 1;
  int64_t chunks = 1;
  uint32_t lanes = 1;  // Lanes of a workgroup sharing one chunk (consecutive elements), or 1.
  // The buffer of partial results this pass reads (a previous pass's, or a dot's split-K
  // products), or -1 when it reads the reduce's operand.
  int partials = -1;
  bool final() const { return chunks == 1; }
};

// How a dot kernel divides [batch, rows, columns] over workgroups: a workgroup of `lanes`
// invocations computes kRowsPerTile rows ("uniform" side) of one batch element and
// per_lane * lanes columns (the "lane" side; swapped: the sides are the lhs's free dims and the
// rhs's the other way round), over one chunk of `chunk` contraction steps.
struct DotTiling {
  int64_t rows = 0;     // The lhs's free elements.
  int64_t columns = 0;  // The rhs's free elements.
  int64_t lanes = 1;
  bool swapped = false;
  int64_t per_lane = 1;
  int64_t tiles = 1;
  int64_t blocks = 1;
  int64_t chunk = 1;   // Contraction steps per invocation.
  int64_t chunks = 1;  // Chunks of the contraction: more than one writes partial products.
  int64_t groups = 0;  // Workgroups.
  int64_t contraction = 1;
  // Uniform-side rows per workgroup (register tile height).
  int64_t rows_per_tile = 4;
  // Each lane's per_lane lane-side elements are consecutive (a contiguous run of the operand
  // when its free dims are its trailing dims), rather than strided by `lanes`: CPU drivers load
  // them together; GPUs prefer the strided, coalesced order.
  bool lane_runs = false;
  // The shared-memory tiled variant for GPUs (TargetInfo::shared_memory_dot): a workgroup of
  // lanes x 1 invocations stages kSharedTile x kSharedDepth tiles of both operands.
  bool shared_memory = false;
  // The cooperative-matrix (tensor core) variant for f16 operands (dot_tiling.h:
  // UseCooperativeMatrix): warps_m x warps_n subgroups of `subgroup_size`, each accumulating
  // frags_m x frags_n fragments of matrix_m x matrix_n f32 results, over slabs of `depth`
  // contraction steps staged in shared memory as f16 (zero-padded past the edges).
  bool cooperative_matrix = false;
  int64_t matrix_m = 0, matrix_n = 0, matrix_k = 0;
  int64_t warps_m = 1, warps_n = 1, frags_m = 1, frags_n = 1;
  int64_t depth = 0;
  int64_t subgroup_size = 0;
  bool matrix_emulated = false;  // TargetInfo::cooperative_matrix_emulated.
  // Subgroup size when the uniform side is read `subgroup` contraction steps at a time, one step
  // per lane, and handed to every lane by subgroup shuffles (0: each lane reads each value). On
  // llvmpipe every lane's load costs the same whether or not the lanes share the address.
  int64_t subgroup = 0;
};

// One operand of a dot kernel as the kernel reads it: `value` (a buffer, or a value computed
// inline) seen as `shape`, a row-major shape of the same elements, and the dims of `shape` that
// make up the dot's batch, contraction and free (row or column) index, each index flattened
// row-major over its dims in the order listed. A chain of transposes and reshapes between a dot
// and a value in a buffer is read through this way (dot_tiling.h: ViewDotOperands): the
// reshapes refine `shape` and the transposes reorder the dims, so neither needs a kernel. A
// backward pass's x . W^T, the attention heads' transposes and the [batch, heads, seq, head]
// -> [batch * seq, heads * head] reshape feeding the output projection become strided reads.
struct DotOperandView {
  const ir::Instruction* value = nullptr;
  ir::Shape shape;
  std::vector<int64_t> batch, contracting, free;
};

// The operands a dot kernel reads.
struct DotOperands {
  DotOperandView lhs, rhs;
};

// A kernel computing its output row by row, with the row reductions it absorbed computed first
// in the same workgroup (row_fusion.h): `lanes` invocations share each row.
struct RowPlan {
  int64_t rows = 0;
  uint32_t lanes = 1;
  std::vector<const ir::Instruction*> reductions;  // In execution order.
};

// What a kernel of `kind` is, for traces and dumps: "elementwise (fused)", "dot", ...
inline const char* KernelKindName(KernelKind kind) {
  switch (kind) {
    case KernelKind::kMap:
      return "elementwise (fused)";
    case KernelKind::kRows:
      return "rows (fused row reductions)";
    case KernelKind::kReduction:
      return "reduction";
    case KernelKind::kDot:
      return "dot";
    case KernelKind::kCollective:
      return "collective";
  }
  return "kernel";
}

struct KernelPlan {
  std::string name;
  KernelKind kind = KernelKind::kMap;
  const ir::Instruction* root = nullptr;  // The instruction the kernel computes (or a pass of).
  std::vector<int> inputs;                // Buffer ids bound at 0..n-1, in first-read order.
  int output = -1;                        // Buffer id bound last.
  uint64_t invocations = 0;
  uint32_t local_size = 64;
  ReductionPass reduction;   // kReduction.
  DotTiling dot;             // kDot.
  DotOperands dot_operands;  // kDot: what it reads.
  RowPlan row;               // kRows.
  // A collective between devices, run by the host between kernels instead of a shader (glsl is
  // empty): inputs[0] holds its operand, output receives its result.
  const ir::Instruction* collective = nullptr;
  // kMap: more values of the root's shape this kernel stores at the index it computes (multi-
  // output fusion: a producer whose every reader comes later folded into a consumer's kernel),
  // each into its buffer, bound after `output` in this order. They are computed inline here,
  // wherever the root's computation reads them, instead of read from their buffers.
  std::vector<const ir::Instruction*> also_stores;
  std::vector<int> also_outputs;
  // kDot: the value stored into `output` instead of the dot's, computed at each element the
  // kernel computes from the dot's element there before it is stored (a dot epilogue,
  // dot_epilogue_fusion.h: an elementwise consumer such as a bias add, an activation or a
  // residual add, read at the dot's own index). also_stores then lists further values stored at
  // the same index, the dot itself among them where other kernels read it. nullptr: `output`
  // receives the dot.
  const ir::Instruction* epilogue = nullptr;
  // kMap: reduces computed first, at the kernel's own index (each invocation reduces the elements
  // of its output element), into variables the computation reads: a short reduce folded into the
  // one kernel that reads it, only at that index (reduction_folding.h).
  std::vector<const ir::Instruction*> held_reductions;
  // kMap: horizontal fusion (horizontal_fusion.h): independent map kernels this one dispatch
  // runs too, each over its own invocations after the previous one's (see PartStarts); what each
  // part reads is in `inputs`, and its outputs are bound after this kernel's own.
  std::vector<KernelPlan> parts;
  // Every buffer the kernel writes: output, then also_outputs, then each part's.
  std::vector<int> outputs() const {
    std::vector<int> all = {output};
    all.insert(all.end(), also_outputs.begin(), also_outputs.end());
    for (const KernelPlan& part : parts) {
      const std::vector<int> more = part.outputs();
      all.insert(all.end(), more.begin(), more.end());
    }
    return all;
  }
  // The first invocation of the kernel's own elements (0) and of each part's: every part starts
  // at a multiple of local_size, so no workgroup computes two parts.
  std::vector<uint64_t> PartStarts() const {
    std::vector<uint64_t> starts = {0};
    uint64_t next = RoundToGroups(root->shape().ElementCount());
    for (const KernelPlan& part : parts) {
      starts.push_back(next);
      next += RoundToGroups(part.root->shape().ElementCount());
    }
    return starts;
  }
  uint64_t RoundToGroups(int64_t elements) const {
    return (static_cast<uint64_t>(elements) + local_size - 1) / local_size * local_size;
  }
  // Written from the rest by WriteKernels:
  std::string glsl;
  std::vector<uint32_t> push_constants;  // The sizes the kernel reads (KernelWriter::Size).
};

// How kernels read an input buffer: as a storage buffer (kNone), or through a uniform texel
// buffer of 4 elements a texel of this kind (TargetInfo::texel_reads). src/exec binds the
// matching VkFormat. kFloat32 is f32 read as its bits (an unsigned format and uintBitsToFloat):
// a texel fetch from a float format need not keep subnormals or NaN payloads bit for bit.
enum class TexelFormat { kNone, kFloat32, kInt32, kUint32, kInt16, kUint16, kInt8, kUint8 };

// Which device of the program's replicas x partitions a plan is for (replica-id, partition-id).
struct DeviceIds {
  int64_t replica = 0;
  int64_t partition = 0;
};

struct ProgramPlan {
  std::vector<BufferPlan> buffers;
  std::vector<KernelPlan> kernels;  // In execution order.
  std::vector<int> outputs;         // Buffer ids of the result (one per tuple element).
  // (output buffer, parameter buffer) pairs from the module's input_output_alias where sharing
  // one device buffer is safe: the output's kernel reads the parameter only at the element it
  // writes, and no later kernel reads the parameter. Other aliases keep separate buffers. (With
  // texel reads the kernel fetches a whole texel, its neighbours' elements too, while they are
  // being written: safe only because it uses its own element alone, which nothing else writes.)
  std::vector<std::pair<int, int>> donations;
  bool tuple_result = false;
  DeviceIds ids;
  // The device's subgroup size where kernels use subgroup shuffles (TargetInfo::subgroup_size),
  // else 0. Shaders are SPIR-V 1.5 without varying subgroup sizes, so a workgroup of at most this
  // many invocations is one subgroup.
  uint32_t subgroup_size = 0;
  // Values per invocation a row kernel may keep in registers between its loops over the row
  // (TargetInfo::row_cache_slots; row_cache.h); 0 recomputes them in each loop.
  int64_t row_cache_slots = 0;
  // TargetInfo::preserve_float32_denormals.
  bool preserve_float32_denormals = false;
  // TargetInfo::texel_reads and max_texel_buffer_elements (see TexelReadFormat).
  bool texel_reads = false;
  uint64_t max_texel_buffer_elements = 0;
  // The instructions that live in buffers, and their buffer ids; every other instruction is
  // computed inline by the kernels that read it.
  std::map<const ir::Instruction*, int> materialized;
  // The module the kernels were planned from when it is not the caller's: a copy with while and
  // conditional lowered (ir/control_flow_lowering.h); the kernels point into it.
  std::shared_ptr<const ir::Module> lowered_module;
};

// The texel format kernels of `plan` read `buffer` through: kNone unless texel reads are on, the
// buffer is one binding (no parts) whose texels fit the device's limit, and its elements are of 8,
// 16 or 32 bits (64-bit values stay storage buffers). 16-bit floats are read as their bits.
TexelFormat TexelReadFormat(const ProgramPlan& plan, const BufferPlan& buffer);

}  // namespace vkspmd::codegen
