// `vkspmd launch` driven as a user runs it, with /bin/sh scripts as ranks: the variables each rank
// gets, rank-prefixed output, the group stopped on a failure or a signal, restarts, bad programs.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Clock = std::chrono::steady_clock;

struct Result {
  int code = -1;
  std::string out;
  std::string err;
  double seconds = 0;
};

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

class LaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = std::filesystem::temp_directory_path() / "vkspmd-launch-XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Starts `vkspmd launch ARGS` with LAUNCH_DIR (this test's directory) in its environment and its
  // stdout and stderr going to files.
  pid_t Start(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {VKSPMD_CLI_PATH, "launch"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> pointers;
    for (std::string& arg : argv) pointers.push_back(arg.data());
    pointers.push_back(nullptr);
    const std::string out = dir_ + "/launcher.out", err = dir_ + "/launcher.err";
    started_ = Clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("LAUNCH_DIR", dir_.c_str(), 1);
      if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(99);
      execv(pointers[0], pointers.data());
      _exit(98);
    }
    return pid;
  }

  // Waits for the launcher (killing it after 30 s: a hang is a failure, never a stuck ctest).
  Result Wait(pid_t pid) {
    Result result;
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (Clock::now() - started_ > std::chrono::seconds(30)) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        KillRanks();
        ADD_FAILURE() << "vkspmd launch did not end within 30 s";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    result.seconds = std::chrono::duration<double>(Clock::now() - started_).count();
    result.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = ReadFile(dir_ + "/launcher.out");
    result.err = ReadFile(dir_ + "/launcher.err");
    return result;
  }

  Result Launch(const std::vector<std::string>& args) { return Wait(Start(args)); }

  // Waits until every rank has created $LAUNCH_DIR/ready.RANK (its traps are set by then).
  void WaitUntilReady(int ranks) {
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(20);
    for (int rank = 0; rank < ranks; ++rank) {
      while (!std::filesystem::exists(dir_ + "/ready." + std::to_string(rank))) {
        ASSERT_LT(Clock::now(), deadline) << "rank " << rank << " never became ready";
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
  }

  // Starts `ranks` ranks running `traps` and then waiting, sends `signal_number` to the launcher
  // once all are ready, and waits for it.
  Result Interrupt(int ranks, const std::string& traps, int signal_number) {
    const pid_t launcher =
        Start({"-n", std::to_string(ranks), "--", "/bin/sh", "-c", traps + WaitForStopScript()});
    WaitUntilReady(ranks);
    kill(launcher, signal_number);
    return Wait(launcher);
  }

  // A rank's script after its traps: it leaves its process id, says it is ready, then waits to
  // be stopped.
  static std::string WaitForStopScript() {
    return "echo $$ > \"$LAUNCH_DIR/pid.$RANK\"; touch \"$LAUNCH_DIR/ready.$RANK\"; "
           "while :; do sleep 0.05; done";
  }

  // After a launcher that hung: its ranks lead their own process groups and would outlive it.
  void KillRanks() {
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      if (entry.path().filename().string().rfind("pid.", 0) != 0) continue;
      const int pid = std::atoi(ReadFile(entry.path()).c_str());
      if (pid > 1) kill(-pid, SIGKILL);
    }
  }

  std::string dir_;
  Clock::time_point started_;
};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

TEST_F(LaunchTest, SetsTorchrunVariablesForEachRank) {
  const Result result =
      Launch({"-n", "3", "--devices-per-process", "2", "--", "/bin/sh", "-c",
              "echo RANK=$RANK WORLD_SIZE=$WORLD_SIZE LOCAL_RANK=$LOCAL_RANK "
              "LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE MASTER_ADDR=$MASTER_ADDR "
              "VKSPMD_DEVICES=$VKSPMD_DEVICES VKSPMD_RESTART_COUNT=$VKSPMD_RESTART_COUNT "
              "VKSPMD_MAX_RESTARTS=$VKSPMD_MAX_RESTARTS inherited=${LAUNCH_DIR:+yes}; "
              "echo port=$MASTER_PORT"});
  ASSERT_EQ(result.code, 0) << result.err;
  std::set<std::string> lines;
  std::set<std::string> ports;
  for (const std::string& line : Lines(result.out)) {
    if (line.find("port=") != std::string::npos) {
      ports.insert(line.substr(line.find("port=") + 5));
    } else {
      lines.insert(line);
    }
  }
  std::set<std::string> expected;
  for (int rank = 0; rank < 3; ++rank) {
    expected.insert(absl::StrCat("[rank ", rank, "] RANK=", rank, " WORLD_SIZE=3 LOCAL_RANK=", rank,
                                 " LOCAL_WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 VKSPMD_DEVICES=2 "
                                 "VKSPMD_RESTART_COUNT=0 VKSPMD_MAX_RESTARTS=0 inherited=yes"));
  }
  EXPECT_EQ(lines, expected) << result.out;
  // One port for the whole group, chosen by the launcher.
  ASSERT_EQ(ports.size(), 1u) << result.out;
  const int port = std::stoi(*ports.begin());
  EXPECT_GT(port, 0);
  EXPECT_LT(port, 65536);
  EXPECT_EQ(Lines(result.out).size(), 6u) << result.out;
}

TEST_F(LaunchTest, MasterAddressAndPortOptionsReplaceTheInheritedOnes) {
  setenv("MASTER_PORT", "1", 1);  // inherited by the launcher, replaced for its ranks
  const Result result = Launch({"-n", "2", "--master-addr", "10.1.2.3", "--master-port", "29876",
                                "/bin/sh", "-c", "echo $MASTER_ADDR:$MASTER_PORT"});
  unsetenv("MASTER_PORT");
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("[rank 0] 10.1.2.3:29876\n"));
  EXPECT_THAT(result.out, HasSubstr("[rank 1] 10.1.2.3:29876\n"));
}

TEST_F(LaunchTest, PrefixesEveryLineOfStdoutAndStderr) {
  // 300 lines each to interleave, an empty line, stderr, and a last line with no newline.
  const Result result =
      Launch({"-n", "2", "--", "/bin/sh", "-c",
              "i=0; while [ $i -lt 300 ]; do echo \"out $RANK $i\"; i=$((i+1)); done; echo; "
              "echo \"err $RANK\" >&2; printf \"partial $RANK\""});
  ASSERT_EQ(result.code, 0) << result.err;
  std::vector<std::vector<std::string>> by_rank(2);
  for (const std::string& line : Lines(result.out)) {
    ASSERT_TRUE(line.rfind("[rank 0] ", 0) == 0 || line.rfind("[rank 1] ", 0) == 0) << line;
    by_rank[line[6] - '0'].push_back(line.substr(9));
  }
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_EQ(by_rank[rank].size(), 302u);
    for (int i = 0; i < 300; ++i) EXPECT_EQ(by_rank[rank][i], absl::StrCat("out ", rank, " ", i));
    EXPECT_EQ(by_rank[rank][300], "");
    EXPECT_EQ(by_rank[rank][301], absl::StrCat("partial ", rank));
  }
  std::vector<std::string> errors = Lines(result.err);
  std::sort(errors.begin(), errors.end());
  EXPECT_EQ(errors, (std::vector<std::string>{"[rank 0] err 0", "[rank 1] err 1"}));
}

TEST_F(LaunchTest, ALineLongerThan64KiBIsCutIntoPrefixedLines) {
  const Result result = Launch(
      {"-n", "1", "--", "/bin/sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x; echo; echo end"});
  ASSERT_EQ(result.code, 0) << result.err;
  const std::string prefix = "[rank 0] ";
  EXPECT_EQ(result.out, prefix + std::string(65536, 'x') + "\n" + prefix +
                            std::string(100000 - 65536, 'x') + "\n" + prefix + "end\n");
}

TEST_F(LaunchTest, AFailingRankStopsTheOthersAndItsCodeIsReturned) {
  const Result result =
      Launch({"-n", "3", "--", "/bin/sh", "-c",
              "if [ $RANK = 1 ]; then while [ ! -e \"$LAUNCH_DIR/ready.0\" ] || "
              "[ ! -e \"$LAUNCH_DIR/ready.2\" ]; do sleep 0.02; done; exit 3; fi; "
              "trap 'echo got TERM; exit 0' TERM; " +
                  WaitForStopScript()});
  EXPECT_EQ(result.code, 3) << result.err;
  EXPECT_THAT(result.err, HasSubstr("rank 1 failed first (exit code 3)"));
  EXPECT_THAT(result.out, HasSubstr("[rank 0] got TERM"));
  EXPECT_THAT(result.out, HasSubstr("[rank 2] got TERM"));
}

TEST_F(LaunchTest, ARankIgnoringSigtermIsKilledAfterTheGracePeriod) {
  const Result result =
      Launch({"-n", "2", "--grace-period", "1", "--", "/bin/sh", "-c",
              "if [ $RANK = 1 ]; then while [ ! -e \"$LAUNCH_DIR/ready.0\" ]; do sleep 0.02; done; "
              "exit 5; fi; trap '' TERM; " +
                  WaitForStopScript()});
  EXPECT_EQ(result.code, 5) << result.err;
  EXPECT_THAT(result.err, HasSubstr("rank 1 failed first (exit code 5)"));
  EXPECT_THAT(result.err, HasSubstr("rank 0 killed by SIGKILL"));
  EXPECT_GE(result.seconds, 1.0);
  EXPECT_LT(result.seconds, 20.0);
}

TEST_F(LaunchTest, SigintReachesEveryRank) {
  const Result result = Interrupt(3, "trap 'echo got INT; exit 7' INT; ", SIGINT);
  EXPECT_EQ(result.code, 7) << result.err;
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_THAT(result.out, HasSubstr(absl::StrCat("[rank ", rank, "] got INT\n")));
  }
  EXPECT_THAT(result.err, HasSubstr("stopped by SIGINT"));
}

TEST_F(LaunchTest, SigtermReachesEveryRankAndTheirExitCodeIsReturned) {
  // As `vkspmd train --checkpoint-dir` does on SIGTERM: save, then exit 75.
  const Result result = Interrupt(2, "trap 'exit 75' TERM; ", SIGTERM);
  EXPECT_EQ(result.code, 75) << result.err;
  EXPECT_THAT(result.err, HasSubstr("stopped by SIGTERM (rank "));
}

// The state letter of process `pid` from /proc ('Z' for a zombie), or 0 when it is gone.
char ProcessState(int pid) {
  const std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? 0 : stat[paren + 2];
}

TEST_F(LaunchTest, KillingTheLauncherOutrightKillsItsRanks) {
  const pid_t launcher =
      Start({"-n", "2", "--", "/bin/sh", "-c", "trap '' TERM INT; " + WaitForStopScript()});
  WaitUntilReady(2);
  std::vector<int> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.push_back(std::atoi(ReadFile(absl::StrCat(dir_, "/pid.", rank)).c_str()));
  }
  kill(launcher, SIGKILL);
  EXPECT_EQ(Wait(launcher).code, 128 + SIGKILL);
  for (int pid : ranks) {
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
    while (ProcessState(pid) != 0 && ProcessState(pid) != 'Z' && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const char state = ProcessState(pid);
    EXPECT_TRUE(state == 0 || state == 'Z') << "rank process " << pid << " outlived the launcher";
  }
  KillRanks();
}

TEST_F(LaunchTest, MaxRestartsRestartsTheGroupAfterAFailure) {
  // Rank 1 fails on the first attempt only; every rank sees the restart counter.
  const Result result =
      Launch({"-n", "2", "--max-restarts", "1", "--", "/bin/sh", "-c",
              "if [ $VKSPMD_RESTART_COUNT = 0 ]; then if [ $RANK = 1 ]; then exit 4; fi; " +
                  WaitForStopScript() +
                  "; fi; echo attempt $VKSPMD_RESTART_COUNT of $VKSPMD_MAX_RESTARTS done"});
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_THAT(result.err, HasSubstr("rank 1 failed first (exit code 4)"));
  EXPECT_THAT(result.err, HasSubstr("restart 1 of 1"));
  EXPECT_THAT(result.out, HasSubstr("[rank 0] attempt 1 of 1 done\n"));
  EXPECT_THAT(result.out, HasSubstr("[rank 1] attempt 1 of 1 done\n"));
  EXPECT_THAT(result.out, Not(HasSubstr("attempt 0")));
}

TEST_F(LaunchTest, GivesUpAfterMaxRestarts) {
  const Result result = Launch({"-n", "1", "--max-restarts", "2", "--", "/bin/sh", "-c",
                                "echo attempt $VKSPMD_RESTART_COUNT; exit 9"});
  EXPECT_EQ(result.code, 9) << result.err;
  EXPECT_EQ(result.out, "[rank 0] attempt 0\n[rank 0] attempt 1\n[rank 0] attempt 2\n");
  EXPECT_THAT(result.err, HasSubstr("restart 2 of 2"));
}

TEST_F(LaunchTest, ARankKilledByASignalIsNamedAndGives128PlusTheSignal) {
  const Result result =
      Launch({"-n", "2", "--", "/bin/sh", "-c",
              "if [ $RANK = 1 ]; then kill -USR1 $$; fi; while :; do sleep 0.05; done"});
  EXPECT_EQ(result.code, 128 + SIGUSR1) << result.err;
  EXPECT_THAT(result.err, HasSubstr("rank 1 failed first (killed by SIGUSR1)"));
}

TEST_F(LaunchTest, AProgramThatCannotBeExecutedIsAClearError) {
  Result result = Launch({"-n", "2", "--", "vkspmd-no-such-program", "x"});
  EXPECT_EQ(result.code, 127);
  EXPECT_THAT(result.err, HasSubstr("cannot execute 'vkspmd-no-such-program': No such file or "
                                    "directory (searched PATH)"));
  EXPECT_EQ(result.out, "");
  const std::string not_executable = dir_ + "/script.sh";
  std::ofstream(not_executable) << "echo hello\n";
  result = Launch({"-n", "1", "--", not_executable});
  EXPECT_EQ(result.code, 126);
  EXPECT_THAT(result.err, HasSubstr("cannot execute '" + not_executable + "': Permission denied"));
}

TEST_F(LaunchTest, OptionsAfterTheProgramAreTheProgramsAndBadOptionsAreUsageErrors) {
  Result result = Launch({"-n", "1", "/bin/sh", "-c", "printf '%s\\n' \"$*\"", "sh", "-n", "5"});
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_EQ(result.out, "[rank 0] -n 5\n");
  EXPECT_EQ(Launch({"-n", "0", "--", "true"}).code, 2);
  EXPECT_EQ(Launch({"-n", "2"}).code, 2);
  result = Launch({"-n", "2", "--grace-period", "-1", "--", "true"});
  EXPECT_EQ(result.code, 2);
  EXPECT_THAT(result.err, HasSubstr("--grace-period -1"));
}

}  // namespace
