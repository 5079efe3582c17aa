// The process-wide profiler trace: events buffered in memory while a trace is on and written as
// Chrome trace JSON (ui.perfetto.dev, chrome://tracing) when it stops. Any thread may add events.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace vkspmd::debug {

// The trace's processes: one for the host, one per mesh device.
inline constexpr int kHostTracePid = 1;
inline int DeviceTracePid(int mesh_index) { return 100 + mesh_index; }
// A device's tracks: its queue (kernels, from timestamp queries) and its host-staged collectives;
// apart because the two are timed by different clocks and must not partly overlap on one track.
inline constexpr int kQueueTrack = 1;
inline constexpr int kCollectiveTrack = 2;

struct TraceEvent {
  char phase = 'X';  // X complete, C counter, s/f flow start/finish, i instant.
  std::string name;
  std::string category;
  int pid = kHostTracePid;
  int64_t tid = 0;
  double ts_us = 0;
  double dur_us = 0;
  uint64_t id = 0;  // Flows.
  std::vector<std::pair<std::string, std::string>> text_args;
  std::vector<std::pair<std::string, double>> number_args;
};

namespace internal {
extern std::atomic<bool> tracing;
}  // namespace internal

// Whether a trace is being captured: one relaxed load, so code with tracing off does no more.
inline bool TracingOn() { return internal::tracing.load(std::memory_order_relaxed); }

// Microseconds on the trace's clock (steady_clock from a fixed point of this process).
double TraceNowMicros();

// Starts buffering events for `path`, which is created (emptied) now so a path that cannot be
// written is an error here rather than at the end. FAILED_PRECONDITION when a trace is on.
absl::Status StartTrace(const std::string& path);
// Stops and writes the trace. FAILED_PRECONDITION when none is on.
absl::Status StopTrace();
// Starts a trace that stops by itself (and is written) after `duration_ms`, on a thread of its
// own; returns at once.
absl::Status StartDetachedTrace(const std::string& path, int64_t duration_ms);
// VKSPMD_TRACE=path: starts a trace that lasts until StopTrace or process exit. Only the first
// call looks at the environment.
void StartTraceFromEnvironment();
// Stops and writes the trace VKSPMD_TRACE started, if it is still on (shutdown()).
void StopEnvironmentTrace();

// Adds an event when a trace is on (dropped otherwise).
void AddTraceEvent(TraceEvent event);
// The calling thread's track on the host process, named `name` in the trace.
int64_t HostTrack();
void NameHostThread(absl::string_view name);
// Names a process (a mesh device) in the trace: remembered across traces.
void NameTraceProcess(int pid, absl::string_view name);
// Ids for flow events, unique within the process.
uint64_t NextFlowIds(uint64_t count);

// A host span on the calling thread's track, from construction to destruction; nothing (no clock
// read) when tracing is off at construction.
class ScopedTraceSpan {
 public:
  explicit ScopedTraceSpan(const char* name, const char* category = "host");
  ~ScopedTraceSpan();
  ScopedTraceSpan(const ScopedTraceSpan&) = delete;
  ScopedTraceSpan& operator=(const ScopedTraceSpan&) = delete;
  // Adds an argument shown with the span (when on).
  void AddArg(const char* key, double value);
  void AddArg(const char* key, std::string value);

 private:
  const char* name_;
  const char* category_;
  double start_us_ = -1;  // < 0: not traced.
  std::vector<std::pair<std::string, std::string>> text_args_;
  std::vector<std::pair<std::string, double>> number_args_;
};

// The JSON of a whole trace: {"traceEvents":[...],"displayTimeUnit":"ns","otherData":{...}}.
std::string TraceJson(const std::vector<TraceEvent>& events);

}  // namespace vkspmd::debug
