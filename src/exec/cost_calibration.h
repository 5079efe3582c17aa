// Measuring auto-sharding's cost model on the mesh devices (issue 22): each collective kind's α/β
// per mesh axis and a kernel's dispatch, flop and byte costs, timed through the path a step runs
// (MeshExecutable, host-staged collectives), cached on disk by device, driver and mesh.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/exec/cache_entry.h"
#include "src/runtime/mesh_device.h"
#include "src/spmd/auto_sharding_cost.h"
#include "src/spmd/mesh.h"

namespace vkspmd::exec {

struct CalibrationOptions {
  // Bytes per device of the timed collectives: the points α and β are fitted through.
  std::vector<int64_t> collective_bytes = {4 << 10, 64 << 10, 512 << 10};
  int chain = 4;           // collectives per timed program (their mean is taken)
  int repeats = 7;         // timed runs per program, after one warm-up; the median is taken
  int64_t dot_size = 256;  // M of the chained M×M by M×M dots (flop/s)
  int64_t elementwise_elements = int64_t{1} << 18;  // f32 elements of the negate (bytes/s)
  // Where measured models are kept; unset: the compile cache's directory (VKSPMD_CACHE_DIR, as
  // docs/runtime.md says), empty: no cache.
  std::optional<std::string> cache_directory;
  bool refresh = false;  // measure even when the cache holds a model
};

struct Calibration {
  spmd::CostModel model;
  bool from_cache = false;
  double seconds = 0;      // spent measuring (0 when read from the cache)
  std::string cache_path;  // the entry's file; empty when uncached
};

// THE entry point: the measured cost model of `mesh` on `devices` (devices[d] runs mesh device d,
// as MeshProgram::Compile takes them), from the cache when it holds a sound entry for these
// devices (driver, device, queue placement) and mesh, else measured (a few seconds on lavapipe)
// and stored. A damaged or unreadable entry is a one-line warning on stderr and a new
// measurement, never an error. Pass the result to spmd::AutoShard.
absl::StatusOr<Calibration> MeasuredCostModel(const spmd::Mesh& mesh,
                                              const std::vector<runtime::MeshDevice*>& devices,
                                              const CalibrationOptions& options = {});

// The raw timings a calibration takes (median wall seconds of one run of each program, all
// devices running it at once); FitCostModel turns them into a model.
struct CalibrationTimings {
  double base = 0;               // one negate of 8 elements
  double tiny_dots = 0;          // kTinyDots chained 8×8 dots
  double big_dots = 0;           // kBigDots chained dot_size² dots
  double elementwise = 0;        // one negate of elementwise_elements
  double elementwise_chain = 0;  // kChainOps fused elementwise ops on elementwise_elements
  int64_t dot_size = 0, elementwise_elements = 0;  // the sizes timed
  // [axis][kind][size]: `chain` collectives of collective_bytes[size] per device, each followed
  // by the kernel bringing the value back to the input's shape (the next collective's input).
  std::vector<std::vector<std::vector<double>>> collectives;
};
inline constexpr int kTinyDots = 8;
inline constexpr int kBigDots = 2;
inline constexpr int kChainOps = 16;  // multiply, add, sqrt, divide, four times: one fused kernel

// What one timed program runs besides the fixed cost of a run: its kernels' dispatches, dot
// flops, bytes and other ops' elements (as CostModel::Kernel counts them).
struct ProgramLoad {
  double kernels = 0, flops = 0, bytes = 0, element_ops = 0;
};
ProgramLoad BaseLoad();
ProgramLoad TinyDotsLoad();
ProgramLoad BigDotsLoad(int64_t dot_size);
ProgramLoad ElementwiseLoad(int64_t elements);
ProgramLoad ElementwiseChainLoad(int64_t elements);
// The kernels of a collective program (the restoring kernels), `bytes` per device.
ProgramLoad CollectiveProgramLoad(spmd::CollectiveKind kind, int64_t bytes, int64_t group,
                                  const CalibrationOptions& options);
// The bytes CostModel::Collective takes for a collective whose input is `bytes` per device
// (an all-gather's gathered result, else the input).
int64_t ModelBytes(spmd::CollectiveKind kind, int64_t bytes, int64_t group);

// Solves the kernel costs from base, tiny_dots, big_dots, elementwise and elementwise_chain (four
// differences, four unknowns: dispatch, flop, byte, element op) and the run's fixed cost
// (run_seconds: base less its kernel), then each collective's seconds from its program less the
// fixed and kernel costs, and fits α and β per axis and kind through the sizes. Exact on timings
// that follow the model.
absl::StatusOr<spmd::CostModel> FitCostModel(const CalibrationTimings& timings,
                                             const spmd::Mesh& mesh,
                                             const CalibrationOptions& options);

// Runs the programs on the devices.
absl::StatusOr<CalibrationTimings> TimeCalibrationPrograms(
    const spmd::Mesh& mesh, const std::vector<runtime::MeshDevice*>& devices,
    const CalibrationOptions& options);

// The cache around a measurement (separate for tests): the entry for `key` in `directory` when
// it parses as a model of `mesh` (unless `refresh`), else measure() stored there. An empty
// directory: measure() every time.
CacheKey CostModelCacheKey(const spmd::Mesh& mesh, const std::vector<runtime::MeshDevice*>& devices,
                           const CalibrationOptions& options);
absl::StatusOr<Calibration> CachedCostModel(
    const spmd::Mesh& mesh, const CacheKey& key, const std::string& directory, bool refresh,
    const std::function<absl::StatusOr<spmd::CostModel>()>& measure);

}  // namespace vkspmd::exec
