// sync, mark_step, waiting, and the metrics of the public API.
#include <algorithm>
#include <chrono>

#include "src/api/api_support.h"
#include "src/debug/metrics.h"
#include "src/debug/trace_writer.h"
#include "src/lazy/context.h"
#include "src/lazy/engine.h"
#include "vkspmd/lazy.h"

namespace vkspmd {

void sync(std::source_location where) {
  lazy::ThrowIfError(lazy::Context::Get().SyncAll(lazy::SyncCause::kUserSync, where));
}

void sync(const std::vector<Tensor>& tensors, std::source_location where) {
  std::vector<std::shared_ptr<lazy::TensorState>> pending;
  for (const Tensor& tensor : tensors) {
    lazy::NodePtr node = lazy::NodeOf(tensor, "sync");
    if (!node->host_value.has_value() && !node->is_leaf()) pending.push_back(tensor.state());
  }
  if (pending.empty()) return;
  // The cause a read would give, so the metrics and VKSPMD_DEBUG read as before.
  lazy::ThrowIfError(lazy::Context::Get().Sync(pending, lazy::SyncCause::kValueRead, where));
}

void mark_step(std::source_location where) {
  lazy::ThrowIfError(lazy::Context::Get().SyncAll(lazy::SyncCause::kStepMarker, where));
}

void wait_device_ops() { lazy::Engine::Get().WaitIdle(); }

bool wait_device_ops_for(double seconds) {
  if (!(seconds >= 0)) {
    throw Error(ErrorCode::kInvalidArgument,
                "wait_device_ops_for: the timeout must be a non-negative number of seconds");
  }
  const auto timeout = std::chrono::duration<double>(seconds);
  return lazy::Engine::Get().WaitIdleFor(std::chrono::ceil<std::chrono::milliseconds>(
      std::min(timeout, std::chrono::duration<double>(1e9))));
}

void shutdown() {
  lazy::Engine::Get().Shutdown();
  debug::StopEnvironmentTrace();
}

Metrics metrics() {
  wait_device_ops();
  const debug::MetricsSnapshot snapshot = debug::ReadMetrics();
  Metrics metrics;
  metrics.compile_count = snapshot.compile_count;
  metrics.compile_seconds = snapshot.compile_seconds;
  metrics.execute_count = snapshot.execute_count;
  metrics.execute_seconds = snapshot.execute_seconds;
  metrics.cache_hits = snapshot.cache_hits;
  metrics.host_to_device_bytes = snapshot.host_to_device_bytes;
  metrics.device_to_host_bytes = snapshot.device_to_host_bytes;
  metrics.collective_bytes = snapshot.collective_bytes;
  metrics.collective_seconds = snapshot.collective_seconds;
  metrics.donated_count = snapshot.donated_count;
  metrics.donated_bytes = snapshot.donated_bytes;
  metrics.compile_cache_hits = snapshot.compile_cache_hits;
  metrics.compile_cache_misses = snapshot.compile_cache_misses;
  metrics.kernel_dispatches = snapshot.kernel_dispatches;
  metrics.collective_runs = snapshot.collective_runs;
  return metrics;
}

void reset_metrics() {
  wait_device_ops();
  debug::ResetMetrics();
}

std::string metrics_report() {
  wait_device_ops();
  return debug::MetricsReport(debug::ReadMetrics());
}

}  // namespace vkspmd
