// The process-wide trace: its on/off flag, the event buffer, the tracks and names, and the
// capture that stops by itself (trace_detached).
#include "src/debug/trace_writer.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "src/base/environment.h"

namespace vkspmd::debug {
namespace internal {
std::atomic<bool> tracing{false};
}  // namespace internal

namespace {

const std::chrono::steady_clock::time_point kEpoch = std::chrono::steady_clock::now();

struct TraceState {
  std::mutex mutex;
  std::string path;
  std::vector<TraceEvent> events;
  std::map<int, std::string> process_names;
  std::map<int64_t, std::string> thread_names;
  // Where the last span of each device track ends: a later one starts no earlier, so spans on a
  // track never partly overlap (Perfetto rejects that) even where two clocks meet.
  std::map<std::pair<int, int64_t>, double> track_ends;
  bool from_environment = false;  // The trace VKSPMD_TRACE started, which shutdown() ends.
  uint64_t generation = 0;        // Counts traces, so a detached capture stops only its own.
  std::thread detached;
  std::condition_variable detached_wake;
};

// Never destroyed: device threads may still add events while statics are torn down at exit.
TraceState& State() {
  static TraceState* state = new TraceState();
  return *state;
}

std::atomic<int64_t> next_thread_track{1};
std::atomic<uint64_t> next_flow_id{1};

absl::Status StartLocked(TraceState& state, const std::string& path) {
  if (internal::tracing.load()) {
    return absl::FailedPreconditionError(
        absl::StrCat("a trace to ", state.path, " is being captured; stop it first"));
  }
  std::ofstream probe(path, std::ios::trunc);
  if (!probe) return absl::PermissionDeniedError(absl::StrCat("cannot write the trace ", path));
  state.path = path;
  state.from_environment = false;
  state.events.clear();
  state.track_ends.clear();
  state.process_names[kHostTracePid] = "host";
  ++state.generation;
  internal::tracing.store(true);
  return absl::OkStatus();
}

absl::Status StopLocked(TraceState& state) {
  if (!internal::tracing.exchange(false)) {
    return absl::FailedPreconditionError("no trace is being captured");
  }
  ++state.generation;  // A detached capture of this trace is done: it wakes and writes nothing.
  std::vector<TraceEvent> events;
  for (const auto& [pid, name] : state.process_names) {
    TraceEvent meta{'M', "process_name"};
    meta.pid = pid;
    meta.text_args = {{"name", name}};
    events.push_back(meta);
    meta.name = "process_sort_index";
    meta.text_args.clear();
    meta.number_args = {{"sort_index", pid}};
    events.push_back(meta);
  }
  for (const auto& [tid, name] : state.thread_names) {
    TraceEvent meta{'M', "thread_name"};
    meta.tid = tid;
    meta.text_args = {{"name", name}};
    events.push_back(meta);
  }
  for (const auto& [pid, name] : state.process_names) {
    if (pid == kHostTracePid) continue;
    for (auto [tid, track] : {std::pair<int, const char*>{kQueueTrack, "queue (GPU timestamps)"},
                              {kCollectiveTrack, "collectives (host-staged)"}}) {
      TraceEvent meta{'M', "thread_name"};
      meta.pid = pid;
      meta.tid = tid;
      meta.text_args = {{"name", track}};
      events.push_back(meta);
    }
  }
  events.insert(events.end(), std::make_move_iterator(state.events.begin()),
                std::make_move_iterator(state.events.end()));
  state.events.clear();
  std::ofstream out(state.path, std::ios::trunc);
  out << TraceJson(events);
  out.close();
  if (!out) return absl::DataLossError(absl::StrCat("writing the trace ", state.path, " failed"));
  return absl::OkStatus();
}

void JoinDetached(std::unique_lock<std::mutex>& lock, TraceState& state) {
  if (!state.detached.joinable()) return;
  std::thread detached = std::move(state.detached);
  state.detached_wake.notify_all();
  lock.unlock();
  if (detached.get_id() != std::this_thread::get_id()) {
    detached.join();
  } else {
    detached.detach();
  }
  lock.lock();
}

void StopAtExit() {
  TraceState& state = State();
  std::unique_lock<std::mutex> lock(state.mutex);
  if (internal::tracing.load()) (void)StopLocked(state);
  JoinDetached(lock, state);
}

void RegisterExitHandler() {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(StopAtExit); });
}

}  // namespace

double TraceNowMicros() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - kEpoch)
      .count();
}

absl::Status StartTrace(const std::string& path) {
  TraceState& state = State();
  std::unique_lock<std::mutex> lock(state.mutex);
  JoinDetached(lock, state);
  RegisterExitHandler();
  return StartLocked(state, path);
}

absl::Status StopTrace() {
  TraceState& state = State();
  std::unique_lock<std::mutex> lock(state.mutex);
  absl::Status status = StopLocked(state);
  JoinDetached(lock, state);
  return status;
}

absl::Status StartDetachedTrace(const std::string& path, int64_t duration_ms) {
  if (duration_ms < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a trace cannot last ", duration_ms, " ms (negative)"));
  }
  TraceState& state = State();
  std::unique_lock<std::mutex> lock(state.mutex);
  JoinDetached(lock, state);
  RegisterExitHandler();
  if (absl::Status started = StartLocked(state, path); !started.ok()) return started;
  const uint64_t generation = state.generation;
  state.detached = std::thread([generation, duration_ms] {
    TraceState& shared = State();
    std::unique_lock<std::mutex> held(shared.mutex);
    shared.detached_wake.wait_for(held, std::chrono::milliseconds(duration_ms),
                                  [&] { return shared.generation != generation; });
    // Stopped by hand (or at exit) meanwhile: that wrote it.
    if (shared.generation == generation && internal::tracing.load()) (void)StopLocked(shared);
  });
  return absl::OkStatus();
}

void StartTraceFromEnvironment() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::optional<std::string> path = base::EnvironmentValue("VKSPMD_TRACE");
    if (!path.has_value() || path->empty()) return;
    if (absl::Status started = StartTrace(*path); !started.ok()) {
      std::fprintf(stderr, "vkspmd: VKSPMD_TRACE: %s; running without a trace\n",
                   std::string(started.message()).c_str());
      return;
    }
    TraceState& state = State();
    std::lock_guard<std::mutex> lock(state.mutex);
    state.from_environment = true;
  });
}

void StopEnvironmentTrace() {
  TraceState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (state.from_environment && internal::tracing.load()) (void)StopLocked(state);
  state.from_environment = false;
}

void AddTraceEvent(TraceEvent event) {
  if (!TracingOn()) return;
  TraceState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!internal::tracing.load(std::memory_order_relaxed)) return;
  if (event.phase == 'X' && event.pid != kHostTracePid) {
    double& end = state.track_ends[{event.pid, event.tid}];
    if (event.ts_us < end) {
      event.dur_us = std::max(0.0, event.dur_us - (end - event.ts_us));
      event.ts_us = end;
    }
    end = event.ts_us + event.dur_us;
  }
  state.events.push_back(std::move(event));
}

int64_t HostTrack() {
  thread_local int64_t track = 0;
  if (track == 0) {
    track = next_thread_track.fetch_add(1);
    const bool main_thread = syscall(SYS_gettid) == getpid();
    TraceState& state = State();
    std::lock_guard<std::mutex> lock(state.mutex);
    state.thread_names.emplace(track, main_thread ? "main thread" : absl::StrCat("thread ", track));
  }
  return track;
}

void NameHostThread(absl::string_view name) {
  const int64_t track = HostTrack();
  TraceState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.thread_names[track] = std::string(name);
}

void NameTraceProcess(int pid, absl::string_view name) {
  TraceState& state = State();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.process_names[pid] = std::string(name);
}

uint64_t NextFlowIds(uint64_t count) { return next_flow_id.fetch_add(count); }

ScopedTraceSpan::ScopedTraceSpan(const char* name, const char* category)
    : name_(name), category_(category) {
  if (TracingOn()) start_us_ = TraceNowMicros();
}

ScopedTraceSpan::~ScopedTraceSpan() {
  if (start_us_ < 0 || !TracingOn()) return;
  TraceEvent event{'X', name_, category_};
  event.tid = HostTrack();
  event.ts_us = start_us_;
  event.dur_us = TraceNowMicros() - start_us_;
  event.text_args = std::move(text_args_);
  event.number_args = std::move(number_args_);
  AddTraceEvent(std::move(event));
}

void ScopedTraceSpan::AddArg(const char* key, double value) {
  if (start_us_ >= 0) number_args_.emplace_back(key, value);
}

void ScopedTraceSpan::AddArg(const char* key, std::string value) {
  if (start_us_ >= 0) text_args_.emplace_back(key, std::move(value));
}

}  // namespace vkspmd::debug
