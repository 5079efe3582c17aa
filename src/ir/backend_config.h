// Reads the two things vkspmd takes from XLA's backend_config: a while loop's known trip count
// ({"known_trip_count":{"n":"5"}}), which lets the device compiler unroll the loop, and a
// Sharding custom-call's unspecified_dims, which propagation may still shard.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/text_reader.h"

namespace vkspmd::ir {

// Reads a backend_config value at the reader's position (bare JSON as XLA prints it today, or a
// quoted string as older dumps have it) and returns its known_trip_count's n, if it has one.
// Other keys are skipped; a known_trip_count that is not {"n":"K"} with K >= 0 is an error.
absl::StatusOr<std::optional<int64_t>> ReadKnownTripCount(TextReader& reader);

// The backend_config value the printer writes for a while with a known trip count.
std::string KnownTripCountConfig(int64_t trip_count);

// Reads a custom-call's backend_config value: "unspecified_dims=[0,1]" (XLA's
// sharding_op_util::ParseAttributes form, which JAX writes on Sharding custom-calls) gives those
// dims, sorted; any other value (JSON of other targets, an empty string) gives none. Dims must be
// distinct and within `rank`.
absl::StatusOr<std::vector<int64_t>> ReadUnspecifiedDims(TextReader& reader, int64_t rank);

// The backend_config value the printer writes for `dims` (non-empty).
std::string UnspecifiedDimsConfig(const std::vector<int64_t>& dims);

}  // namespace vkspmd::ir
