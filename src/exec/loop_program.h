// A module with while loops of unknown trip count (or too long to unroll), run with each loop
// driven from the host: the code before a loop, its condition, its body and the code after it are
// partitioned and compiled as mesh programs of their own (ir/loop_split.h); the host runs the
// condition, reads the predicate back, and runs the body, while the loop state stays in device
// buffers. A conditional with such a loop in a branch is driven the same way: the host reads its
// selector back and runs the chosen branch's programs only.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "src/exec/mesh_program.h"
#include "src/exec/sharded_buffer.h"
#include "src/ir/literal.h"
#include "src/ir/module.h"
#include "src/spmd/mesh.h"

namespace vkspmd::exec {

class LoopProgram {
 public:
  // Whether `module` has a loop only the host can drive: a while whose trip count is neither in
  // its backend_config nor proved, or is but too long to unroll (ir::LowerControlFlow unrolls
  // the others), in the entry, in a loop's body or in a conditional's branch.
  static absl::StatusOr<bool> NeedsHostLoop(const ir::Module& module);

  // Splits `module` at its loops and at conditionals holding one (nested ones in a body,
  // condition or branch split again) and partitions every piece over `mesh` (a mesh of one device
  // runs it unpartitioned). The state of a loop, however its tuples nest, is carried as its array
  // leaves, partitioned with the shardings the code before it gives them (the while's own
  // sharding where it has one) in every iteration: the body's results are resharded to them, and
  // the condition's predicate is replicated, so every device takes the same branch. A
  // conditional's selector is replicated too, and every branch's results are resharded to the
  // first branch's shardings.
  static absl::StatusOr<std::unique_ptr<LoopProgram>> Partition(const ir::Module& module,
                                                                const spmd::Mesh& mesh);
  // `module` already is the per-device program of `mesh`'s devices (as JAX's compiled dumps
  // are): every piece runs as it is, every value replicated in form (each device its own). The
  // devices must agree on every condition (an error naming the loop otherwise).
  static absl::StatusOr<std::unique_ptr<LoopProgram>> FromPerDeviceModule(const ir::Module& module,
                                                                          const spmd::Mesh& mesh);
  ~LoopProgram();

  // Compiles every piece on `devices` (devices[d] runs mesh device d; borrowed), with one
  // collective world for all of them.
  absl::Status Compile(std::vector<runtime::MeshDevice*> devices, MeshProgramOptions options = {});

  // Arguments sharded as parameter_shardings() says (Scatter does that); one result per array
  // leaf of the entry's root (depth first). Nothing but the predicates passes through the host.
  absl::StatusOr<std::vector<std::unique_ptr<ShardedBuffer>>> Run(
      const std::vector<const ShardedBuffer*>& arguments);
  // Through the host: the arguments scattered, run, and the results gathered (a tuple when the
  // entry's root is one).
  absl::StatusOr<ir::Literal> Run(const std::vector<ir::Literal>& arguments);

  // Per device: `per_device[d]` are device d's arguments; device d's result (a tuple when the
  // entry's root is one) at index d.
  absl::StatusOr<std::vector<ir::Literal>> RunPerDevice(
      const std::vector<std::vector<ir::Literal>>& per_device);

  const spmd::Mesh& mesh() const { return mesh_; }
  int64_t loop_count() const { return loop_count_; }  // Loops split, nested ones included.
  int64_t conditional_count() const { return conditional_count_; }  // Conditionals split.
  int64_t program_count() const { return program_count_; }          // Mesh programs compiled.
  int64_t collective_count() const { return collective_count_; }    // Over all programs.
  // Iterations the last Run made, every loop's added up.
  int64_t last_iterations() const { return last_iterations_; }
  // The branch each host-driven conditional took in the last Run, in the order they ran.
  const std::vector<int64_t>& last_branches() const { return last_branches_; }

 private:
  struct Stage;
  LoopProgram() = default;
  static absl::StatusOr<std::unique_ptr<LoopProgram>> Create(const ir::Module& module,
                                                             const spmd::Mesh& mesh,
                                                             bool per_device);
  absl::StatusOr<std::unique_ptr<Stage>> Build(const ir::Module& module,
                                               const std::vector<ir::Sharding>* parameters,
                                               const std::vector<ir::Sharding>* results);
  absl::Status BuildConditional(Stage& stage, const ir::Module& module,
                                const ir::Instruction& conditional,
                                const std::vector<ir::Sharding>* parameters,
                                const std::vector<ir::Sharding>* results);
  absl::StatusOr<std::vector<std::unique_ptr<ShardedBuffer>>> RunConditional(
      Stage& stage, std::vector<std::unique_ptr<ShardedBuffer>> before_outputs);
  absl::StatusOr<std::vector<std::unique_ptr<ShardedBuffer>>> RunStage(
      Stage& stage, const std::vector<ShardedBuffer*>& arguments, const std::vector<bool>& donate);
  absl::Status CompileStage(Stage& stage, const std::vector<runtime::MeshDevice*>& devices,
                            const MeshProgramOptions& options);

  spmd::Mesh mesh_;
  std::unique_ptr<Stage> root_;
  std::vector<runtime::MeshDevice*> devices_;  // After Compile.
  MeshProgram* entry_ = nullptr;               // The first piece: it takes the module's parameters.
  ir::Shape root_shape_;                       // The entry's root: the results are its leaves.
  bool per_device_ = false;  // FromPerDeviceModule: the pieces are not partitioned.
  int64_t loop_count_ = 0;
  int64_t program_count_ = 0;
  int64_t collective_count_ = 0;
  int64_t conditional_count_ = 0;
  int64_t last_iterations_ = 0;
  std::vector<int64_t> last_branches_;
};

}  // namespace vkspmd::exec
