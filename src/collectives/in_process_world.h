// Collectives between threads of one process sharing host memory: the default transport when one
// process drives every mesh device. Each rank's thread reads its peers' buffers directly, so every
// input is read once and every output written once (no staging copies between ranks).
//
// A collective meets its group at a rendezvous: the first arrival opens it, the last closes it to
// later calls, every participant's request is checked against the others' before any data moves
// (kind, element type, reduction, sizes), and each participant then computes a disjoint part of
// the results (for all-reduce, a slice of the elements, combined in group order, so every rank's
// output is bitwise identical). A participant that waits longer than the timeout fails the
// rendezvous for everyone with DEADLINE_EXCEEDED naming the missing ranks; the next collective
// opens a fresh rendezvous, so the world stays usable.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/collectives/communicator.h"

namespace vkspmd::collectives {

class InProcessWorld : public std::enable_shared_from_this<InProcessWorld> {
 public:
  // `timeout` bounds how long a participant waits for the rest of its group; without one,
  // VKSPMD_COLLECTIVE_TIMEOUT_S (seconds, default 60) is read.
  static absl::StatusOr<std::shared_ptr<InProcessWorld>> Create(
      int world_size, std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  // The communicator of `rank` (0 <= rank < world_size). A rank's calls must come from one
  // thread at a time; different ranks' calls come from different threads.
  absl::StatusOr<std::unique_ptr<Communicator>> Connect(int rank);

  // Fails every collective waiting now or called later with `status` (e.g. one device of a
  // program failed, so its peers need not wait out the timeout), until Reset.
  void Abort(const absl::Status& status);
  // Clears an abort and forgets every rank's collective count (after a failure ranks may have
  // passed different numbers of collectives). Only while no collective is in flight.
  void Reset();

  int world_size() const { return world_size_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  enum class Kind { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kPermute, kBroadcast };
  // One participant's request.
  struct Call {
    Kind kind = Kind::kAllReduce;
    int rank = 0;
    ElementType type = ElementType::kF32;
    ReduceOp op = ReduceOp::kSum;
    int root = 0;
    std::span<const std::byte> input;
    std::span<std::byte> output;
    std::vector<int> members;                // The caller's group, in position order.
    int position = 0;                        // The caller's index in `members`.
    std::vector<std::pair<int, int>> pairs;  // kPermute.
  };
  // Meets the caller's group and runs the collective (used by the communicators).
  absl::Status Run(const Call& call);

 private:
  struct Rendezvous {
    std::vector<int> members;
    uint64_t sequence = 0;
    std::vector<const Call*> calls;  // By position; the callers' stack frames outlive the use.
    int arrived = 0;
    int finished = 0;
    bool complete = false;  // Everyone arrived.
    absl::Status status;    // Validation or timeout failure, the same for every participant.
  };

  InProcessWorld(int world_size, std::chrono::milliseconds timeout)
      : world_size_(world_size), timeout_(timeout) {}
  absl::Status Validate(const Rendezvous& rendezvous) const;
  // Computes this participant's share; returns after the group finished reading (see .cc).
  void Execute(Rendezvous& rendezvous, int position, std::unique_lock<std::mutex>& lock);

  const int world_size_;
  const std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable changed_;
  // Open rendezvous by group and sequence number: each rank numbers its collectives per group,
  // so a late rank meets the collective it is late for, never a later one.
  std::map<std::string, std::shared_ptr<Rendezvous>> open_;
  std::map<std::pair<int, std::string>, uint64_t> sequences_;  // (rank, group) -> calls so far.
  std::map<std::string, absl::Status> failed_;  // Failed rendezvous, for their late arrivals.
  absl::Status aborted_;
};

// The collective's name as XLA spells it ("all-reduce", ...).
const char* KindName(InProcessWorld::Kind kind);

}  // namespace vkspmd::collectives
