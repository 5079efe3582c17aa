// The profiler's public functions over the trace writer of src/debug.
#include "src/api/api_support.h"
#include "src/debug/trace_writer.h"
#include "src/lazy/engine.h"
#include "vkspmd/profiler.h"

namespace vkspmd::profiler {

void start_trace(const std::string& path) { lazy::ThrowIfError(debug::StartTrace(path)); }

void stop_trace() {
  lazy::Engine::Get().WaitIdle();
  lazy::ThrowIfError(debug::StopTrace());
}

void trace_detached(const std::string& path, int64_t duration_ms) {
  lazy::ThrowIfError(debug::StartDetachedTrace(path, duration_ms));
}

bool tracing() { return debug::TracingOn(); }

}  // namespace vkspmd::profiler
