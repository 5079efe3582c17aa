// The trace writer on its own (no device): the JSON it writes, starting and stopping, a detached
// capture, and that nothing is recorded or written while tracing is off.
#include "src/debug/trace_writer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "tests/profiler/trace_check.h"

namespace vkspmd::testing {
namespace {

namespace fs = std::filesystem;

class TraceWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() /
                 ("vkspmd_trace_writer_test_" + std::to_string(::getpid()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
    fs::create_directories(directory_);
  }
  void TearDown() override {
    if (debug::TracingOn()) (void)debug::StopTrace();
    fs::remove_all(directory_);
  }
  std::string Path(const char* name) const { return (directory_ / name).string(); }

  fs::path directory_;
};

// Names of the events of phase `phase`.
std::vector<std::string> Names(const nlohmann::json& trace, const std::string& phase) {
  std::vector<std::string> names;
  for (const nlohmann::json& event : trace["traceEvents"]) {
    if (event["ph"] == phase) names.push_back(event["name"]);
  }
  return names;
}

TEST_F(TraceWriterTest, WritesNestedHostSpansCountersAndFlowsAsChromeTraceJson) {
  ASSERT_TRUE(debug::StartTrace(Path("trace.json")).ok());
  {
    debug::ScopedTraceSpan outer("outer \"quoted\"\\name");
    outer.AddArg("bytes", 96.0);
    debug::ScopedTraceSpan inner("inner");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  debug::NameTraceProcess(debug::DeviceTracePid(0), "device zero");
  debug::TraceEvent counter{'C', "device memory", "memory"};
  counter.pid = debug::DeviceTracePid(0);
  counter.ts_us = debug::TraceNowMicros();
  counter.number_args = {{"in use MiB", 1.5}};
  debug::AddTraceEvent(counter);
  const uint64_t id = debug::NextFlowIds(1);
  for (char phase : {'s', 'f'}) {
    debug::TraceEvent flow{phase, "collective", "collective"};
    flow.pid = debug::DeviceTracePid(phase == 's' ? 0 : 1);
    flow.tid = debug::kCollectiveTrack;
    flow.id = id;
    debug::AddTraceEvent(flow);
  }
  ASSERT_TRUE(debug::StopTrace().ok());
  EXPECT_FALSE(debug::TracingOn());

  nlohmann::json trace = ReadTrace(Path("trace.json"));
  ASSERT_FALSE(trace.contains("error")) << trace;
  EXPECT_EQ(CheckKeys(trace), "");
  EXPECT_EQ(CheckNesting(trace), "");
  EXPECT_EQ(CheckFlows(trace), "");
  EXPECT_EQ(trace["displayTimeUnit"], "ns");
  EXPECT_EQ(Names(trace, "X"), (std::vector<std::string>{"inner", "outer \"quoted\"\\name"}));
  EXPECT_EQ(Names(trace, "C"), (std::vector<std::string>{"device memory"}));
  double outer_dur = 0, inner_dur = 0;
  std::vector<std::string> process_names;
  for (const nlohmann::json& event : trace["traceEvents"]) {
    if (event["name"] == "inner") inner_dur = event["dur"];
    if (event["ph"] == "X" && event["name"] != "inner") {
      outer_dur = event["dur"];
      EXPECT_EQ(event["args"]["bytes"], 96.0);
      EXPECT_EQ(event["pid"], debug::kHostTracePid);
    }
    if (event["name"] == "process_name") process_names.push_back(event["args"]["name"]);
  }
  EXPECT_GE(inner_dur, 2000.0) << "2 ms slept inside, in microseconds";
  EXPECT_GE(outer_dur, inner_dur);
  EXPECT_NE(std::find(process_names.begin(), process_names.end(), "host"), process_names.end());
  EXPECT_NE(std::find(process_names.begin(), process_names.end(), "device zero"),
            process_names.end());
}

TEST_F(TraceWriterTest, SpansOfADeviceTrackNeverPartlyOverlap) {
  ASSERT_TRUE(debug::StartTrace(Path("trace.json")).ok());
  for (double start : {10.0, 15.0, 40.0}) {  // The second starts inside the first.
    debug::TraceEvent span{'X', "kernel", "kernel"};
    span.pid = debug::DeviceTracePid(1);
    span.tid = debug::kQueueTrack;
    span.ts_us = start;
    span.dur_us = 10;
    debug::AddTraceEvent(span);
  }
  ASSERT_TRUE(debug::StopTrace().ok());
  nlohmann::json trace = ReadTrace(Path("trace.json"));
  EXPECT_EQ(CheckNesting(trace), "");
  std::vector<double> starts;
  for (const nlohmann::json& event : trace["traceEvents"]) {
    if (event["ph"] == "X") starts.push_back(event["ts"]);
  }
  EXPECT_EQ(starts, (std::vector<double>{10.0, 20.0, 40.0}));
}

TEST_F(TraceWriterTest, TracingOffRecordsAndWritesNothing) {
  ASSERT_FALSE(debug::TracingOn());
  {
    debug::ScopedTraceSpan span("while off");
    debug::AddTraceEvent(debug::TraceEvent{'X', "added while off"});
  }
  EXPECT_TRUE(fs::is_empty(directory_)) << "no trace file appears while tracing is off";
  ASSERT_TRUE(debug::StartTrace(Path("trace.json")).ok());
  { debug::ScopedTraceSpan span("while on"); }
  ASSERT_TRUE(debug::StopTrace().ok());
  { debug::ScopedTraceSpan span("after stop"); }
  nlohmann::json trace = ReadTrace(Path("trace.json"));
  EXPECT_EQ(Names(trace, "X"), (std::vector<std::string>{"while on"}));
}

TEST_F(TraceWriterTest, StartingTwiceStoppingTwiceAndUnwritablePathsAreErrors) {
  EXPECT_EQ(debug::StopTrace().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(debug::StartTrace(Path("missing/directory/trace.json")).ok());
  EXPECT_FALSE(debug::TracingOn());
  ASSERT_TRUE(debug::StartTrace(Path("first.json")).ok());
  EXPECT_EQ(debug::StartTrace(Path("second.json")).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(debug::StartDetachedTrace(Path("third.json"), 10).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(debug::StopTrace().ok());
  EXPECT_EQ(debug::StopTrace().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(fs::exists(Path("second.json")));
}

TEST_F(TraceWriterTest, ADetachedCaptureReturnsAtOnceAndWritesWhenItsTimeIsUp) {
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(debug::StartDetachedTrace(Path("detached.json"), 300).ok());
  const double returned_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(returned_ms, 100.0) << "the caller is not blocked for the capture's 300 ms";
  EXPECT_TRUE(debug::TracingOn());
  { debug::ScopedTraceSpan span("inside the window"); }
  // Written by the profiler's thread, at about 300 ms.
  while (debug::TracingOn() &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double stopped_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(debug::TracingOn());
  EXPECT_GE(stopped_ms, 290.0);
  { debug::ScopedTraceSpan span("after the window"); }
  // The file is complete once the next trace can start (it joins the capture's thread).
  ASSERT_TRUE(debug::StartTrace(Path("next.json")).ok());
  ASSERT_TRUE(debug::StopTrace().ok());
  nlohmann::json trace = ReadTrace(Path("detached.json"));
  ASSERT_FALSE(trace.contains("error")) << trace;
  EXPECT_EQ(CheckKeys(trace), "");
  EXPECT_EQ(Names(trace, "X"), (std::vector<std::string>{"inside the window"}));
}

TEST_F(TraceWriterTest, StoppingADetachedCaptureEarlyWritesIt) {
  ASSERT_TRUE(debug::StartDetachedTrace(Path("early.json"), 60000).ok());
  { debug::ScopedTraceSpan span("early"); }
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(debug::StopTrace().ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5))
      << "stop does not wait for the capture's minute";
  EXPECT_EQ(Names(ReadTrace(Path("early.json")), "X"), (std::vector<std::string>{"early"}));
}

}  // namespace
}  // namespace vkspmd::testing
