// Where this process stands among the processes of one job, and how they meet: read from the
// environment that torchrun (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT), Open MPI's mpirun (OMPI_COMM_WORLD_*) or vkspmd's own launcher set.
#pragma once

#include <chrono>
#include <string>

#include "absl/status/statusor.h"

namespace vkspmd::collectives {

// The version every process of a job must agree on (the library's), checked at rendezvous.
const char* DistributedVersion();

struct DistributedOptions {
  int process_index = 0;
  int process_count = 1;
  int local_process_index = 0;  // Among this host's processes.
  int local_process_count = 1;
  // A directory every process sees (Gloo's FileStore) when set; else the TCP store that process
  // 0 hosts at master_addr:master_port.
  std::string store_dir;
  std::string master_addr;
  int master_port = 0;
  // Prefixes every rendezvous key, so a store directory may serve several runs.
  std::string run_id;
  std::chrono::milliseconds rendezvous_timeout = std::chrono::seconds(300);
  // Bounds every cross-process step of a collective.
  std::chrono::milliseconds collective_timeout = std::chrono::seconds(60);
  // The address peers reach this process at; empty: 127.0.0.1 when MASTER_ADDR is a loopback
  // address or a store directory is used on one host, else this host's name.
  std::string hostname;
  std::string version = DistributedVersion();
  // Which variables the options came from ("torchrun variables", ...), for messages.
  std::string source = "defaults";
};

// RANK and WORLD_SIZE (torchrun, vkspmd launch) or OMPI_COMM_WORLD_RANK and _SIZE (mpirun); none:
// one process. The rendezvous is VKSPMD_RENDEZVOUS_DIR when set, else MASTER_ADDR and
// MASTER_PORT (the store listens on VKSPMD_STORE_PORT if set, else MASTER_PORT, or MASTER_PORT + 1
// under torchrun, whose agent holds MASTER_PORT); under mpirun on one host without either, a
// directory in mpirun's job session directory. VKSPMD_RENDEZVOUS_TIMEOUT_S,
// VKSPMD_COLLECTIVE_TIMEOUT_S, VKSPMD_RUN_ID (else TORCHELASTIC_RUN_ID or mpirun's job id) and
// VKSPMD_HOSTNAME refine them. INVALID_ARGUMENT naming the variable for anything inconsistent.
absl::StatusOr<DistributedOptions> DistributedOptionsFromEnvironment();

}  // namespace vkspmd::collectives
