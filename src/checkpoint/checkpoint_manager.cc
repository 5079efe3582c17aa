// Save policy, the background writer and keep-N garbage collection.
#include "src/checkpoint/checkpoint_manager.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/checkpoint/step_directory.h"
#include "src/checkpoint/step_writer.h"
#include "src/debug/trace_writer.h"

namespace vkspmd::checkpoint {
namespace {

volatile sig_atomic_t preemption_notice = 0;

void OnPreemptionSignal(int) { preemption_notice = 1; }

void InstallPreemptionHandler() {
  struct sigaction action {};
  action.sa_handler = OnPreemptionSignal;
  sigemptyset(&action.sa_mask);
  // A second SIGTERM (an impatient scheduler) ends the process the usual way.
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace

bool Manager::PreemptionRequested() { return preemption_notice != 0; }
void Manager::ClearPreemption() { preemption_notice = 0; }

absl::StatusOr<std::unique_ptr<Manager>> Manager::Open(const std::string& directory,
                                                       const ManagerOptions& options) {
  if (directory.empty()) return absl::InvalidArgumentError("the checkpoint directory is empty");
  if (options.save_interval < 1 || options.max_to_keep < 0 || options.keep_period < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint options: save_interval ", options.save_interval,
                     " must be at least 1, ", "max_to_keep ", options.max_to_keep,
                     " and keep_period ", options.keep_period, " must not be negative"));
  }
  std::unique_ptr<Manager> manager(new Manager(directory, options));
  if (!options.read_only) {
    // A directory that cannot be written is reported now, not at the first save hours later.
    std::error_code error;
    std::filesystem::create_directories(directory, error);
    if (error || ::access(directory.c_str(), W_OK | X_OK) != 0) {
      return absl::PermissionDeniedError(absl::StrCat(
          "checkpoint directory ", directory, " cannot be created or written",
          error ? absl::StrCat(": ", error.message()) : std::string(": ") + std::strerror(errno)));
    }
    VKSPMD_ASSIGN_OR_RETURN(int64_t removed, CleanStaleEntries(directory));
    if (removed > 0) {
      std::fprintf(stderr,
                   "vkspmd checkpoint: removed %lld unfinished entr%s that ended processes left "
                   "in %s\n",
                   static_cast<long long>(removed), removed == 1 ? "y" : "ies", directory.c_str());
    }
  }
  if (options.save_on_preemption) InstallPreemptionHandler();
  return manager;
}

Manager::~Manager() {
  absl::Status error = WaitUntilFinished();
  if (!error.ok()) {
    std::fprintf(stderr, "vkspmd checkpoint: a background save failed: %s\n",
                 std::string(error.message()).c_str());
  }
}

bool Manager::ShouldSave(int64_t step) const {
  return PreemptionRequested() || step % options_.save_interval == 0;
}

absl::Status Manager::WaitUntilFinished() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (background_.joinable()) background_.join();
  absl::Status error = std::move(background_error_);
  background_error_ = absl::OkStatus();
  return error;
}

absl::StatusOr<std::vector<int64_t>> Manager::AllSteps() const {
  return ListCommittedSteps(directory_);
}

absl::StatusOr<bool> Manager::Save(int64_t step, const TakeSnapshot& take, bool force, bool async) {
  VKSPMD_RETURN_IF_ERROR(WaitUntilFinished());
  if (!force && !ShouldSave(step)) return false;
  if (options_.read_only) {
    std::fprintf(stderr, "vkspmd checkpoint: %s is read-only; step %lld not saved\n",
                 directory_.c_str(), static_cast<long long>(step));
    return false;
  }
  VKSPMD_ASSIGN_OR_RETURN(std::vector<int64_t> steps, AllSteps());
  if (std::find(steps.begin(), steps.end(), step) != steps.end()) {
    return absl::AlreadyExistsError(absl::StrCat("checkpoint step ", step, " already exists in ",
                                                 directory_, "; steps are never overwritten"));
  }
  VKSPMD_ASSIGN_OR_RETURN(Snapshot snapshot, take());
  if (!async) {
    VKSPMD_RETURN_IF_ERROR(WriteAndCollect(step, snapshot));
    return true;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  background_ = std::thread([this, step, snapshot = std::move(snapshot)] {
    debug::NameHostThread("checkpoint writer");
    background_error_ = WriteAndCollect(step, snapshot);
  });
  return true;
}

absl::Status Manager::WriteAndCollect(int64_t step, const Snapshot& snapshot) {
  VKSPMD_RETURN_IF_ERROR(WriteStep(directory_, step, snapshot));
  return CollectGarbage();
}

absl::Status Manager::CollectGarbage() {
  if (options_.max_to_keep == 0) return absl::OkStatus();
  VKSPMD_ASSIGN_OR_RETURN(std::vector<int64_t> steps, AllSteps());
  std::set<int64_t> keep;
  const size_t newest = std::min(steps.size(), static_cast<size_t>(options_.max_to_keep));
  keep.insert(steps.end() - static_cast<std::ptrdiff_t>(newest), steps.end());
  if (!steps.empty()) keep.insert(steps.back());
  for (int64_t step : steps) {
    if (options_.keep_period > 0 && step % options_.keep_period == 0) keep.insert(step);
  }
  for (int64_t step : steps) {
    if (!keep.contains(step)) VKSPMD_RETURN_IF_ERROR(DeleteStep(directory_, step));
  }
  return absl::OkStatus();
}

}  // namespace vkspmd::checkpoint
