// Device spans of traced runs: a 2-device program whose contracting dot ends in an all-reduce is
// run untraced, then twice traced; the trace has one span per dispatched kernel of each traced run
// on each device, one collective span per run and device joined by a flow, and nests per track.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "src/debug/trace_writer.h"
#include "src/exec/mesh_program.h"
#include "src/ir/parser.h"
#include "tests/profiler/trace_check.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

namespace fs = std::filesystem;

constexpr char kContractingSplitDot[] = R"(
HloModule contracting_split
ENTRY %main (x: f32[4,8], w: f32[8,6]) -> f32[4,6] {
  %x = f32[4,8]{1,0} parameter(0), sharding={devices=[1,2]0,1}
  %w = f32[8,6]{1,0} parameter(1), sharding={devices=[2,1]0,1}
  %dot = f32[4,6]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={replicated}
  ROOT %scaled = f32[4,6]{1,0} multiply(%dot, %dot), sharding={replicated}
}
)";

class TraceDeviceTest : public DeviceTest {
 protected:
  void SetUp() override {
    OpenDevices(2);
    path_ = (fs::temp_directory_path() /
             ("vkspmd_trace_device_" + std::to_string(::getpid()) + ".json"))
                .string();
  }
  void TearDown() override {
    if (debug::TracingOn()) (void)debug::StopTrace();
    fs::remove(path_);
    DeviceTest::TearDown();
  }
  std::string path_;
};

TEST_F(TraceDeviceTest, EveryDispatchedKernelAndCollectiveOfATracedRunHasASpan) {
  VKSPMD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Module> module,
                              ir::ParseAndVerifyModule(kContractingSplitDot));
  VKSPMD_ASSERT_OK_AND_ASSIGN(spmd::Mesh mesh, spmd::Mesh::Create({2}));
  VKSPMD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<exec::MeshProgram> program,
                              exec::MeshProgram::Create(*module, mesh, {&device(0), &device(1)}));
  std::vector<std::unique_ptr<exec::ShardedBuffer>> shards;
  for (size_t p = 0; p < 2; ++p) {
    ir::Literal value(module->entry()->parameter(p)->shape());
    VKSPMD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<exec::ShardedBuffer> shard,
                                program->Scatter(value, p));
    shards.push_back(std::move(shard));
  }
  const std::vector<const exec::ShardedBuffer*> arguments = {shards[0].get(), shards[1].get()};
  VKSPMD_ASSERT_OK(program->Run(arguments).status());  // Untraced: adds nothing below.
  // Untraced runs replay the command buffers recorded at compile time, without queries.
  EXPECT_EQ(program->executable().executable(0).recording_count(), 1);

  constexpr int kTracedRuns = 2;
  VKSPMD_ASSERT_OK(debug::StartTrace(path_));
  for (int run = 0; run < kTracedRuns; ++run) VKSPMD_ASSERT_OK(program->Run(arguments).status());
  VKSPMD_ASSERT_OK(debug::StopTrace());
  VKSPMD_ASSERT_OK(program->Run(arguments).status());  // After the stop: adds nothing either.
  EXPECT_EQ(program->executable().executable(0).recording_count(), 2)
      << "the first traced run records once more, with timestamp queries; later ones reuse it";

  nlohmann::json trace = ReadTrace(path_);
  ASSERT_FALSE(trace.contains("error")) << trace;
  EXPECT_EQ(CheckKeys(trace), "");
  EXPECT_EQ(CheckNesting(trace), "");
  EXPECT_EQ(CheckFlows(trace), "");

  std::map<int, int> kernels, collectives, flows;  // By pid.
  for (const nlohmann::json& event : trace["traceEvents"]) {
    const int pid = event["pid"];
    if (event["ph"] == "X" && event.value("cat", "") == "kernel") ++kernels[pid];
    if (event["ph"] == "s" || event["ph"] == "f") ++flows[pid];
    if (event["ph"] == "X" && event.value("cat", "") == "collective") {
      ++collectives[pid];
      EXPECT_EQ(event["args"]["op"], "all-reduce");
      EXPECT_EQ(event["args"]["input_bytes"], 4 * 6 * 4) << "each device's partial f32[4,6]";
    }
  }
  for (int d = 0; d < 2; ++d) {
    const exec::Executable& executable = program->executable().executable(d);
    const int pid = debug::DeviceTracePid(device(d).mesh_index());
    const int dispatches = static_cast<int>(executable.kernel_count()) - 1;  // Less the collective.
    ASSERT_GT(dispatches, 0);
    EXPECT_EQ(kernels[pid], kTracedRuns * dispatches) << "device " << d;
    EXPECT_EQ(collectives[pid], kTracedRuns) << "device " << d;
    EXPECT_EQ(flows[pid], kTracedRuns) << "device " << d << ": one flow end per collective";
  }
}

}  // namespace
}  // namespace vkspmd::testing
