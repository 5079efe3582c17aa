// The multi-process world with real processes on 127.0.0.1: gloo_world_child started N times
// with the torchrun variables (a FileStore directory or the TCP store on a free port). The
// collective matrix over 2, 3 and 4 processes with 1 or 2 devices each must equal the in-process
// world bit for bit; a killed or silent process, a process that never arrives and processes that
// disagree (world size, version, requests) must fail every other with an error that names them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace vkspmd::collectives {
namespace {

using Clock = std::chrono::steady_clock;
using Environment = std::map<std::string, std::string>;

struct Outcome {
  int code = -1;  // Exit code; -1: killed by a signal or by the test at its deadline.
  double seconds = 0;
  std::string log;
};

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

class Job {
 public:
  Job()
      : dir_(std::filesystem::temp_directory_path() /
             absl::StrCat("vkspmd-gloo-test-", ::getpid(), "-", counter_++)) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~Job() { std::filesystem::remove_all(dir_); }

  // Environment for process `index` of `count` meeting through a directory or the TCP store.
  Environment Variables(int index, int count, bool tcp) {
    Environment env = {
        {"RANK", std::to_string(index)},       {"WORLD_SIZE", std::to_string(count)},
        {"LOCAL_RANK", std::to_string(index)}, {"LOCAL_WORLD_SIZE", std::to_string(count)},
        {"VKSPMD_COLLECTIVE_TIMEOUT_S", "30"}, {"VKSPMD_RENDEZVOUS_TIMEOUT_S", "30"}};
    if (tcp) {
      if (port_ == 0) port_ = FreePort();
      env["MASTER_ADDR"] = "127.0.0.1";
      env["MASTER_PORT"] = std::to_string(port_);
    } else {
      env["VKSPMD_RENDEZVOUS_DIR"] = (dir_ / "store").string();
    }
    return env;
  }

  void Start(const Environment& env, const std::vector<std::string>& args) {
    const std::string log = (dir_ / absl::StrCat("log-", pids_.size())).string();
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      for (const char* name :
           {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
            "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "VKSPMD_RENDEZVOUS_DIR"}) {
        ::unsetenv(name);
      }
      for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
      std::vector<char*> argv = {const_cast<char*>(VKSPMD_GLOO_CHILD)};
      for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
      argv.push_back(nullptr);
      ::execv(VKSPMD_GLOO_CHILD, argv.data());
      ::_exit(127);
    }
    pids_.push_back(pid);
    logs_.push_back(log);
  }

  // Waits for every process up to `limit`, then kills what is left.
  // Waits up to `limit` for the processes in `which` (empty: all), then kills those of them left.
  // Seconds are counted from the job's start; processes reaped earlier keep their outcome.
  std::vector<Outcome> Wait(std::chrono::seconds limit, std::vector<size_t> which = {}) {
    if (which.empty()) {
      for (size_t k = 0; k < pids_.size(); ++k) which.push_back(k);
    }
    outcomes_.resize(pids_.size());
    done_.resize(pids_.size(), false);
    const auto start = Clock::now();
    auto left = [&] {
      return std::count_if(which.begin(), which.end(), [&](size_t k) { return !done_[k]; });
    };
    while (left() > 0) {
      for (size_t k : which) {
        int status = 0;
        if (done_[k] || ::waitpid(pids_[k], &status, WNOHANG) != pids_[k]) continue;
        done_[k] = true;
        outcomes_[k].code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        outcomes_[k].seconds = std::chrono::duration<double>(Clock::now() - started_).count();
      }
      if (left() > 0 && Clock::now() - start > limit) {
        for (size_t k : which) {
          if (!done_[k]) ::kill(pids_[k], SIGKILL);
        }
        for (size_t k : which) {
          if (!done_[k]) ::waitpid(pids_[k], nullptr, 0);
          done_[k] = true;
        }
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (size_t k = 0; k < pids_.size(); ++k) {
      std::ifstream file(logs_[k]);
      std::stringstream text;
      text << file.rdbuf();
      outcomes_[k].log = text.str();
    }
    return outcomes_;
  }

  // Kills process `k` now (a silent victim).
  void Kill(size_t k) { ::kill(pids_[k], SIGKILL); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path dir_;
  int port_ = 0;
  std::vector<pid_t> pids_;
  std::vector<std::string> logs_;
  std::vector<Outcome> outcomes_;
  std::vector<bool> done_;
  const Clock::time_point started_ = Clock::now();
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
