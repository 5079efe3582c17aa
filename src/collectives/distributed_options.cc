// The environment contracts of torchrun and mpirun, mapped onto DistributedOptions.
#include "src/collectives/distributed_options.h"

#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "src/base/environment.h"
#include "src/base/status_macros.h"

#ifndef VKSPMD_COLLECTIVES_VERSION
#define VKSPMD_COLLECTIVES_VERSION "unknown"
#endif

namespace vkspmd::collectives {
namespace {

// An integer variable in [low, high]; unset: nullopt.
absl::StatusOr<std::optional<int>> IntegerVariable(const char* name, int low, int high) {
  std::optional<std::string> value = base::EnvironmentValue(name);
  if (!value) return std::optional<int>();
  int number = 0;
  if (!absl::SimpleAtoi(*value, &number) || number < low || number > high) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "=", *value, " must be an integer from ", low, " to ", high));
  }
  return std::optional<int>(number);
}

absl::StatusOr<std::chrono::milliseconds> Seconds(const char* name,
                                                  std::chrono::milliseconds fallback) {
  VKSPMD_ASSIGN_OR_RETURN(std::optional<double> seconds,
                          base::NumberFromEnvironment(name, 0.001, 1e6, "seconds"));
  if (!seconds) return fallback;
  return std::chrono::milliseconds(static_cast<int64_t>(*seconds * 1000));
}

// Reads one contract's four variables; false when its rank variable is unset.
absl::StatusOr<bool> ReadContract(DistributedOptions& options, const char* rank, const char* size,
                                  const char* local_rank, const char* local_size) {
  constexpr int kMax = 1 << 20;
  VKSPMD_ASSIGN_OR_RETURN(std::optional<int> index, IntegerVariable(rank, 0, kMax));
  VKSPMD_ASSIGN_OR_RETURN(std::optional<int> count, IntegerVariable(size, 1, kMax));
  if (!index && !count) return false;
  if (!index || !count) {
    return absl::InvalidArgumentError(absl::StrCat(index ? size : rank, " is unset while ",
                                                   index ? rank : size,
                                                   " is set: a process of a job needs both"));
  }
  if (*index >= *count) {
    return absl::InvalidArgumentError(
        absl::StrCat(rank, "=", *index, " is not below ", size, "=", *count));
  }
  VKSPMD_ASSIGN_OR_RETURN(std::optional<int> local_index, IntegerVariable(local_rank, 0, kMax));
  VKSPMD_ASSIGN_OR_RETURN(std::optional<int> local_count, IntegerVariable(local_size, 1, kMax));
  options.process_index = *index;
  options.process_count = *count;
  options.local_process_index = local_index.value_or(*index);
  options.local_process_count = local_count.value_or(*count);
  if (options.local_process_index >= options.local_process_count) {
    return absl::InvalidArgumentError(absl::StrCat(local_rank, "=", options.local_process_index,
                                                   " is not below ", local_size, "=",
                                                   options.local_process_count));
  }
  return true;
}

}  // namespace

const char* DistributedVersion() { return VKSPMD_COLLECTIVES_VERSION; }

absl::StatusOr<DistributedOptions> DistributedOptionsFromEnvironment() {
  DistributedOptions options;
  VKSPMD_ASSIGN_OR_RETURN(
      bool torchrun, ReadContract(options, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"));
  bool mpirun = false;
  if (torchrun) {
    options.source = "torchrun variables (RANK, WORLD_SIZE)";
  } else {
    VKSPMD_ASSIGN_OR_RETURN(
        mpirun, ReadContract(options, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                             "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"));
    if (mpirun) options.source = "Open MPI variables (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE)";
  }
  VKSPMD_ASSIGN_OR_RETURN(options.rendezvous_timeout,
                          Seconds("VKSPMD_RENDEZVOUS_TIMEOUT_S", options.rendezvous_timeout));
  VKSPMD_ASSIGN_OR_RETURN(options.collective_timeout,
                          Seconds("VKSPMD_COLLECTIVE_TIMEOUT_S", options.collective_timeout));
  options.hostname = base::EnvironmentValue("VKSPMD_HOSTNAME").value_or("");
  for (const char* name : {"VKSPMD_RUN_ID", "TORCHELASTIC_RUN_ID", "OMPI_MCA_ess_base_jobid"}) {
    if (std::optional<std::string> id = base::EnvironmentValue(name); id && !id->empty()) {
      options.run_id = *id;
      break;
    }
  }
  if (options.process_count == 1) return options;  // Nothing to meet.

  options.store_dir = base::EnvironmentValue("VKSPMD_RENDEZVOUS_DIR").value_or("");
  if (!options.store_dir.empty()) return options;
  std::optional<std::string> address = base::EnvironmentValue("MASTER_ADDR");
  VKSPMD_ASSIGN_OR_RETURN(std::optional<int> port, IntegerVariable("MASTER_PORT", 1, 65535));
  if (address && !address->empty() && port) {
    options.master_addr = *address;
    options.master_port = *port;
    // torchrun's agent holds its own store on MASTER_PORT; vkspmd's takes the next port.
    if (base::EnvironmentValue("TORCHELASTIC_USE_AGENT_STORE").value_or("") == "True") {
      options.master_port = *port + 1;
    }
    VKSPMD_ASSIGN_OR_RETURN(std::optional<int> store_port,
                            IntegerVariable("VKSPMD_STORE_PORT", 1, 65535));
    if (store_port) options.master_port = *store_port;
    return options;
  }
  // mpirun on one host: its job session directory is private to the job and removed after it.
  std::optional<std::string> session = base::EnvironmentValue("OMPI_MCA_orte_jobfam_session_dir");
  if (mpirun && session && options.local_process_count == options.process_count) {
    options.store_dir = absl::StrCat(*session, "/vkspmd-rendezvous");
    return options;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "process ", options.process_index, " of ", options.process_count, " (", options.source,
      ") has no rendezvous: set MASTER_ADDR and MASTER_PORT (process 0 hosts the store there) "
      "or VKSPMD_RENDEZVOUS_DIR (a directory every process shares)"));
}

}  // namespace vkspmd::collectives
