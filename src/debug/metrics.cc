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
  report += fmt::format("{:<22}{} bytes\n", "HostToDeviceBytes", metrics.host_to_device_bytes);
  report += fmt::format("{:<22}{} bytes\n", "DeviceToHostBytes", metrics.device_to_host_bytes);
  report += fmt::format("{:<22}{} bytes\n", "CollectiveBytes", metrics.collective_bytes);
  report += fmt::format("{:<22}{:.3f} s\n", "CollectiveTime", metrics.collective_seconds);
  report += fmt::format("{:<22}{}\n", "DonatedCount", metrics.donated_count);
  report += fmt::format("{:<22}{} bytes\n", "DonatedBytes", metrics.donated_bytes);
  return report;
}

}  // namespace vkspmd::debug
