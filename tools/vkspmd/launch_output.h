// `vkspmd launch`: copies one child's stdout or stderr to the launcher's own, each line prefixed
// with the rank ("[rank 1] "), so that the lines of several processes interleave whole.
#pragma once

#include <string>
#include <utility>

#include "absl/strings/string_view.h"

namespace vkspmd::cli {

class PrefixedLineWriter {
 public:
  PrefixedLineWriter(std::string prefix, int output_fd)
      : prefix_(std::move(prefix)), output_fd_(output_fd) {}

  // Writes every line `bytes` completes; keeps the rest for the next call.
  void Append(absl::string_view bytes);
  // Writes a partial last line (ended with a newline, so the next prefix starts a line).
  void Flush();

  // A line longer than this is written in pieces of this size, each a line of its own.
  static constexpr size_t kMaxLine = 64 * 1024;

 private:
  // prefix + line + '\n' in one write(2), so a line from another rank never splits it.
  void WriteLine(absl::string_view line);

  std::string prefix_;
  int output_fd_;
  std::string pending_;
};

}  // namespace vkspmd::cli
