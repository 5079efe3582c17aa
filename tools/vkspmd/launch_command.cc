// `vkspmd launch -n N [--devices-per-process K] [--max-restarts R] -- PROGRAM ARGS`: runs N
// processes of a distributed program on this host (torchrun's variables), restarting the group up
// to R times after a failure; the process-group logic is in launch_group.cc.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "tools/vkspmd/command.h"
#include "tools/vkspmd/launch_group.h"

namespace vkspmd::cli {
namespace {

// -n beyond this is refused: every rank holds two pipes, and one host runs few processes well.
constexpr int kMaxProcesses = 256;
// A program that cannot be executed: 127 when it does not exist, 126 otherwise, as shells say.
constexpr int kExitCannotExecute = 126;
constexpr int kExitNotFound = 127;

struct LaunchOptions {
  int processes = 0;
  std::optional<int> devices_per_process;
  int max_restarts = 0;
  double grace_period_s = 5.0;
  std::string master_addr = "127.0.0.1";
  std::optional<int> master_port;
  std::vector<std::string> command;
};

// A TCP port nothing listens on now (bound on every address, then released). Another process may
// take it before rank 0 binds it, as with torchrun; --master-port fixes the port instead.
absl::StatusOr<int> FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(fmt::format("socket: {}", std::strerror(errno)));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  const bool found = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                     getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  const int error = errno;
  close(fd);
  if (!found) {
    return absl::InternalError(fmt::format("choosing a free port: {}", std::strerror(error)));
  }
  return static_cast<int>(ntohs(address.sin_port));
}

// "rank 0 killed by SIGTERM, rank 2 exit code 0": how the ranks ended, but `skip_rank`.
std::string EndsText(const GroupOutcome& outcome, int skip_rank) {
  std::vector<std::string> ends;
  for (const RankEnd& end : outcome.ends) {
    if (end.rank != skip_rank) ends.push_back(fmt::format("rank {} {}", end.rank, end.Describe()));
  }
  return absl::StrJoin(ends, ", ");
}

// How the attempt ended and what comes next: `restart` > 0 when the group starts again.
void ReportEnd(const GroupOutcome& outcome, int attempt, int restart, int max_restarts) {
  const std::string next =
      restart > 0 ? fmt::format("restart {} of {}: starting {} rank{} again", restart, max_restarts,
                                outcome.ends.size(), outcome.ends.size() == 1 ? "" : "s")
                  : fmt::format("exit code {}", outcome.exit_code());
  if (outcome.interrupt_signal != 0) {
    fmt::print(stderr, "vkspmd launch: stopped by {} ({}); {}\n",
               SignalName(outcome.interrupt_signal), EndsText(outcome, -1), next);
  } else if (outcome.first_failure) {
    const std::string others = EndsText(outcome, outcome.first_failure->rank);
    fmt::print(stderr, "vkspmd launch: rank {} failed first ({}){}{}; {}\n",
               outcome.first_failure->rank, outcome.first_failure->Describe(),
               others.empty() ? "" : "; then ", others, next);
  } else if (attempt > 0) {
    fmt::print(stderr, "vkspmd launch: all {} ranks finished after {} restart{}\n",
               outcome.ends.size(), attempt, attempt == 1 ? "" : "s");
  }
}

int RunLaunch(const LaunchOptions& options) {
  if (!std::isfinite(options.grace_period_s) || options.grace_period_s < 0 ||
      options.grace_period_s > 3600) {
    fmt::print(stderr, "vkspmd launch: --grace-period {}: expected 0 to 3600 seconds\n",
               options.grace_period_s);
    return kExitUsageError;
  }
  LaunchSpec spec;
  spec.command = options.command;
  spec.process_count = options.processes;
  spec.devices_per_process = options.devices_per_process;
  spec.master_addr = options.master_addr;
  spec.max_restarts = options.max_restarts;
  spec.grace_period = std::chrono::milliseconds(std::lround(options.grace_period_s * 1000));
  absl::StatusOr<std::unique_ptr<SignalPipe>> signals = SignalPipe::Install();
  if (!signals.ok()) {
    fmt::print(stderr, "vkspmd launch: {}\n", signals.status().message());
    return kExitRuntimeError;
  }
  for (int attempt = 0;; ++attempt) {
    spec.restart_count = attempt;
    // A fresh port each attempt: the last attempt's rank 0 may have left its port in TIME_WAIT.
    absl::StatusOr<int> port = options.master_port ? *options.master_port : FreePort();
    if (!port.ok()) {
      fmt::print(stderr, "vkspmd launch: {}\n", port.status().message());
      return kExitRuntimeError;
    }
    spec.master_port = *port;
    absl::StatusOr<GroupOutcome> outcome = RunProcessGroup(spec, **signals);
    if (!outcome.ok()) {
      fmt::print(stderr, "vkspmd launch: {}\n", outcome.status().message());
      switch (outcome.status().code()) {
        case absl::StatusCode::kNotFound:
          return kExitNotFound;
        case absl::StatusCode::kPermissionDenied:
          return kExitCannotExecute;
        default:
          return kExitRuntimeError;
      }
    }
    // An interrupt is the user's (or the scheduler's) word: no restart after it.
    const bool restart =
        outcome->first_failure && outcome->interrupt_signal == 0 && attempt < options.max_restarts;
    ReportEnd(*outcome, attempt, restart ? attempt + 1 : 0, options.max_restarts);
    if (!restart) return outcome->exit_code();
  }
}

}  // namespace

void RegisterLaunchCommand(CLI::App& app) {
  auto options = std::make_shared<LaunchOptions>();
  CLI::App* command = app.add_subcommand(
      "launch",
      "Run N processes of a program on this host with torchrun's variables (RANK, WORLD_SIZE, "
      "MASTER_ADDR, ...), output prefixed by rank; the group stops or restarts when one fails");
  command->add_option("-n,--processes", options->processes, "Number of processes (ranks)")
      ->required()
      ->check(CLI::Range(1, kMaxProcesses));
  command
      ->add_option("--devices-per-process", options->devices_per_process,
                   "Mesh devices each process opens (sets VKSPMD_DEVICES)")
      ->check(CLI::Range(1, 65536));
  command
      ->add_option("--max-restarts", options->max_restarts,
                   "Restart the whole group up to R times after a failure")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  command
      ->add_option("--grace-period", options->grace_period_s,
                   "Seconds between SIGTERM and SIGKILL when stopping the group")
      ->capture_default_str();
  command->add_option("--master-addr", options->master_addr, "MASTER_ADDR of every process")
      ->capture_default_str();
  command
      ->add_option("--master-port", options->master_port,
                   "MASTER_PORT of every process (default: a free port, new each attempt)")
      ->check(CLI::Range(1, 65535));
  command->add_option("program", options->command, "PROGRAM ARGS (after -- or the options)")
      ->required();
  // Everything from PROGRAM on is the program's, options like its own -n included.
  command->positionals_at_end();
  command->callback([options] { CommandExitCode() = RunLaunch(*options); });
}

}  // namespace vkspmd::cli
