// Restoring tensors from a checkpoint step onto whatever mesh and sharding they have now: each
// device's shard is assembled on the host from the saved shards that overlap it (reshard on
// load; the whole tensor never exists in one place) and uploaded to that device. A tensor
// without a mesh gets the whole value as host data.
#pragma once

#include <vector>

#include "absl/status/status.h"
#include "src/checkpoint/snapshot.h"
#include "src/checkpoint/step_reader.h"

namespace vkspmd::checkpoint {

// Every tensor must be in the step with the same dtype and shape (else an error naming it, and
// no tensor changed). Shards are read and verified before any tensor takes its new value, so a
// corrupt step leaves every tensor as it was. Tensors of the step not asked for are not read.
absl::Status RestoreTensors(const StepReader& reader, const std::vector<NamedTensor>& tensors);

// The whole value of one saved tensor (for export and tests).
absl::StatusOr<ir::Literal> ReadWholeTensor(const StepReader& reader,
                                            const io::ManifestTensor& tensor);

}  // namespace vkspmd::checkpoint
