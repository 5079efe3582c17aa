// Buckets of all-reduces (exec/collective_step.h: BucketMember): a wave's all-reduces with the
// same groups, type and reducer run as one collective, on the host path (mapped and staged
// memory) and on the devices, bit for bit the CPU reference's results; an all-reduce that reads
// another's result, or differs in groups, type or reducer, runs apart.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "src/exec/mesh_executable.h"
#include "src/interp/evaluator.h"
#include "src/ir/parser.h"
#include "tests/exec/random_module.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

// Six all-reduces ready together after two kernels. Scheduled (collective_scheduling.h) as: %pairs,
// %ints, %largest, then %whole and %again (same groups, type and reducer: one bucket), then
// %twice, which reads %whole's result and so may not join that bucket: 5 collective runs.
constexpr char kProgram[] = R"(
HloModule buckets, num_partitions=4
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(%a, %b)
}
%int_sum (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %r = s32[] add(%a, %b)
}
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] maximum(%a, %b)
}
ENTRY %main (x: f32[300], i: s32[7]) -> (f32[300], f32[77], f32[300], f32[300], f32[300], s32[7]) {
  %x = f32[300] parameter(0)
  %i = s32[7] parameter(1)
  %n = f32[300] negate(%x)
  %e = f32[300] abs(%x)
  %head = f32[77] slice(%e), slice={[0:77]}
  %pairs = f32[300] all-reduce(%e), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%sum
  %ints = s32[7] all-reduce(%i), channel_id=2, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%int_sum
  %largest = f32[300] all-reduce(%n), channel_id=3, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%max
  %whole = f32[300] all-reduce(%n), channel_id=4, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%sum
  %again = f32[77] all-reduce(%head), channel_id=5, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%sum
  %twice = f32[300] all-reduce(%whole), channel_id=6, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%sum
  ROOT %t = (f32[300], f32[77], f32[300], f32[300], f32[300], s32[7]) tuple(%whole, %again, %twice, %pairs, %largest, %ints)
}
)";

class CollectiveBucketTest : public DeviceTest {
 protected:
  void TearDown() override {
    unsetenv("VKSPMD_DEVICE_COLLECTIVES");
    unsetenv("VKSPMD_ALL_REDUCE_BUCKETS");
    DeviceTest::TearDown();
  }

  // Fractional values of mixed magnitudes per device, so that another order of a sum shows in
  // its bits.
  static std::vector<std::vector<ir::Literal>> Arguments(const ir::Module& module) {
    std::vector<std::vector<ir::Literal>> arguments;
    for (int d = 0; d < 4; ++d) {
      std::vector<ir::Literal> values = RandomArguments(module, 31 + d, -1, 1);
      for (int64_t k = 0; k < values[0].ElementCount(); ++k) {
        values[0].SetFromDouble(k, values[0].GetAsDouble(k) * (d % 2 == 0 ? 1e4 : 1e-3));
      }
      arguments.push_back(std::move(values));
    }
    return arguments;
  }

  // Runs the program twice (the second replays the recording) and checks every device's results
  // against the reference bit for bit; returns device 0's collective runs per run.
  int64_t RunAndCompare(bool device_collectives) {
    setenv("VKSPMD_DEVICE_COLLECTIVES", device_collectives ? "1" : "0", 1);
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(kProgram);
    EXPECT_TRUE(module.ok()) << module.status();
    if (!module.ok()) return -1;
    std::vector<runtime::MeshDevice*> devices;
    for (int d = 0; d < 4; ++d) devices.push_back(&device(d));
    absl::StatusOr<std::unique_ptr<exec::MeshExecutable>> executable =
        exec::MeshExecutable::Compile(**module, devices);
    EXPECT_TRUE(executable.ok()) << executable.status();
    if (!executable.ok()) return -1;
    const std::vector<std::vector<ir::Literal>> arguments = Arguments(**module);
    absl::StatusOr<std::vector<ir::Literal>> reference =
        interp::EvaluateOnDevices(**module, arguments);
    EXPECT_TRUE(reference.ok()) << reference.status();
    if (!reference.ok()) return -1;
    for (int run = 0; run < 2; ++run) {
      absl::StatusOr<std::vector<ir::Literal>> results = (*executable)->Run(arguments);
      EXPECT_TRUE(results.ok()) << results.status();
      if (!results.ok()) return -1;
      for (int d = 0; d < 4; ++d) {
        const auto& want = (*reference)[d].tuple_elements();
        const auto& got = (*results)[d].tuple_elements();
        for (size_t k = 0; k < want.size(); ++k) {
          EXPECT_TRUE(got[k].bytes() == want[k].bytes())
              << "run " << run << ", device " << d << ", output " << k;
        }
      }
    }
    if (device_collectives) {
      EXPECT_EQ((*executable)->executable(0).device_collective_count(),
                static_cast<size_t>((*executable)->executable(0).collective_run_count()));
      EXPECT_EQ((*executable)->executable(0).last_host_waits(), 1);
    }
    return (*executable)->executable(0).collective_run_count();
  }
};

TEST_F(CollectiveBucketTest, HostPathRunsOneBucketEqualToTheReference) {
  OpenDevices(4);
  EXPECT_EQ(RunAndCompare(false), 5);
}

TEST_F(CollectiveBucketTest, DevicePathRunsOneBucketEqualToTheReference) {
  OpenDevices(4, [](runtime::RuntimeConfig& config) { config.shared_queues = true; });
  for (int d = 1; d < 4; ++d) ASSERT_EQ(device(d).handle(), device(0).handle());
  EXPECT_EQ(RunAndCompare(true), 5);
}

// VKSPMD_ALL_REDUCE_BUCKETS=0: each all-reduce alone, the same bits.
TEST_F(CollectiveBucketTest, BucketsCanBeTurnedOff) {
  setenv("VKSPMD_ALL_REDUCE_BUCKETS", "0", 1);
  OpenDevices(4);
  EXPECT_EQ(RunAndCompare(false), 6);
}

}  // namespace
}  // namespace vkspmd::testing
