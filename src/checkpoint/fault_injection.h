// Fault points of the checkpoint protocol, for crash tests. VKSPMD_CHECKPOINT_FAULT=N makes the
// N-th point this process reaches (counting from 1) end the process at once with _exit(86), as
// a SIGKILL or a power cut would; N:error makes it fail with an injected I/O error instead (a
// full or failing disk). VKSPMD_CHECKPOINT_FAULT=list prints each point's number and name to
// stderr as it is reached. Unset, a point costs one counter increment.
#pragma once

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace vkspmd::checkpoint {

// The exit status of a process ended at a fault point.
inline constexpr int kFaultExitCode = 86;

absl::Status FaultPoint(absl::string_view name);

}  // namespace vkspmd::checkpoint
