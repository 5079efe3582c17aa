// The fault counter, read from the environment at each point so a test can change it in-process.
#include "src/checkpoint/fault_injection.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace vkspmd::checkpoint {

absl::Status FaultPoint(absl::string_view name) {
  static std::atomic<int64_t> reached{0};
  const int64_t number = ++reached;
  const char* setting = std::getenv("VKSPMD_CHECKPOINT_FAULT");
  if (setting == nullptr || *setting == '\0') return absl::OkStatus();
  const absl::string_view text(setting);
  if (text == "list") {
    std::fprintf(stderr, "checkpoint fault point %lld: %.*s\n", static_cast<long long>(number),
                 static_cast<int>(name.size()), name.data());
    return absl::OkStatus();
  }
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  int64_t wanted = 0;
  const bool hit = absl::SimpleAtoi(parts[0], &wanted) ? wanted == number : parts[0] == name;
  if (!hit) return absl::OkStatus();
  if (parts.size() > 1 && parts[1] == "error") {
    return absl::DataLossError(
        absl::StrCat("injected I/O error at checkpoint fault point ", number, " (", name, ")"));
  }
  std::fflush(nullptr);
  _exit(kFaultExitCode);
}

}  // namespace vkspmd::checkpoint
