// The World of a mesh whose devices live in several processes (on one host or several): global
// mesh ranks are the processes' devices in process order, each process drives its own. A
// collective meets this process's ranks first (threads sharing memory), then one of them
// exchanges with the other processes over Gloo's TCP pairs: first every rank's request, checked
// on every process alike before any data moves, then the data; results equal the single-process
// world's bit for bit.
//
// A peer that dies or stays silent fails the collective with ABORTED naming it within the
// collective timeout. After any failure other than requests that disagree, the processes no
// longer agree on where they are, so every later collective fails with the same error.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/collectives/distributed_options.h"
#include "src/collectives/process_rendezvous.h"
#include "src/collectives/request.h"
#include "src/collectives/world.h"

namespace vkspmd::collectives {

class GlooWorld : public World, public std::enable_shared_from_this<GlooWorld> {
 public:
  // Meets the other processes of `options` (process_rendezvous.h); this process drives
  // `local_devices` ranks. With other processes, SIGPIPE is ignored from then on if it had its
  // default action (a write to a dead peer fails the collective instead of ending the process).
  static absl::StatusOr<std::shared_ptr<GlooWorld>> Create(const DistributedOptions& options,
                                                           int local_devices);

  int size() const override { return static_cast<int>(owner_.size()); }
  std::vector<int> local_ranks() const override;
  absl::StatusOr<std::unique_ptr<Communicator>> Connect(int rank) override;
  // Fails local ranks waiting for the rest of this process's ranks, and later calls; a round
  // already exchanging with other processes finishes or fails on its own (within the timeout).
  void Abort(const absl::Status& status) override;
  // Clears an abort unless the processes fell out of step (then the world stays failed).
  void Reset() override;

  int process_index() const { return self_; }
  int process_count() const { return static_cast<int>(first_rank_.size()); }
  // The process that drives global rank `rank`.
  int ProcessOf(int rank) const { return owner_[rank]; }
  // Gloo's pairs to the other processes (null for one process): for measuring Gloo's own
  // algorithms on the same connections, between collectives, never during one.
  gloo::Context* gloo_context() const { return group_.context.get(); }

  // One local rank's collective (the communicators' entry point): `request` has joined its group
  // of `groups` (empty: all ranks; permute: ignored).
  absl::Status Run(const Request& request, const ReplicaGroups& groups);

 private:
  struct Round {
    std::vector<const Request*> requests;  // By local index; callers' frames outlive the round.
    std::vector<const ReplicaGroups*> groups;
    int arrived = 0;
    bool done = false;
    absl::Status status;
  };

  GlooWorld(DistributedOptions options, ProcessGroup group);
  // The cross-process part of round `sequence`, by the last local rank to arrive.
  absl::Status Drive(const Round& round, uint64_t sequence);
  // Whether every group lies inside one process; `own` gets this process's groups.
  bool InsideProcesses(const ReplicaGroups& groups, std::vector<std::vector<int>>& own) const;
  // Every rank's request, exchanged and checked; `all` gets them by rank. Groups inside
  // processes exchange nothing: `partition` is then this process's groups only.
  absl::Status ExchangeRequests(const Round& round, uint64_t sequence, std::vector<Request>& all,
                                std::vector<std::vector<int>>& partition);
  std::string DescribeProcess(int process) const;

  const DistributedOptions options_;
  ProcessGroup group_;
  const int self_;
  std::vector<int> owner_;       // Process of each global rank.
  std::vector<int> first_rank_;  // First global rank of each process.

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<uint64_t> calls_;  // By local index: collectives called so far.
  std::map<uint64_t, std::shared_ptr<Round>> rounds_;
  absl::Status aborted_;
  absl::Status broken_;  // Set once the processes may be out of step.
  // Received bytes and folded slices, kept from round to round (only the driving rank uses
  // them, one round at a time) so that large collectives do not fault fresh pages in each time.
  std::vector<std::byte> received_, folded_, shared_;
};

// The world the environment describes (distributed_options.h), driving `local_devices` ranks.
absl::StatusOr<std::shared_ptr<GlooWorld>> GlooWorldFromEnvironment(int local_devices);

}  // namespace vkspmd::collectives
