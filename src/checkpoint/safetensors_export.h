// A checkpoint step as one safetensors file of whole (unsharded) tensors, the format the Hugging
// Face ecosystem reads. One tensor is assembled in memory at a time, from its verified shards.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "src/checkpoint/step_reader.h"

namespace vkspmd::checkpoint {

// Tensors in manifest order; the step number and library version go into __metadata__ with
// the user's metadata.
absl::Status ExportSafetensors(const StepReader& reader, const std::string& output_path);

}  // namespace vkspmd::checkpoint
