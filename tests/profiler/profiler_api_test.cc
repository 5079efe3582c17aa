// The public profiler API over the lazy runtime: stop_trace includes the work sync() only started,
// trace_detached returns at once and writes its window by itself, misuse throws vkspmd::Error.
#include <gtest/gtest.h>
#include <unistd.h>
#include <vkspmd/vkspmd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "tests/profiler/trace_check.h"

namespace vkspmd::testing {
namespace {

namespace fs = std::filesystem;

std::string TempPath(const std::string& name) {
  return (fs::temp_directory_path() /
          ("vkspmd_profiler_api_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// Span counts by category ("kernel", "collective", "host") and host span name.
std::map<std::string, int> Counts(const nlohmann::json& trace) {
  std::map<std::string, int> counts;
  for (const nlohmann::json& event : trace["traceEvents"]) {
    if (event["ph"] != "X") continue;
    ++counts[event.value("cat", "")];
    ++counts[event["name"].get<std::string>()];
  }
  return counts;
}

// A sharded matmul and add on a 2-device mesh: kernels and one all-reduce.
Tensor Compute() {
  Mesh mesh({2}, {}, {"model"});
  Tensor x = randn({8, 16});
  Tensor w = randn({16, 4});
  mark_sharding(x, mesh, {None, "model"});
  mark_sharding(w, mesh, {"model", None});
  return matmul(x, w) + 1.0f;
}

TEST(ProfilerApiTest, StopTraceWaitsForTheWorkSyncStarted) {
  const std::string path = TempPath("stop.json");
  profiler::start_trace(path);
  EXPECT_TRUE(profiler::tracing());
  Tensor result = Compute();
  sync();  // Starts the work and returns.
  profiler::stop_trace();
  EXPECT_FALSE(profiler::tracing());
  nlohmann::json trace = ReadTrace(path);
  ASSERT_FALSE(trace.contains("error")) << trace;
  EXPECT_EQ(CheckKeys(trace), "");
  EXPECT_EQ(CheckNesting(trace), "");
  EXPECT_EQ(CheckFlows(trace), "");
  std::map<std::string, int> counts = Counts(trace);
  EXPECT_EQ(counts["launch graph"], 1);
  EXPECT_GT(counts["kernel"], 0);
  EXPECT_EQ(counts["collective"], 2) << "the all-reduce, on each device";
  fs::remove(path);
}

TEST(ProfilerApiTest, MisuseThrows) {
  EXPECT_THROW(profiler::stop_trace(), Error);
  const std::string path = TempPath("misuse.json");
  profiler::start_trace(path);
  EXPECT_THROW(profiler::start_trace(path), Error);
  EXPECT_THROW(profiler::trace_detached(path, 10), Error);
  profiler::stop_trace();
  EXPECT_THROW(profiler::start_trace("/nonexistent-directory/trace.json"), Error);
  fs::remove(path);
}

TEST(ProfilerApiTest, TraceDetachedReturnsAtOnceAndCapturesItsWindow) {
  const std::string path = TempPath("detached.json");
  const auto start = std::chrono::steady_clock::now();
  profiler::trace_detached(path, 2000);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));
  Tensor result = Compute();
  EXPECT_EQ(result.to_vector<float>().size(), 32u);  // Runs within the window, and waits.
  while (profiler::tracing() &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_FALSE(profiler::tracing());
  profiler::start_trace(TempPath("after.json"));  // Joins the capture's thread: the file is whole.
  profiler::stop_trace();
  nlohmann::json trace = ReadTrace(path);
  ASSERT_FALSE(trace.contains("error")) << trace;
  EXPECT_EQ(CheckKeys(trace), "");
  EXPECT_EQ(Counts(trace)["launch graph"], 1);
  EXPECT_GT(Counts(trace)["kernel"], 0);
  fs::remove(path);
  fs::remove(TempPath("after.json"));
}

}  // namespace
}  // namespace vkspmd::testing
