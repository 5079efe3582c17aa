// Writing a staged state as one committed checkpoint step: the shards each device held go into
// that device's file (device_<id>.bin; host data into host.bin), each file fsynced, then the
// manifest with every shard's offset, length and XXH3-64, then the commit (step_directory.h).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "src/checkpoint/snapshot.h"

namespace vkspmd::checkpoint {

// ALREADY_EXISTS, before writing anything, when the step exists. On any error nothing of the
// step is left (its temporary directory is removed) and earlier steps are untouched.
absl::Status WriteStep(const std::string& directory, int64_t step, const Snapshot& snapshot);

}  // namespace vkspmd::checkpoint
