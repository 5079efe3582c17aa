// `vkspmd launch`'s signal self-pipe and signal names.
#include "tools/vkspmd/launch_signals.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace vkspmd::cli {
namespace {

// Where the handler writes; a plain int is all a handler may touch.
volatile sig_atomic_t signal_write_fd = -1;

void OnSignal(int signal_number) {
  const int saved_errno = errno;
  const unsigned char byte = static_cast<unsigned char>(signal_number);
  // A full pipe drops the byte: the loop is already awake with at least one pending, and SIGCHLD
  // makes it poll every child anyway.
  [[maybe_unused]] ssize_t written = write(signal_write_fd, &byte, 1);
  errno = saved_errno;
}

bool SetFlags(int fd) {
  return fcntl(fd, F_SETFD, FD_CLOEXEC) == 0 &&
         fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SignalPipe>> SignalPipe::Install() {
  if (signal_write_fd != -1) return absl::InternalError("vkspmd launch: signal pipe in use");
  int fds[2];
  if (pipe(fds) != 0 || !SetFlags(fds[0]) || !SetFlags(fds[1])) {
    return absl::InternalError(absl::StrCat("signal pipe: ", std::strerror(errno)));
  }
  std::unique_ptr<SignalPipe> pipe_owner(new SignalPipe(fds[0], fds[1]));
  signal_write_fd = fds[1];
  for (size_t i = 0; i < kHandled.size(); ++i) {
    struct sigaction action {};
    action.sa_handler = kHandled[i] == SIGPIPE ? SIG_IGN : OnSignal;
    sigemptyset(&action.sa_mask);
    // SIGCHLD only for exits, not for children that stop.
    action.sa_flags = SA_RESTART | (kHandled[i] == SIGCHLD ? SA_NOCLDSTOP : 0);
    sigaction(kHandled[i], &action, &pipe_owner->previous_[i]);
  }
  return pipe_owner;
}

SignalPipe::~SignalPipe() {
  for (size_t i = 0; i < kHandled.size(); ++i) sigaction(kHandled[i], &previous_[i], nullptr);
  signal_write_fd = -1;
  close(read_fd_);
  close(write_fd_);
}

std::vector<int> SignalPipe::Take() {
  std::vector<int> signals;
  unsigned char buffer[64];
  ssize_t count;
  while ((count = read(read_fd_, buffer, sizeof(buffer))) > 0 || (count < 0 && errno == EINTR)) {
    for (ssize_t i = 0; i < count; ++i) signals.push_back(buffer[i]);
  }
  return signals;
}

std::string SignalName(int signal_number) {
  switch (signal_number) {
    case SIGHUP:
      return "SIGHUP";
    case SIGINT:
      return "SIGINT";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGILL:
      return "SIGILL";
    case SIGTRAP:
      return "SIGTRAP";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGKILL:
      return "SIGKILL";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGUSR2:
      return "SIGUSR2";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGALRM:
      return "SIGALRM";
    case SIGTERM:
      return "SIGTERM";
    case SIGXCPU:
      return "SIGXCPU";
    case SIGXFSZ:
      return "SIGXFSZ";
    default:
      return absl::StrCat("signal ", signal_number);
  }
}

}  // namespace vkspmd::cli
