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

// Arguments for each of `devices` devices: as BuildArguments, device d's random values drawn
// from SEED + d (the same as SEED on one device); --input files go to every device.
absl::StatusOr<std::vector<std::vector<ir::Literal>>> BuildDeviceArguments(
    const ir::Computation& entry, const std::vector<std::string>& inputs,
    std::optional<uint64_t> random_seed, int64_t devices);

// The CPU reference's result of the module as one program, as a one-element list.
absl::StatusOr<std::vector<ir::Literal>> ReferenceResults(
    const ir::Module& module, const std::vector<ir::Literal>& arguments);

// "label: f32[4,16] min=... max=... mean=... first=[...]", one line per array.
void PrintSummary(const std::string& label, const ir::Literal& value);

// Writes `value` as DIRECTORY/STEM.npy (STEM.K.npy per tuple element).
absl::Status WriteOutputs(const std::string& directory, const std::string& stem,
                          const ir::Literal& value);

// Prints a summary of each result and, when `output_dir` is not empty, creates it and writes
// each there: one result as output.npy, several (one per device) as deviceD.output.npy (tuples
// as STEM.K.npy). What `eval` and `run` write.
absl::Status ReportOutputs(const std::vector<ir::Literal>& results, const std::string& output_dir);

// How a module is read by the subcommands that partition or run it.
enum class ModuleReading {
  kSingleDevice,  // one device, nothing to partition
  kGspmd,         // one global program with shardings: partition it over `meshes`
  kPerDevice,     // already partitioned: run as it is on `devices` devices
};

// What the command line says about the mesh.
struct MeshChoice {
  std::string mesh;             // --mesh: partition over this mesh
  int64_t devices = 0;          // --devices N (run): the device count
  bool as_partitioned = false;  // --as-partitioned (run): a per-device program
  bool has_specs = false;       // --spec given: the module gets tiled shardings
};

struct ModuleRead {
  ModuleReading reading = ModuleReading::kSingleDevice;
  int64_t devices = 1;
  std::vector<spmd::Mesh> meshes;  // kGspmd: the meshes to try, most likely first
  // One line saying which way the module was read and why; empty for a plain one-device module.
  std::string summary;
  bool mesh_given = false;  // meshes is the one --mesh gave
};

// Where --mesh gave a mesh whose axes the partitioner split to express the module's shardings
// (--mesh 4 for shardings {devices=[1,1,2,2]0,1,2,3}, partitioned over [2,2]), the note the report
// lines naming the partitioned mesh add once: "--mesh [4] viewed as [2,2] for the module's
// shardings"; empty otherwise.
std::string MeshViewNote(const spmd::Mesh& partitioned, const ModuleRead& read);

// With --mesh or --as-partitioned, that. Otherwise a module carrying a tiled sharding or a
// `Sharding` custom-call (or given --spec) is a GSPMD module over its num_partitions devices (or,
// without num_partitions, the largest device id in its shardings plus one; its partition count is
// set to that), a module without either over several devices (num_partitions x replica_count) is
// already partitioned, and the rest is a one-device module (a GSPMD module over --devices N when
// given). INVALID_ARGUMENT for contradicting options or a malformed mesh.
absl::StatusOr<ModuleRead> ReadModuleAs(ir::Module& module, const MeshChoice& choice);

// The error of the last mesh tried, saying how many were tried when there were several.
std::string LastMeshError(const absl::Status& last, size_t meshes_tried);

// Applies --spec NAME=SPEC entries: the entry instruction NAME gets the sharding of the
// PyTorch/XLA-style partition SPEC (e.g. "(0, None)") over `mesh`.
absl::Status ApplySpecs(ir::Module& module, const std::vector<std::string>& specs,
                        const spmd::Mesh& mesh);

}  // namespace vkspmd::cli
