// How the processes of a job meet before any collective: each announces itself in the store
// (version, process count, device count, host), every announcement is checked before anything
// else happens, then Gloo connects a TCP pair between every two processes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gloo/context.h"
#include "src/collectives/distributed_options.h"
#include "src/collectives/tcp_store.h"

namespace vkspmd::collectives {

struct ProcessGroup {
  // Gloo's pairs to every other process; null for a job of one process.
  std::shared_ptr<gloo::Context> context;
  std::vector<int> device_counts;  // By process index.
  std::vector<std::string> hosts;  // By process index, as each announced itself.
  // Process 0's store server, kept while the job runs (peers may still be reading it).
  std::unique_ptr<TcpStoreServer> server;
};

// Meets every process of `options` through its store. A process missing at the rendezvous
// timeout fails every other with DEADLINE_EXCEEDED naming the missing process indices; processes
// that disagree on the version or the process count fail with FAILED_PRECONDITION naming both.
absl::StatusOr<ProcessGroup> MeetProcesses(const DistributedOptions& options, int local_devices);

}  // namespace vkspmd::collectives
