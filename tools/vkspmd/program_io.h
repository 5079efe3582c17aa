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

// Parses and verifies FILE; errors carry FILE:LINE:COLUMN.
absl::StatusOr<std::unique_ptr<ir::Module>> ReadModuleFile(const std::string& path);

// One literal per entry parameter. INVALID_ARGUMENT for usage mistakes (bad NAME=FILE, unknown
// parameter, a parameter with neither input nor seed); other codes for unreadable files.
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
