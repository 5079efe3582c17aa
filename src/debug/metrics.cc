// The process-wide metrics table.
#include "src/debug/metrics.h"

#include <mutex>

#include "fmt/format.h"

namespace vkspmd::debug {
namespace {

std::mutex mutex;
MetricsSnapshot counters;

}  // namespace

void RecordCompile(double seconds) {
  std::lock_guard<std::mutex> lock(mutex);
  ++counters.compile_count;
  counters.compile_seconds += seconds;
}

void RecordExecute(double seconds, int64_t collective_bytes, double collective_seconds) {
  std::lock_guard<std::mutex> lock(mutex);
  ++counters.execute_count;
  counters.execute_seconds += seconds;
  counters.collective_bytes += collective_bytes;
  counters.collective_seconds += collective_seconds;
}

void RecordDispatches(int64_t kernels, int64_t collectives) {
  std::lock_guard<std::mutex> lock(mutex);
  counters.kernel_dispatches += kernels;
  counters.collective_runs += collectives;
}

void RecordCacheHit() {
  std::lock_guard<std::mutex> lock(mutex);
  ++counters.cache_hits;
}

void RecordHostToDevice(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex);
  counters.host_to_device_bytes += bytes;
}

void RecordDeviceToHost(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex);
  counters.device_to_host_bytes += bytes;
}

void RecordDonation(int64_t count, int64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex);
  counters.donated_count += count;
  counters.donated_bytes += bytes;
}

void RecordCompileCacheLookup(bool hit, int64_t bytes_read) {
  std::lock_guard<std::mutex> lock(mutex);
  ++(hit ? counters.compile_cache_hits : counters.compile_cache_misses);
  counters.compile_cache_read_bytes += bytes_read;
}

void RecordCompileCacheWrite(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex);
  counters.compile_cache_written_bytes += bytes;
}

void RecordPipelineCacheLoad(int64_t bytes_read) {
  std::lock_guard<std::mutex> lock(mutex);
  ++counters.pipeline_cache_loads;
  counters.compile_cache_read_bytes += bytes_read;
}

void RecordShaderCompile(double seconds) {
  std::lock_guard<std::mutex> lock(mutex);
  counters.shader_compile_seconds += seconds;
}

void RecordPipelineCreate(double seconds) {
  std::lock_guard<std::mutex> lock(mutex);
  counters.pipeline_create_seconds += seconds;
}

MetricsSnapshot ReadMetrics() {
  std::lock_guard<std::mutex> lock(mutex);
  return counters;
}

void ResetMetrics() {
  std::lock_guard<std::mutex> lock(mutex);
  counters = MetricsSnapshot();
}

std::string MetricsReport(const MetricsSnapshot& metrics) {
  std::string report;
  report += fmt::format("{:<22}{}\n", "CompileCount", metrics.compile_count);
  report += fmt::format("{:<22}{:.3f} s\n", "CompileTime", metrics.compile_seconds);
  report += fmt::format("{:<22}{}\n", "ExecuteCount", metrics.execute_count);
  report += fmt::format("{:<22}{:.3f} s\n", "ExecuteTime", metrics.execute_seconds);
  report += fmt::format("{:<22}{}\n", "CacheHits", metrics.cache_hits);
  report += fmt::format("{:<22}{}\n", "KernelDispatches", metrics.kernel_dispatches);
  report += fmt::format("{:<22}{}\n", "CollectiveRuns", metrics.collective_runs);
  report += fmt::format("{:<22}{} bytes\n", "HostToDeviceBytes", metrics.host_to_device_bytes);
  report += fmt::format("{:<22}{} bytes\n", "DeviceToHostBytes", metrics.device_to_host_bytes);
  report += fmt::format("{:<22}{} bytes\n", "CollectiveBytes", metrics.collective_bytes);
  report += fmt::format("{:<22}{:.3f} s\n", "CollectiveTime", metrics.collective_seconds);
  report += fmt::format("{:<22}{}\n", "DonatedCount", metrics.donated_count);
  report += fmt::format("{:<22}{} bytes\n", "DonatedBytes", metrics.donated_bytes);
  report += fmt::format("{:<22}{}\n", "CompileCacheHits", metrics.compile_cache_hits);
  report += fmt::format("{:<22}{}\n", "CompileCacheMisses", metrics.compile_cache_misses);
  report += fmt::format("{:<22}{} bytes\n", "CompileCacheRead", metrics.compile_cache_read_bytes);
  report +=
      fmt::format("{:<22}{} bytes\n", "CompileCacheWritten", metrics.compile_cache_written_bytes);
  report += fmt::format("{:<22}{}\n", "PipelineCacheLoads", metrics.pipeline_cache_loads);
  report += fmt::format("{:<22}{:.3f} s\n", "ShaderCompileTime", metrics.shader_compile_seconds);
  report += fmt::format("{:<22}{:.3f} s\n", "PipelineCreateTime", metrics.pipeline_create_seconds);
  return report;
}

}  // namespace vkspmd::debug
