// Parses HLO text (what XLA prints, and what PrintModule prints) into a Module. Errors are
// InvalidArgument statuses starting with "line:column:"; input bytes they quote that are not
// printable ASCII are escaped as \xNN.
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "src/ir/module.h"

namespace vkspmd::ir {

// Parses only; call VerifyModule (verifier.h) to check shapes and attributes.
absl::StatusOr<std::unique_ptr<Module>> ParseModule(std::string_view text);
// Parses then verifies.
absl::StatusOr<std::unique_ptr<Module>> ParseAndVerifyModule(std::string_view text);
// Parses one sharding in its text form, e.g. "{devices=[2,2]<=[4]}".
absl::StatusOr<Sharding> ParseSharding(std::string_view text);

}  // namespace vkspmd::ir
