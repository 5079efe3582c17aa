// Auto-sharding of a training step (JAX's and PyTorch/XLA's auto_shard): the step's lazy graph is
// sharded by an integer linear program instead of annotations, and its state stays where it puts
// it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vkspmd/mesh.h"
#include "vkspmd/tensor.h"

namespace vkspmd {

struct AutoShardOptions {
  // Bytes per device that the step's live values (state included) may hold at its fullest
  // points; none: no limit. A limit no plan meets is an error.
  std::optional<int64_t> memory_limit_bytes;
  // The limit of the whole solve (every ILP of it together); the cheapest plan found by then is
  // taken (AutoShardPlan::stopped_at_time_limit says so). Where no ILP found a plan by then, the
  // step's choices left are made greedily (a valid plan, not a good one); with a memory limit,
  // which that ignores, no plan by then is an error.
  double time_limit_seconds = 30;
  // A cost model file (`vkspmd partition --cost-model`'s format: α/β per collective and mesh
  // axis, the compute rate); empty: the built-in defaults (docs/auto_sharding.md), or the
  // measured model with measure_cost_model.
  std::string cost_model_file;
  // Measure the cost model on the mesh's devices instead (each collective's α/β per mesh axis,
  // the kernels' costs; `vkspmd partition --cost-model measured`'s): timed once per device set,
  // driver and mesh (a few seconds on lavapipe), then read from the on-disk cache
  // (VKSPMD_CACHE_DIR). Plans then follow the machine's timings, so they may differ between
  // machines and runs. Not with cost_model_file, nor in a job of several processes (each would
  // time its own devices and could plan differently: measure once and pass the file).
  bool measure_cost_model = false;
  bool recalibrate = false;  // measure_cost_model: measure even when the cache holds a model
};

// What the ILP chose for the step.
struct AutoShardPlan {
  // The state tensors: auto_shard's `state` as given, or those the overload without it found
  // (in the order the tensors were made). Per state tensor, in that order: the sharding chosen,
  // as HLO text over the mesh's device ids ("{replicated}", "{devices=[2,1]<=[2]}"), and per dim
  // the mesh axes splitting it ("[{x}, {}]"). A given tensor the step does not read stays
  // replicated.
  std::vector<Tensor> state;
  std::vector<std::string> shardings;
  std::vector<std::string> axes;
  // The modelled seconds per step: the kernels', their all-reduces', resharding on edges.
  double compute_seconds = 0, communication_seconds = 0, resharding_seconds = 0;
  double modelled_seconds() const {
    return compute_seconds + communication_seconds + resharding_seconds;
  }
  int64_t peak_memory_bytes = 0;  // modelled, per device, at the step's fullest point
  int64_t instructions = 0;       // of the step's graph with a choice
  int64_t variables = 0;          // of the ILP after its reductions
  double solve_seconds = 0;
  bool optimal = false;  // proven optimal (not: solved in windows, or stopped at the time limit)
  bool stopped_at_time_limit = false;  // the time limit ended the search at this plan
  // Every instruction's sharding and the modelled costs, as `vkspmd partition --auto` prints.
  std::string report;
  // Where the costs came from: "defaults", "file PATH", "measured in S s on DEVICE (cached in
  // PATH)" or "measured earlier on DEVICE (from the cache PATH)".
  std::string cost_model;
};

// Auto-shards a training step over `mesh`. `step` traces one step (forward, backward, optimizer
// update: lazy ops, no value reads); `state` names the tensors that persist across steps
// (parameters, optimizer state), whose shardings the ILP chooses. auto_shard
//   1. runs what is pending (sync), then leaves each state tensor's sharding to the ILP (a
//      tensor marked with a non-replicated sharding on `mesh` keeps it);
//   2. calls step() once and mark_step(): the step's graph is sharded by the ILP (one sharding
//      per instruction, minimising the modelled step time under options), then partitioned,
//      compiled and launched. That first step is not thrown away: auto_shard(step, ...) stands
//      for one `step(); mark_step();` of the training loop;
//   3. marks every state tensor with the sharding the plan gave it, so its updates stay there
//      (as after mark_sharding), and keeps the mesh auto-sharded: every later graph on it is
//      planned by the ILP too (once per distinct graph, given where its inputs already are).
// Inputs made from host data in the step (a batch) are uploaded whole; the plan slices them.
// Calling it again for the same mesh replaces the options and plans the next step afresh.
// Errors (vkspmd::Error; the state tensors keep their values and shardings from before the call,
// host-side effects of step() such as an optimizer's step counts stay): a memory limit no plan
// meets (kFailedPrecondition, naming the limit), under a memory limit no plan within the time
// limit (kDeadlineExceeded, naming it), an op without a sharding rule, a state tensor marked on
// another mesh, an unreadable cost model, a measured one asked for with a file or in a job of
// several processes.
AutoShardPlan auto_shard(const std::function<void()>& step, const Mesh& mesh,
                         const std::vector<Tensor>& state, const AutoShardOptions& options = {});

// auto_shard(step, mesh) (the and JAX's form): the state is found rather than named. It
// is every tensor alive at the call that holds a value (after the sync; on no other mesh, not
// marked on another mesh, not inside a manual region) which step() assigns a new value
// (Tensor::assign, what optimizers and in-place ops do) computed by a graph that reads its old
// value: the parameters and optimizer state a training step updates. While step() traces, every
// such live tensor is a leaf the ILP may place; one that step() does not assign gets its value
// and marking back before the graph is lowered, and the graph reads it as it would have
// (so a read-only tensor, such as a batch made before the call or a frozen weight, is not placed
// by the ILP: name it in `state` for that). Tensors step() makes (its batch, state an optimizer
// creates on its first step) are not state. plan.state lists the tensors found, in the order they
// were made; on the same step, the plan is the one the explicit list of those tensors gives.
AutoShardPlan auto_shard(const std::function<void()>& step, const Mesh& mesh,
                         const AutoShardOptions& options = {});

}  // namespace vkspmd
