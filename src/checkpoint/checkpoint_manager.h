// Managing the steps of one checkpoint directory (Orbax's CheckpointManager): when to save
// (every save_interval steps, or at the next step boundary after a preemption notice), saving
// synchronously or in the background (staged to host memory first, so later changes to the
// tensors are not written), keeping the newest max_to_keep steps plus every keep_period-th,
// and cleaning what crashed processes left. Garbage collection runs only after a commit and
// never deletes the newest step.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "src/checkpoint/snapshot.h"

namespace vkspmd::checkpoint {

struct ManagerOptions {
  int64_t save_interval = 1;  // should_save is true for steps that are multiples of it.
  int64_t max_to_keep = 0;    // Keep the newest N steps (0: keep every step).
  int64_t keep_period = 0;    // Also keep every step that is a multiple of it (0: none).
  bool read_only = false;     // Saving and garbage collection do nothing (with a warning).
  // Install a SIGTERM handler: the notice makes should_save true at the next boundary; a
  // second SIGTERM ends the process as usual.
  bool save_on_preemption = false;
};

class Manager {
 public:
  static absl::StatusOr<std::unique_ptr<Manager>> Open(const std::string& directory,
                                                       const ManagerOptions& options);
  // Waits for a background save; its error, if nobody collected it, goes to stderr.
  ~Manager();
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  bool ShouldSave(int64_t step) const;
  // Saves `step` when forced or ShouldSave(step), with the snapshot `take` stages. First waits
  // for a background save and returns its error if it failed (then clears it). Saving a step
  // that exists is ALREADY_EXISTS, whatever `force`. Returns whether it saved (or, async,
  // started saving).
  using TakeSnapshot = std::function<absl::StatusOr<Snapshot>()>;
  absl::StatusOr<bool> Save(int64_t step, const TakeSnapshot& take, bool force, bool async);
  // Waits for a background save; returns its error once.
  absl::Status WaitUntilFinished();
  absl::StatusOr<std::vector<int64_t>> AllSteps() const;
  const std::string& directory() const { return directory_; }
  const ManagerOptions& options() const { return options_; }

  // Whether SIGTERM arrived since a manager with save_on_preemption was opened.
  static bool PreemptionRequested();
  // Tests: forget a notice.
  static void ClearPreemption();

 private:
  Manager(std::string directory, ManagerOptions options)
      : directory_(std::move(directory)), options_(options) {}
  // Write, then collect garbage (the background thread's work, or Save's when synchronous).
  absl::Status WriteAndCollect(int64_t step, const Snapshot& snapshot);
  absl::Status CollectGarbage();

  std::string directory_;
  ManagerOptions options_;
  std::mutex mutex_;  // Serialises Save and WaitUntilFinished.
  std::thread background_;
  absl::Status background_error_;  // Written by the background thread before it ends.
};

}  // namespace vkspmd::checkpoint
