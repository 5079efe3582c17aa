// Reads the one thing vkspmd takes from XLA's backend_config JSON: a while loop's known trip
// count ({"known_trip_count":{"n":"5"}}), which lets the device compiler unroll the loop.
#pragma once

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "src/ir/text_reader.h"

namespace vkspmd::ir {

// Reads a backend_config value at the reader's position (bare JSON as XLA prints it today, or a
// quoted string as older dumps have it) and returns its known_trip_count's n, if it has one.
// Other keys are skipped; a known_trip_count that is not {"n":"K"} with K >= 0 is an error.
absl::StatusOr<std::optional<int64_t>> ReadKnownTripCount(TextReader& reader);

// The backend_config value the printer writes for a while with a known trip count.
std::string KnownTripCountConfig(int64_t trip_count);

}  // namespace vkspmd::ir
