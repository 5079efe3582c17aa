// The world of a mesh program's collectives: one rank per mesh device, each connected to a
// Communicator. Executors hold a World, never a particular transport, so threads of one process
// (InProcessWorld) and, later, other processes or hosts plug in alike.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/collectives/communicator.h"

namespace vkspmd::collectives {

class World {
 public:
  virtual ~World() = default;

  // Ranks in the world (every process's, not only this one's).
  virtual int size() const = 0;
  // The ranks this process drives, ascending: its k-th local device is rank local_ranks()[k].
  virtual std::vector<int> local_ranks() const = 0;

  // The communicator of local rank `rank`. A rank's calls must come from one thread at a time;
  // different ranks' calls may come from different threads.
  virtual absl::StatusOr<std::unique_ptr<Communicator>> Connect(int rank) = 0;

  // Fails every collective waiting now or called later with `status` (one device of a program
  // failed, so its peers need not wait out the timeout), until Reset.
  virtual void Abort(const absl::Status& status) = 0;
  // Clears an abort and forgets every rank's collective count (after a failure ranks may have
  // passed different numbers of collectives). Only while no collective is in flight.
  virtual void Reset() = 0;
};

}  // namespace vkspmd::collectives
