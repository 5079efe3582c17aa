// This process's place in a job of several processes (vkspmd::distributed): the GlooWorld every
// mesh program's collectives go through, and which of the job's global mesh devices are local.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "src/collectives/gloo_world.h"

namespace vkspmd::lazy {

struct DistributedState {
  std::shared_ptr<collectives::GlooWorld> world;
  int process_index = 0;
  int process_count = 1;
  // Global mesh devices are the processes' local devices in process order.
  int64_t first_device = 0;    // This process's first global device.
  int64_t local_devices = 0;   // How many it drives.
  int64_t global_devices = 0;  // In the whole job.

  bool IsLocal(int64_t global) const {
    return global >= first_device && global < first_device + local_devices;
  }
};

// Joins the job the environment describes (torchrun, mpirun or `vkspmd launch` variables; see
// collectives/distributed_options.h), driving VKSPMD_DEVICES (else every usable) local devices.
// Idempotent: once it succeeded, later calls return its result (a failure may be retried). With one
// process nothing is joined and Distributed() stays null. FAILED_PRECONDITION when tensors already
// live on the devices.
absl::StatusOr<DistributedState> InitializeDistributed();
// The job joined, or null: one process (before initialization, or a job of one).
const DistributedState* Distributed();

}  // namespace vkspmd::lazy
