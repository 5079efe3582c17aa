// Profiler traces (Chrome trace JSON, which ui.perfetto.dev and chrome://tracing open): host spans
// for tracing, compiling, launching, transfers and waits, and per mesh device the GPU time of
// every kernel and each collective step. See docs/profiling.md.
#pragma once

#include <cstdint>
#include <string>

namespace vkspmd::profiler {

// Starts capturing into `path` (created now; written by stop_trace). Throws vkspmd::Error when a
// trace is already being captured or `path` cannot be written.
void start_trace(const std::string& path);

// Waits for the work queued so far (so its device spans are in the trace), stops and writes the
// trace. Throws when no trace is being captured.
void stop_trace();

// Captures the next `duration_ms` milliseconds of whatever the program runs, without blocking:
// returns at once, and a thread of the profiler stops and writes `path` when the time is up (or
// at exit, whichever comes first).
void trace_detached(const std::string& path, int64_t duration_ms);

// Whether a trace is being captured now.
bool tracing();

}  // namespace vkspmd::profiler
