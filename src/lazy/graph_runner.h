// GraphRunner: compiles a lowered graph (or finds it in the cache by structural hash and
// placement), brings its inputs onto the devices with the shardings the partitioner chose, runs
// it, and hands each output's buffer to its DeviceValue. Runs on the engine's worker thread.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "src/debug/graph_analysis.h"
#include "src/exec/mesh_program.h"
#include "src/lazy/device_pool.h"
#include "src/lazy/device_value.h"
#include "src/lazy/placement.h"

namespace vkspmd::lazy {

struct GraphInput {
  std::shared_ptr<DeviceValue> value;
  std::optional<ir::Literal> host;  // Set when this run uploads the value.
  // The module aliases this parameter to an output: its buffers are given to the run, which
  // writes that output into them. Nothing reads the value afterwards.
  bool donate = false;
};

struct GraphTask {
  // The lowered module, or null when the sync reused an earlier lowering of the same graph: the
  // graph cache then has the executable, or it is compiled again from `module_text`.
  std::unique_ptr<ir::Module> module;
  std::shared_ptr<const std::string> module_text;
  std::vector<ir::InputOutputAlias> aliases;  // The module's input_output_aliases.
  PlacementPtr placement;
  std::string hash;  // Structural hash of the module.
  std::vector<GraphInput> inputs;
  std::vector<std::shared_ptr<DeviceValue>> outputs;
  debug::GraphAnalysis analysis;  // Cause and source of the sync, for VKSPMD_DEBUG.
  // Set by Engine::Launch when it compiled the graph ahead (Prepare) and that failed: Run reports
  // it instead of compiling again.
  absl::Status compile_status;
  bool compiled_ahead = false;  // Prepare compiled it: Run's finding it is no cache hit.
};

class GraphRunner {
 public:
  // Never fails itself: an error goes to every output (and the value uploads) of the task.
  void Run(GraphTask& task, DevicePool& pool);
  // Compiles the task's graph into the cache (or finds it there) without running it. Finding it
  // counts no cache hit: the task's Run finds it again and counts one unless Prepare compiled it.
  absl::Status Prepare(GraphTask& task, DevicePool& pool);
  void Clear() { cache_.clear(); }
  size_t cached() const { return cache_.size(); }

 private:
  struct Compiled {
    int64_t generation = 0;  // The DevicePool generation the program belongs to.
    std::unique_ptr<exec::MeshProgram> program;
    int64_t collective_bytes = 0;  // Per run, all devices together.
  };

  absl::Status RunOrFail(GraphTask& task, DevicePool& pool);
  // `ahead`: called by Prepare, which counts no cache hit and marks a compile in the task.
  absl::StatusOr<Compiled*> FindOrCompile(GraphTask& task, DevicePool& pool, bool ahead = false);
  absl::StatusOr<Compiled> Compile(GraphTask& task, DevicePool& pool);

  std::map<std::string, Compiled> cache_;
};

}  // namespace vkspmd::lazy
