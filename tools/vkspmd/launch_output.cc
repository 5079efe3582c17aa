// `vkspmd launch`: rank-prefixed copies of the children's output lines.
#include "tools/vkspmd/launch_output.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace vkspmd::cli {

void PrefixedLineWriter::Append(absl::string_view bytes) {
  pending_.append(bytes.data(), bytes.size());
  size_t start = 0;
  for (;;) {
    const size_t end = pending_.find('\n', start);
    if (end == std::string::npos) break;
    WriteLine(absl::string_view(pending_).substr(start, end - start));
    start = end + 1;
  }
  // A process that never ends its line must not grow the launcher without bound.
  while (pending_.size() - start >= kMaxLine) {
    WriteLine(absl::string_view(pending_).substr(start, kMaxLine));
    start += kMaxLine;
  }
  pending_.erase(0, start);
}

void PrefixedLineWriter::Flush() {
  if (pending_.empty()) return;
  WriteLine(pending_);
  pending_.clear();
}

void PrefixedLineWriter::WriteLine(absl::string_view line) {
  std::string text;
  text.reserve(prefix_.size() + line.size() + 1);
  text.append(prefix_).append(line.data(), line.size()).push_back('\n');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t count = write(output_fd_, text.data() + done, text.size() - done);
    if (count > 0) {
      done += static_cast<size_t>(count);
    } else if (count < 0 && errno == EINTR) {
      continue;
    } else if (count < 0 && errno == EAGAIN) {
      // The launcher's own output was left non-blocking by whoever started it: wait for room.
      struct pollfd output = {output_fd_, POLLOUT, 0};
      poll(&output, 1, -1);
    } else {
      // The reader went away (EPIPE: SIGPIPE is ignored) or the output is broken: the children
      // keep running, their output is dropped.
      return;
    }
  }
}

}  // namespace vkspmd::cli
