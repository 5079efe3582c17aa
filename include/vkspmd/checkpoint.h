// Sharded checkpoints (torch.distributed.checkpoint's and Orbax's job): a training state saved
// shard by shard from the devices, restored onto any mesh and sharding, and a CheckpointManager
// that decides when to save, saves in the background, keeps the newest steps and saves on
// preemption.
//
// On disk a directory holds one directory per step (step_00000100/): one file of raw shards per
// device that held them (replicas written once), manifest.json (every tensor's shape, dtype,
// mesh and sharding; every shard's file, offset, length, box and XXH3-64 checksum), and
// COMMITTED. A step is written under a temporary name, every file fsynced, and renamed into
// place only when complete, so a crash never leaves a half-written step visible, and a step is
// never overwritten. Every shard is checked against its checksum before its data is used.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vkspmd/nn.h"
#include "vkspmd/optim.h"
#include "vkspmd/tensor.h"

namespace vkspmd {

// What a checkpoint holds: named tensors (parameters, optimizer state, anything else), integer
// values read at save and handed back at restore (optimizer step counts), the data position, the
// random generator's state and the user's metadata.
struct CheckpointState {
  // An integer list saved beside the tensors: `get` is called at save, `set` at restore.
  struct Integers {
    std::string name;
    std::function<std::vector<int64_t>()> get;
    std::function<void(const std::vector<int64_t>&)> set;
  };

  std::vector<std::pair<std::string, Tensor>> tensors;
  std::vector<Integers> integers;
  // Where the data stream is (e.g. the next step's batch index); saved, and set by restore.
  int64_t data_position = 0;
  // Saved as they are; restore replaces them with the saved ones.
  std::map<std::string, std::string> metadata;
  // Save the random generator's state (get_rng_state) and set it at restore.
  bool rng = true;

  // Adds one tensor under `name` (names are unique; the tensor is held by reference, so a
  // restore changes it in place, keeping its sharding).
  CheckpointState& add(std::string name, const Tensor& tensor) {
    tensors.emplace_back(std::move(name), tensor);
    return *this;
  }
  // Every parameter of `module` as prefix + its dotted name.
  CheckpointState& add_module(const nn::Module& module, const std::string& prefix = "model.") {
    for (auto& [name, tensor] : module.named_parameters()) add(prefix + name, tensor);
    return *this;
  }
  // The optimizer's state tensors as prefix + their names, and its per-parameter step counts.
  CheckpointState& add_optimizer(optim::Optimizer& optimizer,
                                 const std::string& prefix = "optimizer.") {
    for (auto& [name, tensor] : optimizer.state_tensors()) add(prefix + name, tensor);
    integers.push_back(
        {prefix + "step_counts", [&optimizer] { return optimizer.step_counts(); },
         [&optimizer](const std::vector<int64_t>& counts) { optimizer.set_step_counts(counts); }});
    return *this;
  }
};

// Saves `state` as step `step` of `directory` (created if missing), synchronously. Throws
// (nothing written) when the step exists.
void save_checkpoint(const std::string& directory, int64_t step, const CheckpointState& state);
// Restores every tensor of `state` from the step directory `step_path` (.../step_00000100) onto
// the tensor's current mesh and sharding (or as host data for a tensor without one). Throws,
// changing nothing, for a missing tensor, another shape or dtype, or a damaged step (naming the
// file, the tensor and both checksums). Sets the integers, the data position, the metadata and,
// with `rng`, the generator.
void restore_checkpoint(const std::string& step_path, CheckpointState& state);

// What `vkspmd ckpt ls` shows of a step.
struct CheckpointTensorInfo {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::string mesh;      // "Mesh(shape=[2,2], ...)", or "" for host data.
  std::string sharding;  // HLO text, e.g. "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}".
  std::string sharding_axes;
  int64_t shard_count = 0;
  int64_t bytes = 0;
};
struct CheckpointInfo {
  int64_t step = 0;
  std::string path;
  std::string created;
  std::string library_version;
  int64_t bytes = 0;  // Of the saved shards.
  std::vector<CheckpointTensorInfo> tensors;
  std::map<std::string, std::string> metadata;
};
CheckpointInfo checkpoint_info(const std::string& step_path);
// Reads every shard and checks its checksum; the problems found (empty: sound). A step that
// cannot be opened at all throws.
std::vector<std::string> verify_checkpoint(const std::string& step_path);
// Writes every tensor of the step, whole (unsharded), as a safetensors file.
void export_safetensors(const std::string& step_path, const std::string& output_path);

struct CheckpointOptions {
  int64_t save_interval = 1;  // should_save(step) for multiples of it.
  int64_t max_to_keep = 0;    // Keep the newest N steps; 0 keeps all.
  int64_t keep_period = 0;    // Also keep every multiple of it; 0: none.
  bool read_only = false;     // save and garbage collection do nothing (a warning says so).
  // On SIGTERM, should_save becomes true so the loop saves at the next step boundary; see
  // preemption_requested() and kExitPreempted.
  bool save_on_preemption = false;
};

// The exit status of a process that saved a checkpoint after a preemption notice and stopped:
// restart it with resume (75, EX_TEMPFAIL: "try again").
inline constexpr int kExitPreempted = 75;

namespace checkpoint {
class Manager;
}  // namespace checkpoint

class CheckpointManager {
 public:
  // Removes what crashed processes left in `directory` (unfinished steps and deletions).
  explicit CheckpointManager(std::string directory, CheckpointOptions options = {});
  // Waits for a background save (its error, if not collected, is printed to stderr).
  ~CheckpointManager();
  CheckpointManager(const CheckpointManager&) = delete;
  CheckpointManager& operator=(const CheckpointManager&) = delete;

  bool should_save(int64_t step) const;
  // Saves when should_save(step) or `force`; returns whether it did. First waits for a
  // background save and throws its error if it failed. Throws when the step exists (whatever
  // `force`), leaving the disk unchanged. After a commit, removes the steps the options do not
  // keep (never the newest).
  bool save(int64_t step, const CheckpointState& state, bool force = false);
  // The same, but returns once the tensors are copied to host memory; the write continues in
  // the background, and later changes to the tensors do not change it. Its error surfaces at the
  // next save, save_async or wait_until_finished.
  bool save_async(int64_t step, const CheckpointState& state, bool force = false);
  void wait_until_finished();
  // Committed steps, ascending.
  std::vector<int64_t> all_steps() const;
  std::optional<int64_t> latest_step() const;
  void restore(int64_t step, CheckpointState& state) const;
  std::string step_path(int64_t step) const;
  const std::string& directory() const;
  // Whether SIGTERM arrived (with save_on_preemption).
  static bool preemption_requested();

 private:
  std::unique_ptr<checkpoint::Manager> manager_;
};

}  // namespace vkspmd
