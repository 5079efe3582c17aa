// `vkspmd launch`'s process group: fork/exec of each rank (its own process group, stdin from
// /dev/null, stdout and stderr through pipes), one poll loop for output, signals and exits.
#include "tools/vkspmd/launch_group.h"

#include <fcntl.h>
#include <poll.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "tools/vkspmd/launch_output.h"

namespace vkspmd::cli {
namespace {

using Clock = std::chrono::steady_clock;

bool MakePipe(int fds[2]) {
  return pipe(fds) == 0 && fcntl(fds[0], F_SETFD, FD_CLOEXEC) == 0 &&
         fcntl(fds[1], F_SETFD, FD_CLOEXEC) == 0;
}

void CloseFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

struct Child {
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
  int output_fds[2] = {-1, -1};  // read ends of the rank's stdout and stderr
  std::unique_ptr<PrefixedLineWriter> writers[2];
};

// Runs in the forked child: only async-signal-safe calls until exec. Exec failure is reported as
// errno on `exec_status` (close-on-exec, so a successful exec closes it with nothing written).
[[noreturn]] void ExecChild(char* const* argv, char* const* envp, int stdin_fd, int stdout_fd,
                            int stderr_fd, int exec_status, [[maybe_unused]] pid_t launcher) {
#ifdef __linux__
  // A launcher killed outright (SIGKILL: no chance to stop its ranks) takes its ranks with it
  // rather than leaving them holding ports and devices. Linux only; elsewhere they stay.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != launcher) _exit(127);
#endif
  // Its own process group: a signal from the launcher reaches the rank's children too, and a
  // terminal's Ctrl-C reaches it only through the launcher (once, not twice).
  setpgid(0, 0);
  dup2(stdin_fd, STDIN_FILENO);
  dup2(stdout_fd, STDOUT_FILENO);
  dup2(stderr_fd, STDERR_FILENO);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (int signal_number : SignalPipe::kHandled) sigaction(signal_number, &default_action, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  environ = const_cast<char**>(envp);
  execvp(argv[0], argv);
  const int error = errno;
  [[maybe_unused]] ssize_t written = write(exec_status, &error, sizeof(error));
  _exit(127);
}

absl::Status ExecError(const std::string& program, int error) {
  const bool searched = error == ENOENT && program.find('/') == std::string::npos;
  const std::string message = absl::StrCat("cannot execute '", program, "': ", std::strerror(error),
                                           searched ? " (searched PATH)" : "");
  return error == ENOENT ? absl::NotFoundError(message) : absl::PermissionDeniedError(message);
}

std::vector<char*> PointerArray(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& text : strings) pointers.push_back(text.data());
  pointers.push_back(nullptr);
  return pointers;
}

class ProcessGroup {
 public:
  ProcessGroup(const LaunchSpec& spec, SignalPipe& signals)
      : spec_(spec), signals_(signals), null_fd_(open("/dev/null", O_RDONLY | O_CLOEXEC)) {}
  ~ProcessGroup() {
    for (Child& child : children_) {
      CloseFd(child.output_fds[0]);
      CloseFd(child.output_fds[1]);
    }
    CloseFd(null_fd_);
  }

  absl::Status Start(int rank);
  // Handles pending signals and exits without waiting.
  void Check() {
    HandleSignals();
    Reap();
  }
  // Until every started rank has ended.
  void Supervise();
  // Sends `signal_number` to every rank, SIGKILL after the grace period.
  void BeginStop(int signal_number);
  bool stopping() const { return stop_deadline_.has_value(); }
  int RunningCount() const;

  GroupOutcome outcome;

 private:
  void HandleSignals();
  void Reap();
  // Reads what one pipe holds now, at most `max_reads` buffers; closes it at end of file.
  void ReadOutput(Child& child, int stream, int max_reads);
  void Drain(Child& child);
  void SignalAll(int signal_number);
  std::string RunningRanks() const;

  const LaunchSpec& spec_;
  SignalPipe& signals_;
  int null_fd_;
  std::vector<Child> children_;
  std::optional<Clock::time_point> stop_deadline_;
  bool killed_ = false;
};

absl::Status ProcessGroup::Start(int rank) {
  int out[2], err[2], exec_status[2];
  if (null_fd_ < 0 || !MakePipe(out) || !MakePipe(err) || !MakePipe(exec_status)) {
    return absl::InternalError(absl::StrCat("starting rank ", rank, ": ", std::strerror(errno)));
  }
  std::vector<std::string> arguments = spec_.command;
  std::vector<std::string> environment = RankEnvironment(spec_, rank, environ);
  const std::vector<char*> argv = PointerArray(arguments);
  const std::vector<char*> envp = PointerArray(environment);
  const pid_t launcher = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    ExecChild(argv.data(), envp.data(), null_fd_, out[1], err[1], exec_status[1], launcher);
  }
  const int fork_error = errno;
  close(out[1]);
  close(err[1]);
  close(exec_status[1]);
  if (pid < 0) {
    for (int fd : {out[0], err[0], exec_status[0]}) close(fd);
    return absl::ResourceExhaustedError(
        absl::StrCat("starting rank ", rank, ": fork: ", std::strerror(fork_error)));
  }
  setpgid(pid, pid);  // also here: a signal sent before the child ran must find the group
  int child_error = 0;
  ssize_t count;
  do {
    count = read(exec_status[0], &child_error, sizeof(child_error));
  } while (count < 0 && errno == EINTR);
  close(exec_status[0]);
  if (count == static_cast<ssize_t>(sizeof(child_error))) {
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    close(out[0]);
    close(err[0]);
    return ExecError(spec_.command[0], child_error);
  }
  Child& child = children_.emplace_back();
  child.rank = rank;
  child.pid = pid;
  child.running = true;
  child.output_fds[0] = out[0];
  child.output_fds[1] = err[0];
  for (int stream = 0; stream < 2; ++stream) {
    fcntl(child.output_fds[stream], F_SETFL, O_NONBLOCK);
    child.writers[stream] =
        std::make_unique<PrefixedLineWriter>(fmt::format("[rank {}] ", rank), stream + 1);
  }
  return absl::OkStatus();
}

int ProcessGroup::RunningCount() const {
  int count = 0;
  for (const Child& child : children_) count += child.running ? 1 : 0;
  return count;
}

std::string ProcessGroup::RunningRanks() const {
  std::vector<int> ranks;
  for (const Child& child : children_) {
    if (child.running) ranks.push_back(child.rank);
  }
  return absl::StrCat(ranks.size() == 1 ? "rank " : "ranks ", absl::StrJoin(ranks, ", "));
}

void ProcessGroup::SignalAll(int signal_number) {
  // Every started rank's process group, ended ranks too: what they started may still run.
  for (const Child& child : children_) kill(-child.pid, signal_number);
}

void ProcessGroup::BeginStop(int signal_number) {
  if (!stop_deadline_) stop_deadline_ = Clock::now() + spec_.grace_period;
  SignalAll(signal_number);
}

void ProcessGroup::HandleSignals() {
  for (int signal_number : signals_.Take()) {
    if (signal_number != SIGINT && signal_number != SIGTERM) continue;  // SIGCHLD: Reap runs
    if (outcome.interrupt_signal == 0) outcome.interrupt_signal = signal_number;
    if (stopping()) {
      // A second signal while stopping: no more waiting.
      fmt::print(stderr, "vkspmd launch: {} again: SIGKILL to {}\n", SignalName(signal_number),
                 RunningRanks());
      SignalAll(SIGKILL);
      killed_ = true;
      continue;
    }
    fmt::print(stderr, "vkspmd launch: {}: forwarded to {} (SIGKILL after {} ms)\n",
               SignalName(signal_number), RunningRanks(), spec_.grace_period.count());
    BeginStop(signal_number);
  }
}

void ProcessGroup::ReadOutput(Child& child, int stream, int max_reads) {
  char buffer[64 * 1024];
  int& fd = child.output_fds[stream];
  for (int reads = 0; fd >= 0 && reads < max_reads;) {
    const ssize_t count = read(fd, buffer, sizeof(buffer));
    if (count > 0) {
      child.writers[stream]->Append(absl::string_view(buffer, static_cast<size_t>(count)));
      ++reads;
    } else if (count < 0 && errno == EINTR) {
      continue;
    } else {
      if (count == 0 || errno != EAGAIN) {
        child.writers[stream]->Flush();
        CloseFd(fd);
      }
      return;
    }
  }
}

void ProcessGroup::Drain(Child& child) {
  // Bounded (4 MiB): a grandchild that keeps writing must not keep the launcher here.
  for (int stream = 0; stream < 2; ++stream) {
    ReadOutput(child, stream, 64);
    child.writers[stream]->Flush();
  }
}

void ProcessGroup::Reap() {
  for (Child& child : children_) {
    if (!child.running) continue;
    int status = 0;
    const pid_t result = waitpid(child.pid, &status, WNOHANG);
    if (result != child.pid) continue;
    child.running = false;
    // The rank's last lines come before the launcher's word on how it ended.
    Drain(child);
    const RankEnd end{child.rank, status};
    outcome.ends.push_back(end);
    if (!end.failed() || outcome.first_failure) continue;
    outcome.first_failure = end;
    // Stopping already (an interrupt): this failure is its echo. Nothing left to stop: the
    // report at the end says it.
    if (stopping() || RunningCount() == 0) continue;
    fmt::print(stderr,
               "vkspmd launch: rank {} failed first ({}); stopping {} (SIGTERM, SIGKILL after {} "
               "ms)\n",
               end.rank, end.Describe(), RunningRanks(), spec_.grace_period.count());
    BeginStop(SIGTERM);
  }
}

void ProcessGroup::Supervise() {
  while (RunningCount() > 0) {
    std::vector<pollfd> fds = {{signals_.read_fd(), POLLIN, 0}};
    std::vector<std::pair<Child*, int>> sources = {{nullptr, 0}};
    for (Child& child : children_) {
      for (int stream = 0; stream < 2; ++stream) {
        if (child.output_fds[stream] < 0) continue;
        fds.push_back({child.output_fds[stream], POLLIN, 0});
        sources.emplace_back(&child, stream);
      }
    }
    int timeout_ms = -1;
    if (stop_deadline_ && !killed_) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(*stop_deadline_ - Clock::now());
      timeout_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
    }
    if (poll(fds.data(), fds.size(), timeout_ms) > 0) {
      for (size_t i = 1; i < fds.size(); ++i) {
        // One buffer per pipe and round, so one chatty rank cannot starve the others.
        if (fds[i].revents != 0) ReadOutput(*sources[i].first, sources[i].second, 1);
      }
    }
    Check();
    if (stop_deadline_ && !killed_ && Clock::now() >= *stop_deadline_ && RunningCount() > 0) {
      fmt::print(stderr, "vkspmd launch: {} still running {} ms after the stop signal: SIGKILL\n",
                 RunningRanks(), spec_.grace_period.count());
      SignalAll(SIGKILL);
      killed_ = true;
    }
  }
  // What a stopped rank started must not outlive the attempt (a restart would meet it).
  if (stopping()) SignalAll(SIGKILL);
}

}  // namespace

bool RankEnd::failed() const { return !WIFEXITED(status) || WEXITSTATUS(status) != 0; }

int RankEnd::exit_code() const {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::string RankEnd::Describe() const {
  if (WIFEXITED(status)) return absl::StrCat("exit code ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return absl::StrCat("killed by ", SignalName(WTERMSIG(status)));
  return absl::StrCat("wait status ", status);
}

int GroupOutcome::exit_code() const {
  if (first_failure) return first_failure->exit_code();
  return interrupt_signal != 0 ? 128 + interrupt_signal : 0;
}

std::vector<std::string> RankEnvironment(const LaunchSpec& spec, int rank, char** base) {
  std::vector<std::pair<std::string, std::string>> variables = {
      {"RANK", absl::StrCat(rank)},
      {"WORLD_SIZE", absl::StrCat(spec.process_count)},
      {"LOCAL_RANK", absl::StrCat(rank)},
      {"LOCAL_WORLD_SIZE", absl::StrCat(spec.process_count)},
      {"MASTER_ADDR", spec.master_addr},
      {"MASTER_PORT", absl::StrCat(spec.master_port)},
      {"VKSPMD_RESTART_COUNT", absl::StrCat(spec.restart_count)},
      {"VKSPMD_MAX_RESTARTS", absl::StrCat(spec.max_restarts)},
  };
  if (spec.devices_per_process) {
    variables.emplace_back("VKSPMD_DEVICES", absl::StrCat(*spec.devices_per_process));
  }
  std::vector<std::string> environment;
  for (char** entry = base; entry != nullptr && *entry != nullptr; ++entry) {
    const absl::string_view text(*entry);
    const absl::string_view name = text.substr(0, text.find('='));
    bool replaced = false;
    for (const auto& variable : variables) replaced |= name == variable.first;
    if (!replaced) environment.emplace_back(text);
  }
  for (const auto& [name, value] : variables) environment.push_back(absl::StrCat(name, "=", value));
  return environment;
}

absl::StatusOr<GroupOutcome> RunProcessGroup(const LaunchSpec& spec, SignalPipe& signals) {
  ProcessGroup group(spec, signals);
  absl::Status started = absl::OkStatus();
  for (int rank = 0; rank < spec.process_count && started.ok(); ++rank) {
    started = group.Start(rank);
    // A rank that already failed, or an interrupt, ends the attempt before more ranks start.
    group.Check();
    if (group.stopping()) break;
  }
  if (!started.ok() && group.RunningCount() > 0) group.BeginStop(SIGTERM);
  group.Supervise();
  if (!started.ok()) return started;
  return std::move(group.outcome);
}

}  // namespace vkspmd::cli
