// Crash safety: a child saving step 3 (and deleting step 1, keeping 2) is ended at every fault
// point of the save and of the garbage collection in turn (VKSPMD_CHECKPOINT_FAULT=N makes the
// N-th point _exit, as a SIGKILL would). After each crash: only complete steps are listed, each
// restores bit-identically, and the next manager removes what the crash left.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "src/checkpoint/fault_injection.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/checkpoint/crash_state.h"

extern char** environ;

namespace vkspmd {
namespace {

namespace fs = std::filesystem;

// Runs the child (saving `step` into `directory`) with VKSPMD_CHECKPOINT_FAULT=`fault` (0:
// none); returns its exit status (-1 when it did not exit normally).
int RunChild(const std::string& directory, int64_t step, int64_t fault) {
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::string(*entry).rfind("VKSPMD_CHECKPOINT_FAULT=", 0) != 0) {
      environment.emplace_back(*entry);
    }
  }
  if (fault > 0) environment.push_back(absl::StrCat("VKSPMD_CHECKPOINT_FAULT=", fault));
  environment.push_back("VKSPMD_DEVICES=4");
  std::vector<char*> envp;
  for (std::string& entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::string program = VKSPMD_CRASH_CHILD, step_text = std::to_string(step);
  std::string directory_copy = directory;
  char* argv[] = {program.data(), directory_copy.data(), step_text.data(), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv, envp.data()) != 0) return -2;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

void ExpectStepRestores(const CheckpointManager& manager, int64_t step) {
  SCOPED_TRACE(absl::StrCat("step ", step));
  std::vector<Tensor> tensors = testing::CrashStateTensors(999, nullptr);
  CheckpointState state = testing::CrashState(tensors);
  manager.restore(step, state);
  const std::vector<Tensor> expected = testing::CrashStateTensors(step, nullptr);
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(testing::BitwiseDifference(tensors[i].to_host(), expected[i].to_host()), "");
  }
}

TEST(CheckpointCrashTest, EveryFaultPointLeavesOnlyCompleteSteps) {
  const std::string base = testing::FreshDirectory("crash_base");
  ASSERT_EQ(RunChild(base, 1, 0), 0);
  ASSERT_EQ(RunChild(base, 2, 0), 0);
  int64_t crashes = 0, completed_at = 0;
  for (int64_t fault = 1; fault <= 200; ++fault) {
    SCOPED_TRACE(absl::StrCat("fault point ", fault));
    const std::string directory = testing::FreshDirectory("crash");
    fs::remove(directory);
    fs::copy(base, directory, fs::copy_options::recursive);
    const int status = RunChild(directory, 3, fault);
    ASSERT_TRUE(status == 0 || status == checkpoint::kFaultExitCode) << "exit status " << status;
    if (status == checkpoint::kFaultExitCode) ++crashes;
    CheckpointManager manager(directory);
    const std::vector<int64_t> steps = manager.all_steps();
    // Before the commit: {1, 2}; after it, GC deletes 1 (newest two kept).
    EXPECT_TRUE(steps == (std::vector<int64_t>{1, 2}) || steps == (std::vector<int64_t>{1, 2, 3}) ||
                steps == (std::vector<int64_t>{2, 3}))
        << ::testing::PrintToString(steps);
    if (status == 0) {
      EXPECT_EQ(steps, (std::vector<int64_t>{2, 3}));
    }
    for (int64_t step : steps) ExpectStepRestores(manager, step);
    // Opening the manager removed every temporary and unfinished deletion.
    std::vector<std::string> expected_names;
    for (int64_t step : steps) expected_names.push_back(absl::StrFormat("step_%08d", step));
    EXPECT_EQ(testing::ListNames(directory), expected_names);
    if (status == 0) {
      completed_at = fault;
      break;
    }
  }
  // The save of 4 tensors over 4 devices plus one deletion has this many points; fewer would
  // mean the test no longer reaches them.
  EXPECT_GE(crashes, 50);
  EXPECT_GT(completed_at, 0) << "the save never completed within 200 fault points";
}

}  // namespace
}  // namespace vkspmd
