// Writes the GLSL of one kernel: buffer declarations, one function per fused instruction
// (`T vN(uint i)` returns the instruction's element at linear index i, calling its operands'
// functions at the indices its index mapping gives), and the kernel's main(). It binds the buffers
// its KernelPlan lists, and is an error if the code reads any other.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/codegen/glsl_types.h"
#include "src/codegen/kernel_plan.h"
#include "src/ir/instruction.h"

namespace vkspmd::codegen {

class KernelWriter {
 public:
  // Writes `kernel` of `plan`; both are borrowed.
  KernelWriter(const ProgramPlan& plan, const KernelPlan& kernel) : plan_(plan), kernel_(kernel) {}

  // The name of a function returning `instruction`'s element at a linear index: a buffer read for
  // materialized instructions (unless `compute` is set), otherwise the fused computation; for
  // values given to ReadAsVariable or DeclareRowValue, a function returning their variable.
  absl::StatusOr<std::string> Value(const ir::Instruction* instruction, bool compute = false);
  // A buffer read directly (e.g. partial sums); returns its read function's name.
  std::string ReadBuffer(int buffer_id);
  // A function returning elements 4i..4i+3 of `instruction` as one vec4 (ivec4, uvec4) where it
  // is read from a buffer of 32-bit elements, or of f16/bf16 stored in 16 bits, in one binding,
  // else nullopt: one texel where the kernel reads the buffer through a texel buffer
  // (TexelReadFormat), else the buffer is also declared as an array of vec4 (uvec2 for 16-bit
  // elements, each word unpacked into two values with the scalar read's conversion; an aliased
  // block). CPU drivers load each lane's value in a loop of their own, which one vector load
  // shares between 4 elements.
  struct VectorFunction {
    std::string name;
    std::string type;     // vec4, ivec4 or uvec4.
    std::string storage;  // The aliased block's element type: `type`, or uvec2.
  };
  std::optional<VectorFunction> VectorRead(const ir::Instruction* instruction);
  // A function `void <name>(uint i, <vec4 type> value)` storing elements 4i..4i+3 of the
  // kernel's output `output` (0: its root; k: also_stores[k - 1]) with one vector store, where
  // that output is one binding of 32-bit float or integer elements (the block is also declared as
  // an array of vec4, ivec4 or uvec4), else nullopt.
  std::optional<std::string> VectorStore(size_t output);
  // Makes Value(instruction), a value this kernel reads from its buffer, return a private
  // variable that the caller sets instead (a dot epilogue fed from vector loads). Call after any
  // VectorRead of it. Returns the variable.
  absl::StatusOr<std::string> ReadAsVariable(const ir::Instruction* instruction);
  const ProgramPlan& plan() const { return plan_; }
  // Row-major multi-index helpers: code declaring `uint <prefix>0..` from linear `index`.
  static std::string Coordinates(const std::string& prefix, const std::string& index,
                                 const std::vector<int64_t>& dimensions);

  // The complete shader: preamble, bindings (the kernel's inputs, then its output), the
  // functions, and `main_body` inside main() where `uint i` is the invocation's linear index.
  // INTERNAL if the code read buffers other than exactly the planned inputs.
  absl::StatusOr<std::string> Finish(const std::string& main_body);

  // Declares a private variable that main() sets to `instruction`'s value for the row the
  // invocation computes, and makes Value(instruction) read it (row fusion). Returns its name.
  // A narrow result is wrapped to its type when read (a reduction's or a dot's accumulator:
  // 16-bit float NaNs become the reference's), unless `keep_bits` (a value already of the type,
  // as ShareValues stores: a moved NaN payload stays as the reference keeps it).
  absl::StatusOr<std::string> DeclareRowValue(const ir::Instruction* instruction,
                                              bool keep_bits = false);

  // Computes once per invocation, into private variables that Value() then reads, the values
  // that `roots` (computed at the invocation's own index i) read at i from several readers: the
  // shared nodes of the fused DAG. Otherwise each reader calls the value's function, and the
  // shader compiler (lavapipe's inlines every call before it eliminates common subexpressions)
  // sees a tree that grows with each level of sharing: for Threefry's rounds, whose rotations
  // read their word twice, it grew past 20 GiB. Returns the code main() runs before it
  // computes `roots`; ends the sharing of an earlier call (a kernel part's values are its own).
  absl::StatusOr<std::string> ShareValues(const std::vector<const ir::Instruction*>& roots);
  // Ends the sharing of the last ShareValues call: its variables belong to the kernel part that
  // set them, so a later part (whose code, held reductions included, runs in another function)
  // must compute those values itself rather than read them.
  void EndSharing();

  // Row kernels keeping values between their loops over the row (row_cache.h): a per-invocation
  // array of `slots` values of `instruction`'s type, indexed by the private `row_slot` that each
  // loop iteration sets (its iteration number). Returns the array's name.
  absl::StatusOr<std::string> DeclareRowCache(const ir::Instruction* instruction, int64_t slots);
  // How Value() gives each cached instruction from now on: its array's element row_slot
  // (`load`), or its computation, which also writes that element (not `load`). Every other value
  // reading one of them gets new functions, so code written before keeps its own.
  struct RowCacheUse {
    std::string array;
    bool load = false;
  };
  void UseRowCaches(std::map<const ir::Instruction*, RowCacheUse> caches);
  // Adds GLSL after the functions written so far (which it may call), before main().
  void AddFunction(const std::string& code) { functions_ += code; }
  // Declares a workgroup-shared array of `count` values; returns its name.
  std::string AddShared(const std::string& type, uint32_t count);
  // A size the kernel reads from push constants (at most kMaxPushedSizes; later ones are
  // literals), so kernels that differ only in such sizes share their source and pipeline. Only for
  // sizes compared or multiplied with: dividing by a run-time value costs several times more on
  // CPU drivers than by a constant. Returns the GLSL expression.
  std::string Size(uint64_t value);
  const std::vector<uint32_t>& sizes() const { return sizes_; }
  static constexpr size_t kMaxPushedSizes = 8;
  // The kernel uses subgroup shuffles (the caller checked TargetInfo::subgroup_shuffle).
  void RequireSubgroups() { subgroups_ = true; }
  // The kernel uses GL_NV_cooperative_matrix with f16 values (TargetInfo::cooperative_matrix_f16);
  // emulated: only f16 values and subgroups.
  void RequireCooperativeMatrix(bool emulated) {
    cooperative_matrix_ = true;
    cooperative_matrix_emulated_ = emulated;
  }
  // The kernel computes with values of `type` (64-bit types need extensions and helpers).
  void UseType(ir::DType type) { types_.insert(type); }

 private:
  // Whether Value(instruction) reads its buffer (it has one and the kernel does not store it).
  bool ReadFromBuffer(const ir::Instruction* instruction) const;
  absl::StatusOr<std::string> Compute(const ir::Instruction& instruction, const std::string& name);
  absl::StatusOr<std::string> Elementwise(const ir::Instruction& instruction);
  absl::StatusOr<std::string> IndexMapping(const ir::Instruction& instruction);
  int Bind(int buffer_id);

  const ProgramPlan& plan_;
  const KernelPlan& kernel_;
  std::map<std::pair<const ir::Instruction*, bool>, std::string> names_;
  std::map<const ir::Instruction*, std::string> row_values_;  // DeclareRowValue's functions.
  std::vector<const ir::Instruction*> shared_;                // ShareValues' (in row_values_).
  std::map<const ir::Instruction*, RowCacheUse> row_caches_;
  bool row_slot_declared_ = false;
  std::map<int, std::string> buffer_reads_;
  std::map<int, VectorFunction> vector_reads_;
  std::map<size_t, std::string> vector_stores_;      // VectorStore's, by output.
  std::set<const ir::Instruction*> variable_reads_;  // ReadAsVariable's (in row_values_).
  std::set<int> bound_;                              // Planned inputs the code reads.
  std::set<int> unplanned_;  // Buffers the code reads that the plan does not bind.
  std::string functions_;
  int next_function_ = 0;
  int next_variable_ = 0;
  bool subgroups_ = false;
  bool cooperative_matrix_ = false;
  bool cooperative_matrix_emulated_ = false;
  std::set<ir::DType> types_;
  std::vector<uint32_t> sizes_;
};

}  // namespace vkspmd::codegen
