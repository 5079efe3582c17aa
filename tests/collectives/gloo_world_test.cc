// The multi-process world with real processes on 127.0.0.1: gloo_world_child started N times
// with the torchrun variables (a FileStore directory or the TCP store on a free port). The
// collective matrix over 2, 3 and 4 processes with 1 or 2 devices each must equal the in-process
// world bit for bit; a killed or silent process, a process that never arrives and processes that
// disagree (world size, version, requests) must fail every other with an error that names them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/collectives/process_job.h"

namespace vkspmd::collectives {
namespace {

using vkspmd::testing::Environment;
using vkspmd::testing::Outcome;

// A job of gloo_world_child processes.
class Job : public vkspmd::testing::Job {
 public:
  Job() : vkspmd::testing::Job(VKSPMD_GLOO_CHILD) {}
};

// Runs the matrix on `processes` processes, process i driving devices + i * extra devices, and
// expects every process to pass.
void RunMatrix(int processes, int devices, bool tcp, int extra = 0) {
  Job job;
  for (int index = 0; index < processes; ++index) {
    job.Start(job.Variables(index, processes, tcp),
              {"matrix", "--devices", std::to_string(devices + index * extra)});
  }
  std::vector<Outcome> outcomes = job.Wait(std::chrono::seconds(100));
  for (size_t k = 0; k < outcomes.size(); ++k) {
    EXPECT_EQ(outcomes[k].code, 0) << "process " << k << ":\n" << outcomes[k].log;
    EXPECT_NE(outcomes[k].log.find(" 0 mismatches"), std::string::npos) << outcomes[k].log;
  }
}

TEST(GlooWorldTest, MatrixTwoProcessesOneDeviceDirectoryStore) { RunMatrix(2, 1, false); }
TEST(GlooWorldTest, MatrixTwoProcessesTwoDevicesTcpStore) { RunMatrix(2, 2, true); }
TEST(GlooWorldTest, MatrixThreeProcessesOneDeviceTcpStore) { RunMatrix(3, 1, true); }
TEST(GlooWorldTest, MatrixThreeProcessesTwoDevicesDirectoryStore) { RunMatrix(3, 2, false); }
TEST(GlooWorldTest, MatrixFourProcessesOneDeviceDirectoryStore) { RunMatrix(4, 1, false); }
TEST(GlooWorldTest, MatrixFourProcessesTwoDevicesTcpStore) { RunMatrix(4, 2, true); }
// One process: no Gloo pairs at all, the same code path otherwise.
TEST(GlooWorldTest, MatrixOneProcessTwoDevices) { RunMatrix(1, 2, false); }
// Processes driving 1 and 2 devices: ranks 0 | 1, 2.
TEST(GlooWorldTest, MatrixProcessesWithDifferentDeviceCounts) { RunMatrix(2, 1, true, 1); }

TEST(GlooWorldTest, KilledProcessFailsTheOthersAtOnceNamingIt) {
  Job job;
  for (int index = 0; index < 3; ++index) {
    job.Start(job.Variables(index, 3, true), {"kill", "--victim", "1", "--at", "5"});
  }
  std::vector<Outcome> outcomes = job.Wait(std::chrono::seconds(60));
  EXPECT_EQ(outcomes[1].code, -1);
  for (int k : {0, 2}) {
    EXPECT_EQ(outcomes[k].code, 3) << outcomes[k].log;
    // Well within the 30 s collective timeout: the closed connection is seen at once.
    EXPECT_LT(outcomes[k].seconds, 15) << outcomes[k].log;
    // Process 1 is named (with the other survivor where that one exited first).
    EXPECT_NE(outcomes[k].log.find("process 1 (rank 1 on 127.0.0.1)"), std::string::npos)
        << outcomes[k].log;
    EXPECT_NE(outcomes[k].log.find("failed or closed the connection"), std::string::npos)
        << outcomes[k].log;
  }
}

TEST(GlooWorldTest, SilentProcessTimesOutNamingIt) {
  Job job;
  for (int index = 0; index < 2; ++index) {
    Environment env = job.Variables(index, 2, false);
    env["VKSPMD_COLLECTIVE_TIMEOUT_S"] = "2";
    job.Start(env, {"hang", "--victim", "1", "--at", "3", "--devices", "2"});
  }
  // The survivor gives up on its own while the victim still holds its connections open...
  std::vector<Outcome> outcomes = job.Wait(std::chrono::seconds(60), {0});
  job.Kill(1);  // ... and only then the victim goes.
  job.Wait(std::chrono::seconds(60));
  EXPECT_EQ(outcomes[0].code, 3) << outcomes[0].log;
  EXPECT_LT(outcomes[0].seconds, 30) << outcomes[0].log;  // Start-up, 3 calls, the 2 s timeout.
  EXPECT_NE(outcomes[0].log.find("timed out waiting for process 1 (ranks 2-3 on 127.0.0.1)"),
            std::string::npos)
      << outcomes[0].log;
}

// Collectives whose groups are each inside one process (a hybrid mesh's inner axes) exchange no
// message: process 0 finishes them while process 1 sleeps past the collective timeout (with a
// request exchange they would time out), and a later all-reduce over both still works.
TEST(GlooWorldTest, GroupsInsideProcessesDoNotWaitForOtherProcesses) {
  // Process 1 starts its inner all-reduces only after process 0 finished its own (a marker
  // file), so process 0 passes only if its inner calls never wait for process 1.
  const std::string marker = ::testing::TempDir() + "gloo_inside_" + std::to_string(getpid());
  std::remove(marker.c_str());
  Job job;
  for (int index = 0; index < 2; ++index) {
    Environment env = job.Variables(index, 2, true);
    env["VKSPMD_COLLECTIVE_TIMEOUT_S"] = "20";
    job.Start(env, {"inside", "--devices", "2", "--marker", marker});
  }
  std::vector<Outcome> outcomes = job.Wait(std::chrono::seconds(90));
  for (const Outcome& outcome : outcomes) {
    EXPECT_EQ(outcome.code, 0) << outcome.log;
    EXPECT_NE(outcome.log.find("5 inner all-reduces done"), std::string::npos) << outcome.log;
    EXPECT_NE(outcome.log.find("world all-reduce done"), std::string::npos) << outcome.log;
  }
  std::remove(marker.c_str());
}

TEST(GlooWorldTest, ProcessThatNeverArrivesIsNamedAtTheRendezvousTimeout) {
  Job job;
  for (int index : {0, 2}) {  // Process 1 of 3 never starts.
    Environment env = job.Variables(index, 3, true);
    env["VKSPMD_RENDEZVOUS_TIMEOUT_S"] = "2";
    job.Start(env, {"hello"});
  }
  for (const Outcome& outcome : job.Wait(std::chrono::seconds(60))) {
    EXPECT_EQ(outcome.code, 3) << outcome.log;
    // Process 0 times out; process 2 may see process 0's store go first: both name process 1.
    EXPECT_NE(outcome.log.find("process(es) 1 of 3 never arrived (arrived: 0, 2)"),
              std::string::npos)
        << outcome.log;
  }
}

TEST(GlooWorldTest, MismatchedWorldSizesFailBeforeAnyDataMoves) {
  Job job;
  job.Start(job.Variables(0, 2, false), {"hello"});
  job.Start(job.Variables(1, 3, false), {"hello"});
  for (const Outcome& outcome : job.Wait(std::chrono::seconds(60))) {
    EXPECT_EQ(outcome.code, 3) << outcome.log;
    EXPECT_LT(outcome.seconds, 15) << outcome.log;  // Not the 30 s rendezvous timeout.
    EXPECT_NE(outcome.log.find("the world sizes must match"), std::string::npos) << outcome.log;
  }
}

TEST(GlooWorldTest, MismatchedVersionsFailBeforeAnyDataMoves) {
  Job job;
  job.Start(job.Variables(0, 2, true), {"hello"});
  job.Start(job.Variables(1, 2, true), {"hello", "--version", "0.0.0-other"});
  for (const Outcome& outcome : job.Wait(std::chrono::seconds(60))) {
    EXPECT_EQ(outcome.code, 3) << outcome.log;
    // Each names the other's version and its own.
    EXPECT_NE(outcome.log.find("0.0.0-other"), std::string::npos) << outcome.log;
    EXPECT_NE(outcome.log.find("every process of a job must run the same version"),
              std::string::npos)
        << outcome.log;
  }
}

TEST(GlooWorldTest, DisagreeingRequestsFailEveryProcessAlikeAndTheWorldGoesOn) {
  Job job;
  for (int index = 0; index < 2; ++index) {
    job.Start(job.Variables(index, 2, false), {"disagree", "--devices", "2"});
  }
  for (const Outcome& outcome : job.Wait(std::chrono::seconds(60))) {
    EXPECT_EQ(outcome.code, 0) << outcome.log;
    EXPECT_NE(outcome.log.find("all-reduce #1: ranks disagree across processes: rank 0 calls "
                               "collective #1 all-reduce (400 bytes in, 400 bytes out) but rank "
                               "2 calls collective #1 all-reduce (404 bytes in"),
              std::string::npos)
        << outcome.log;
  }
}

}  // namespace
}  // namespace vkspmd::collectives
