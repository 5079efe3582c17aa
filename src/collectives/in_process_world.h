// The transport between threads of one process sharing host memory: the default World when one
// process drives every mesh device. Ranks' buffers are read and written in place, so the
// algorithms (host_communicator.h) move every byte once, with no staging copies between ranks.
//
// A collective meets its group at a rendezvous: the first arrival opens it, the last closes it to
// later calls and checks every member's request before any data moves. A participant that waits
// longer than the timeout fails the rendezvous for everyone with ABORTED (a peer's failure, not
// this rank's) naming the missing ranks; the next collective opens a fresh rendezvous, so the
// world stays usable.
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
#include "src/collectives/transport.h"
#include "src/collectives/world.h"

namespace vkspmd::collectives {

class InProcessWorld : public World,
                       public Transport,
                       public std::enable_shared_from_this<InProcessWorld> {
 public:
  // `timeout` bounds how long a participant waits for the rest of its group; without one,
  // VKSPMD_COLLECTIVE_TIMEOUT_S (seconds, default 60) is read.
  static absl::StatusOr<std::shared_ptr<InProcessWorld>> Create(
      int world_size, std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  int size() const override { return world_size_; }
  std::vector<int> local_ranks() const override;  // Every rank.
  absl::StatusOr<std::unique_ptr<Communicator>> Connect(int rank) override;
  void Abort(const absl::Status& status) override;
  void Reset() override;

  int world_size() const override { return world_size_; }
  absl::StatusOr<std::unique_ptr<Meeting>> Meet(const Request& request,
                                                const Check& check) override;

  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  class SharedMemoryMeeting;
  struct Rendezvous {
    uint64_t sequence = 0;
    std::vector<const Request*> requests;  // By position; the callers' frames outlive the use.
    int arrived = 0;
    int finished = 0;
    bool complete = false;  // Everyone arrived.
    absl::Status status;    // Check or timeout failure, the same for every participant.
  };

  InProcessWorld(int world_size, std::chrono::milliseconds timeout)
      : world_size_(world_size), timeout_(timeout) {}
  // Waits until the group's every member has finished moving bytes.
  void Finish(Rendezvous& rendezvous);

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

}  // namespace vkspmd::collectives
