// `vkspmd launch`'s process group: one attempt's N processes on this host, started with torchrun's
// variables, their output copied with rank prefixes, all stopped when one fails or on a signal.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/vkspmd/launch_signals.h"

namespace vkspmd::cli {

struct LaunchSpec {
  std::vector<std::string> command;  // PROGRAM ARGS, PROGRAM looked up in PATH
  int process_count = 1;
  std::optional<int> devices_per_process;  // VKSPMD_DEVICES of each process
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  int restart_count = 0;  // this attempt: 0, then 1 after the first restart
  int max_restarts = 0;
  // Between SIGTERM (or the forwarded signal) and SIGKILL.
  std::chrono::milliseconds grace_period{5000};
};

// How one rank ended (a waitpid status).
struct RankEnd {
  int rank = 0;
  int status = 0;

  // A non-zero exit code or a signal.
  bool failed() const;
  // The exit code, or 128 + the signal, as shells report a killed command.
  int exit_code() const;
  // "exit code 3" or "killed by SIGKILL".
  std::string Describe() const;
};

struct GroupOutcome {
  // Every rank, in the order the launcher saw them end.
  std::vector<RankEnd> ends;
  // The first rank seen to fail; the launcher stopped the others then.
  std::optional<RankEnd> first_failure;
  // SIGINT or SIGTERM the launcher received and forwarded to every rank; 0 if none.
  int interrupt_signal = 0;

  // The first failure's exit code; else 128 + the interrupt signal if there was one; else 0.
  int exit_code() const;
};

// The environment of one rank: `base` (environ) with RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, VKSPMD_RESTART_COUNT, VKSPMD_MAX_RESTARTS and, when
// given, VKSPMD_DEVICES replaced, each as NAME=VALUE.
std::vector<std::string> RankEnvironment(const LaunchSpec& spec, int rank, char** base);

// Runs one attempt until every rank has ended. A rank whose program cannot be executed is an
// error (NOT_FOUND when it does not exist, PERMISSION_DENIED otherwise) after the ranks already
// started have been stopped.
absl::StatusOr<GroupOutcome> RunProcessGroup(const LaunchSpec& spec, SignalPipe& signals);

}  // namespace vkspmd::cli
