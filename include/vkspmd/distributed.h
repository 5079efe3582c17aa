// Several processes, one job (as jax.distributed): a global mesh spans the devices of every
// process; each process runs the programs of its own (addressable) devices. See
// docs/distributed.md.
#pragma once

#include <vector>

#include "vkspmd/error.h"

namespace vkspmd::distributed {

// Joins the job that torchrun, mpirun or `vkspmd launch` describes in the environment (RANK,
// WORLD_SIZE, MASTER_ADDR, MASTER_PORT, VKSPMD_RENDEZVOUS_DIR, ...; none: a job of this process
// alone) and waits until every process has arrived. Call it before the first tensor is computed
// and before creating a mesh larger than this process's devices. Idempotent: once it succeeded,
// later calls do nothing. Throws vkspmd::Error: INVALID_ARGUMENT for an inconsistent environment,
// DEADLINE_EXCEEDED naming the processes that did not arrive, FAILED_PRECONDITION after tensors
// were computed.
void initialize();
// Whether initialize() succeeded.
bool is_initialized();

// This process's index in the job (0 without initialize()).
int process_index();
// The processes of the job (1 without initialize()).
int process_count();
// Mesh devices of the whole job: the processes' devices in process order.
int device_count();
// The global mesh device ids this process drives, ascending (its local devices).
std::vector<int> addressable_devices();

}  // namespace vkspmd::distributed
