// What the subcommands that run programs share: reading an HLO file, building the entry's
// arguments from --input NAME=FILE.npy and --random-inputs SEED, and printing or writing results.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/literal.h"
#include "src/ir/module.h"
#include "src/spmd/mesh.h"

namespace vkspmd::cli {

// The largest input files the tools read (docs/cli.md): HLO text, and .npy arrays (the reference
// evaluator's largest value).
inline constexpr int64_t kMaxModuleFileBytes = int64_t{1} << 30;
inline constexpr int64_t kMaxNpyFileBytes = int64_t{4} << 30;

// The whole of a regular file of at most `max_bytes`. NOT_FOUND when it cannot be opened,
// FAILED_PRECONDITION when it is not a regular file (a directory, /dev/zero, a pipe) or is larger;
// the message names the file. Never blocks on a pipe and never reads past `max_bytes`.
absl::StatusOr<std::string> ReadInputFile(const std::string& path, int64_t max_bytes);

// Whether an error of ReadInputFile or ReadModuleFile means the file itself could not be used
// (a usage error, exit 2) rather than that its contents are wrong (exit 1).
bool IsUnusableFile(const absl::Status& status);

// Parses and verifies FILE (read by ReadInputFile, at most kMaxModuleFileBytes); errors carry
// FILE:LINE:COLUMN.
absl::StatusOr<std::unique_ptr<ir::Module>> ReadModuleFile(const std::string& path);

// One literal per entry parameter. INVALID_ARGUMENT for usage mistakes (bad NAME=FILE, unknown
// parameter, a parameter with neither input nor seed, an .npy file that is missing, not a regular
// file or over kMaxNpyFileBytes); DATA_LOSS for an .npy file whose contents are malformed.
absl::StatusOr<std::vector<ir::Literal>> BuildArguments(const ir::Computation& entry,
                                                        const std::vector<std::string>& inputs,
                                                        std::optional<uint64_t> random_seed);

// "label: f32[4,16] min=... max=... mean=... first=[...]", one line per array.
void PrintSummary(const std::string& label, const ir::Literal& value);

// Writes `value` as DIRECTORY/STEM.npy (STEM.K.npy per tuple element).
absl::Status WriteOutputs(const std::string& directory, const std::string& stem,
                          const ir::Literal& value);

// Applies --spec NAME=SPEC entries: the entry instruction NAME gets the sharding of the
// PyTorch/XLA-style partition SPEC (e.g. "(0, None)") over `mesh`.
absl::Status ApplySpecs(ir::Module& module, const std::vector<std::string>& specs,
                        const spmd::Mesh& mesh);

}  // namespace vkspmd::cli
