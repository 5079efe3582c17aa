// Running the pending graph (sync, mark_step), waiting for the devices, and the runtime's
// metrics. VKSPMD_DEBUG=1 prints an analysis block per compilation and execution to stderr (or to
// the file VKSPMD_DEBUG_FILE) naming the cause and the source line that triggered it.
#pragma once

#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#include "vkspmd/tensor.h"

namespace vkspmd {

// Compiles (or finds in the graph cache) and launches everything pending, and returns without
// waiting for the devices; reading a value waits.
void sync(std::source_location where = std::source_location::current());
// Launches the graph computing `tensors` (only what they need, exactly as reading one of them
// would) and returns without waiting; a read afterwards only waits for the devices. The Python
// package calls it before a read so that the wait, done in slices, can be interrupted.
void sync(const std::vector<Tensor>& tensors,
          std::source_location where = std::source_location::current());
// The end of a training step: the same as sync, reported as a step marker.
void mark_step(std::source_location where = std::source_location::current());
// Blocks until every launched graph has finished.
void wait_device_ops();
// wait_device_ops for at most `seconds`: whether every launched graph has finished. A caller
// that must stay responsive while it waits (the Python package, for Ctrl-C) waits in slices.
bool wait_device_ops_for(double seconds);
// Ends the runtime in a defined order: waits for launched graphs, frees every tensor's device
// value (reading such a tensor later is an error saying so; host tensors and pending graphs that
// do not read freed values are unaffected), empties the graph cache, closes the mesh devices and
// stops the worker thread. The next device use opens devices again. Exit does the same (after
// letting launched graphs finish), so calling it is only needed to free the devices earlier.
// Call it while no other thread uses tensors.
void shutdown();

struct Metrics {
  int64_t compile_count = 0;
  double compile_seconds = 0;
  int64_t execute_count = 0;
  double execute_seconds = 0;
  int64_t cache_hits = 0;
  int64_t host_to_device_bytes = 0;
  int64_t device_to_host_bytes = 0;
  int64_t collective_bytes = 0;   // Sent by all devices together.
  double collective_seconds = 0;  // Of execute_seconds: in collectives (mean over devices).
  // Arguments a graph updated in place: a tensor's old value that nothing else referred to any
  // more, donated to the graph that computed its new value (see Tensor::assign), and their bytes.
  int64_t donated_count = 0;
  int64_t donated_bytes = 0;
  // Kernels whose SPIR-V the persistent compile cache (vkspmd/cache.h) held, and those compiled.
  int64_t compile_cache_hits = 0;
  int64_t compile_cache_misses = 0;
  // Compute kernels dispatched and collectives run, counted on every device (a step on a 2x2
  // mesh adds each of its 4 devices' kernels): how many pieces the fusion made of the graphs.
  int64_t kernel_dispatches = 0;
  int64_t collective_runs = 0;
};

// The counters so far (waits for launched work first, so they are complete).
Metrics metrics();
void reset_metrics();
// A human-readable table of metrics().
std::string metrics_report();

// Device memory by what it holds. Tensors are "other" until set_memory_kind says what they are
// (vkspmd::nn and vkspmd::optim mark parameters and optimizer state); a graph's own buffers
// (activations and temporaries) count in bytes_in_use and peak_bytes only.
enum class MemoryKind { kOther, kParameter, kOptimizerState };
void set_memory_kind(const std::vector<Tensor>& tensors, MemoryKind kind);
struct DeviceMemory {
  int64_t device = 0;  // Mesh device index.
  uint64_t bytes_in_use = 0;
  uint64_t peak_bytes = 0;  // Since the devices opened or reset_memory_peaks.
  uint64_t parameter_bytes = 0;
  uint64_t optimizer_state_bytes = 0;
};
// One entry per open mesh device (waits for launched work first). The figures are its VkDevice's:
// mesh devices that are queues of one GPU's VkDevice report the same, shared figures
// (VKSPMD_SEPARATE_LOGICAL_DEVICES=1 gives each mesh device a VkDevice of its own).
std::vector<DeviceMemory> memory_stats();
void reset_memory_peaks();

}  // namespace vkspmd
