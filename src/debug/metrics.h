// Counters and timers of the lazy runtime (compilations, executions, cache hits, bytes moved),
// kept in one process-wide table that any thread may update, and its text report.
#pragma once

#include <cstdint>
#include <string>

namespace vkspmd::debug {

struct MetricsSnapshot {
  int64_t compile_count = 0;
  double compile_seconds = 0;
  int64_t execute_count = 0;
  double execute_seconds = 0;
  int64_t cache_hits = 0;
  int64_t host_to_device_bytes = 0;
  int64_t device_to_host_bytes = 0;
  int64_t collective_bytes = 0;
  double collective_seconds = 0;  // Of execute_seconds: in collectives (mean over devices).
  int64_t donated_count = 0;      // Arguments updated in place (input_output_alias).
  int64_t donated_bytes = 0;      // Their bytes, all shards together.
  // The persistent compile cache (src/exec/compile_cache.h): kernels whose SPIR-V came from it
  // or had to be compiled, the bytes read and written, device pipeline caches loaded from it.
  int64_t compile_cache_hits = 0;
  int64_t compile_cache_misses = 0;
  int64_t compile_cache_read_bytes = 0;
  int64_t compile_cache_written_bytes = 0;
  int64_t pipeline_cache_loads = 0;
  // Where compile time goes: GLSL -> validated SPIR-V (glslang, spirv-val) and the driver's
  // pipeline creation (lavapipe compiles the SPIR-V with LLVM here).
  double shader_compile_seconds = 0;
  double pipeline_create_seconds = 0;
  // Kernels dispatched and collectives run, summed over the devices (one graph step on a 2x2
  // mesh counts each device's), as recorded by the executables.
  int64_t kernel_dispatches = 0;
  int64_t collective_runs = 0;
};

// Thread-safe updates of the process-wide counters.
void RecordCompile(double seconds);
void RecordExecute(double seconds, int64_t collective_bytes, double collective_seconds = 0);
void RecordCacheHit();
void RecordHostToDevice(int64_t bytes);
void RecordDeviceToHost(int64_t bytes);
void RecordDonation(int64_t count, int64_t bytes);
void RecordCompileCacheLookup(bool hit, int64_t bytes_read);
void RecordCompileCacheWrite(int64_t bytes);
void RecordPipelineCacheLoad(int64_t bytes_read);
void RecordShaderCompile(double seconds);
void RecordPipelineCreate(double seconds);
void RecordDispatches(int64_t kernels, int64_t collectives);

MetricsSnapshot ReadMetrics();
void ResetMetrics();
// One line per counter, aligned: "CompileCount        3".
std::string MetricsReport(const MetricsSnapshot& metrics);

}  // namespace vkspmd::debug
