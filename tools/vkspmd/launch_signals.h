// `vkspmd launch`'s signal handling: SIGINT, SIGTERM and SIGCHLD become bytes on a self-pipe that
// the launcher's poll loop reads, so no work is done inside a signal handler; and signal names.
#pragma once

#include <signal.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace vkspmd::cli {

class SignalPipe {
 public:
  // Installs the handlers (SIGPIPE is ignored, so writing to a closed stdout is an error, not a
  // death). One at a time per process.
  static absl::StatusOr<std::unique_ptr<SignalPipe>> Install();
  // Restores the handlers that were there before.
  ~SignalPipe();
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;

  // Readable when a signal has arrived.
  int read_fd() const { return read_fd_; }
  // The signals that arrived since the last call, in order (never blocks).
  std::vector<int> Take();

  // The signals whose dispositions Install changes; a child resets them to the default.
  static constexpr std::array<int, 4> kHandled = {SIGINT, SIGTERM, SIGCHLD, SIGPIPE};

 private:
  SignalPipe(int read_fd, int write_fd) : read_fd_(read_fd), write_fd_(write_fd) {}

  int read_fd_;
  int write_fd_;
  std::array<struct sigaction, kHandled.size()> previous_{};
};

// "SIGTERM" for the common signals, else "signal 40".
std::string SignalName(int signal_number);

}  // namespace vkspmd::cli
