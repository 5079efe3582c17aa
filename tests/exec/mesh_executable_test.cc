// Per-device programs with collectives on several lavapipe devices, one host thread each, against
// the CPU reference's emulated devices: every multi-device testdata program, collectives along
// dims other than the first (which need re-layouts on the host), three devices, partition-id, and
// kernels before and after each collective.
#include "src/exec/mesh_executable.h"

#include <gtest/gtest.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "src/interp/evaluator.h"
#include "src/io/npy.h"
#include "src/ir/parser.h"
#include "src/spmd/partition_spec.h"
#include "src/spmd/partitioner.h"
#include "tests/exec/random_module.h"
#include "tests/exec/testdata_programs.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

class MeshExecutableTest : public DeviceTest {
 protected:
  // Runs `module` on as many devices as it has and compares every device's result with the
  // reference evaluator's, within 1e-5 relative (kernels before the collectives compute in f32
  // on the device; the collectives themselves combine in the evaluator's order).
  void ExpectMatchesReference(const ir::Module& module,
                              const std::vector<std::vector<ir::Literal>>& arguments) {
    const int n = static_cast<int>(arguments.size());
    absl::StatusOr<std::vector<ir::Literal>> reference =
        interp::EvaluateOnDevices(module, arguments);
    ASSERT_TRUE(reference.ok()) << reference.status();
    std::vector<runtime::MeshDevice*> devices;
    for (int d = 0; d < n; ++d) devices.push_back(&device(d));
    absl::StatusOr<std::unique_ptr<exec::MeshExecutable>> mesh =
        exec::MeshExecutable::Compile(module, devices);
    ASSERT_TRUE(mesh.ok()) << mesh.status();
    absl::StatusOr<std::vector<ir::Literal>> results = (*mesh)->Run(arguments);
    ASSERT_TRUE(results.ok()) << results.status();
    for (int d = 0; d < n; ++d) {
      ASSERT_EQ((*results)[d].shape(), (*reference)[d].shape()) << "device " << d;
      for (int64_t i = 0; i < (*results)[d].ElementCount(); ++i) {
        ASSERT_NEAR((*results)[d].GetAsDouble(i), (*reference)[d].GetAsDouble(i),
                    1e-5 * std::max(1.0, std::fabs((*reference)[d].GetAsDouble(i))))
            << "device " << d << " element " << i;
      }
    }
  }

  std::vector<std::vector<ir::Literal>> RandomPerDevice(const ir::Module& module, int n) {
    std::vector<std::vector<ir::Literal>> arguments;
    for (int d = 0; d < n; ++d) arguments.push_back(RandomArguments(module, 100 + d));
    return arguments;
  }
};

TEST_F(MeshExecutableTest, MultiDeviceTestdataProgramsMatchTheReference) {
  int ran = 0;
  for (const TestdataProgram& program : ReadTestdataPrograms(VKSPMD_TESTDATA_DIR)) {
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(program.text);
    ASSERT_TRUE(module.ok()) << program.path << ": " << module.status();
    const int n = static_cast<int>((*module)->replica_count() * (*module)->partition_count());
    if (n == 1) continue;
    SCOPED_TRACE(program.path.string());
    OpenDevices(n);
    std::vector<std::vector<ir::Literal>> arguments = RandomPerDevice(**module, n);
    const std::string& base = program.base;
    for (int d = 0; d < n; ++d) {
      for (size_t k = 0; k < arguments[d].size(); ++k) {
        absl::StatusOr<ir::Literal> stored =
            io::ReadNpyFile(absl::StrCat(base, ".dev", d, ".arg", k, ".npy"));
        if (stored.ok() && stored->shape() == arguments[d][k].shape()) {
          arguments[d][k] = std::move(*stored);
        }
      }
    }
    std::vector<runtime::MeshDevice*> devices;
    for (int d = 0; d < n; ++d) devices.push_back(&device(d));
    absl::StatusOr<std::unique_ptr<exec::MeshExecutable>> mesh =
        exec::MeshExecutable::Compile(**module, devices);
    if (!mesh.ok()) {
      // Not supported on devices yet: the error must be UNIMPLEMENTED and name the instruction.
      EXPECT_EQ(mesh.status().code(), absl::StatusCode::kUnimplemented) << mesh.status();
      continue;
    }
    mesh->reset();
    ExpectMatchesReference(**module, arguments);
    ++ran;
  }
  EXPECT_GE(ran, 5) << "all-reduce, all-gather, all-to-all, reduce-scatter, collective-permute";
}

TEST_F(MeshExecutableTest, CollectivesAlongInnerDimsOnThreeDevices) {
  // Each collective's chunks along dim 1 are strided in memory; kernels run before and after
  // each collective, and partition-id shifts every device's values.
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(R"(
HloModule inner_dims, num_partitions=3
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[4,6,5]) -> (f32[4,18,5], f32[4,2,5], f32[4,6,5], f32[4,6,5]) {
  %x = f32[4,6,5] parameter(0)
  %id = u32[] partition-id()
  %idf = f32[] convert(%id)
  %ids = f32[4,6,5] broadcast(%idf), dimensions={}
  %shifted = f32[4,6,5] add(%x, %ids)
  %gathered = f32[4,18,5] all-gather(%shifted), channel_id=1, replica_groups={{0,1,2}}, dimensions={1}, use_global_device_ids=true
  %scattered = f32[4,2,5] reduce-scatter(%shifted), channel_id=2, replica_groups={{0,1,2}}, dimensions={1}, use_global_device_ids=true, to_apply=%add
  %exchanged = f32[4,6,5] all-to-all(%shifted), channel_id=3, replica_groups={{0,1,2}}, dimensions={1}
  %rotated = f32[4,6,5] collective-permute(%shifted), channel_id=4, source_target_pairs={{0,1},{1,2},{2,0}}
  %doubled = f32[4,6,5] multiply(%rotated, %rotated)
  ROOT %t = (f32[4,18,5], f32[4,2,5], f32[4,6,5], f32[4,6,5]) tuple(%gathered, %scattered, %exchanged, %doubled)
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  OpenDevices(3);
  std::vector<std::vector<ir::Literal>> arguments = RandomPerDevice(**module, 3);
  // Tuple results: compare element by element through the reference.
  absl::StatusOr<std::vector<ir::Literal>> reference =
      interp::EvaluateOnDevices(**module, arguments);
  ASSERT_TRUE(reference.ok()) << reference.status();
  std::vector<runtime::MeshDevice*> devices = {&device(0), &device(1), &device(2)};
  absl::StatusOr<std::unique_ptr<exec::MeshExecutable>> mesh =
      exec::MeshExecutable::Compile(**module, devices);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  absl::StatusOr<std::vector<ir::Literal>> results = (*mesh)->Run(arguments);
  ASSERT_TRUE(results.ok()) << results.status();
  for (int d = 0; d < 3; ++d) {
    for (size_t k = 0; k < 4; ++k) {
      const ir::Literal& got = (*results)[d].tuple_elements()[k];
      const ir::Literal& want = (*reference)[d].tuple_elements()[k];
      ASSERT_EQ(got.shape(), want.shape());
      for (int64_t i = 0; i < got.ElementCount(); ++i) {
        ASSERT_FLOAT_EQ(got.Get<float>(i), want.Get<float>(i))
            << "device " << d << " result " << k << " element " << i;
      }
    }
  }
}

TEST_F(MeshExecutableTest, ReplicasTimesPartitionsWithCrossReplicaAndFlattenedIdGroups) {
  // 2 replicas x 2 partitions = 4 devices: a cross-replica all-reduce (no channel: groups of
  // replicas per partition) and an all-gather over flattened device ids {0,1} and {2,3}.
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(R"(
HloModule grid, replica_count=2, num_partitions=2
%add (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %s = s32[] add(%a, %b)
}
ENTRY %main (x: s32[3,5]) -> (s32[3,5], s32[6,5]) {
  %x = s32[3,5] parameter(0)
  %r = u32[] replica-id()
  %rs = s32[] convert(%r)
  %rb = s32[3,5] broadcast(%rs), dimensions={}
  %y = s32[3,5] add(%x, %rb)
  %summed = s32[3,5] all-reduce(%y), replica_groups={{0,1}}, to_apply=%add
  %gathered = s32[6,5] all-gather(%y), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, dimensions={0}
  ROOT %t = (s32[3,5], s32[6,5]) tuple(%summed, %gathered)
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  OpenDevices(4);
  std::vector<std::vector<ir::Literal>> arguments = RandomPerDevice(**module, 4);
  absl::StatusOr<std::vector<ir::Literal>> reference =
      interp::EvaluateOnDevices(**module, arguments);
  ASSERT_TRUE(reference.ok()) << reference.status();
  absl::StatusOr<std::unique_ptr<exec::MeshExecutable>> mesh =
      exec::MeshExecutable::Compile(**module, {&device(0), &device(1), &device(2), &device(3)});
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  absl::StatusOr<std::vector<ir::Literal>> results = (*mesh)->Run(arguments);
  ASSERT_TRUE(results.ok()) << results.status();
  for (int d = 0; d < 4; ++d) {
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_EQ((*results)[d].tuple_elements()[k].bytes(),
                (*reference)[d].tuple_elements()[k].bytes())
          << "device " << d << " result " << k;
    }
  }
}

// A driver whose queue reports the device lost on submission.
VKAPI_ATTR VkResult VKAPI_CALL LostSubmit(VkQueue, uint32_t, const VkSubmitInfo*, VkFence) {
  return VK_ERROR_DEVICE_LOST;
}

TEST_F(MeshExecutableTest, AFailingDeviceReleasesItsPeersAtOnce) {
  // Device 1 loses its queue before the all-reduce; device 0 waits there and must be released
  // by the abort, not by the 60 s timeout, and the error names device 1.
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(R"(
HloModule pair, num_partitions=2
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8] parameter(0)
  %e = f32[8] exponential(%x)
  ROOT %r = f32[8] all-reduce(%e), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  OpenDevices(2);
  absl::StatusOr<std::unique_ptr<exec::MeshExecutable>> mesh =
      exec::MeshExecutable::Compile(**module, {&device(0), &device(1)});
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  device(1).device().mutable_functions().vkQueueSubmit = &LostSubmit;
  auto start = std::chrono::steady_clock::now();
  absl::Status status = (*mesh)->Run(RandomPerDevice(**module, 2)).status();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("VK_ERROR_DEVICE_LOST"), absl::string_view::npos) << status;
}

TEST_F(MeshExecutableTest, PartitionsRunOnAnySubsetOfTheMeshDevicesInAnyOrder) {
  // Partition p runs on devices[p]: here mesh devices 5, 2, 7 and 0 of 8.
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(R"(
HloModule subset, num_partitions=4
ENTRY %main (x: f32[2,3]) -> f32[8,3] {
  %x = f32[2,3] parameter(0)
  %id = u32[] partition-id()
  %idf = f32[] convert(%id)
  %ids = f32[2,3] broadcast(%idf), dimensions={}
  %y = f32[2,3] add(%x, %ids)
  ROOT %g = f32[8,3] all-gather(%y), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, dimensions={0}
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  OpenDevices(8);
  std::vector<std::vector<ir::Literal>> arguments = RandomPerDevice(**module, 4);
  absl::StatusOr<std::vector<ir::Literal>> reference =
      interp::EvaluateOnDevices(**module, arguments);
  ASSERT_TRUE(reference.ok()) << reference.status();
  absl::StatusOr<std::unique_ptr<exec::MeshExecutable>> mesh =
      exec::MeshExecutable::Compile(**module, {&device(5), &device(2), &device(7), &device(0)});
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  absl::StatusOr<std::vector<ir::Literal>> results = (*mesh)->Run(arguments);
  ASSERT_TRUE(results.ok()) << results.status();
  for (int p = 0; p < 4; ++p) {
    EXPECT_EQ((*results)[p].bytes(), (*reference)[p].bytes()) << "partition " << p;
  }
}

TEST_F(MeshExecutableTest, ShardedBuffersStayOnTheDevicesBetweenRuns) {
  // A partitioned step y = tanh(x @ w) * 0.5 + x on a 2x2 mesh, x and y split by rows and w by
  // columns; its result feeds the next run as x, three times, without leaving the devices.
  // Gathering the result equals the CPU reference applied three times.
  constexpr char kStep[] = R"(
HloModule step
ENTRY %main (x: f32[6,8], w: f32[8,8]) -> f32[6,8] {
  %x = f32[6,8] parameter(0)
  %w = f32[8,8] parameter(1)
  %d = f32[6,8] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %t = f32[6,8] tanh(%d)
  %half = f32[] constant(0.5)
  %halves = f32[6,8] broadcast(%half), dimensions={}
  %s = f32[6,8] multiply(%t, %halves)
  ROOT %y = f32[6,8] add(%s, %x)
}
)";
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(kStep);
  ASSERT_TRUE(module.ok()) << module.status();
  const spmd::Mesh mesh = *spmd::Mesh::Create({2, 2});
  auto annotate = [&](int64_t parameter, const char* spec) {
    ir::Instruction* instruction = (*module)->entry()->parameter(parameter);
    instruction->set_sharding(
        *spmd::PartitionSpecToSharding(*spmd::PartitionSpec::Parse(spec), mesh, 2));
  };
  annotate(0, "(0, None)");
  annotate(1, "(None, 1)");
  (*module)->entry()->root()->set_sharding(
      *spmd::PartitionSpecToSharding(*spmd::PartitionSpec::Parse("(0, None)"), mesh, 2));
  absl::StatusOr<spmd::PartitionResult> partition = spmd::Partition(**module, mesh);
  ASSERT_TRUE(partition.ok()) << partition.status();
  OpenDevices(4);
  std::vector<runtime::MeshDevice*> devices = {&device(0), &device(1), &device(2), &device(3)};
  absl::StatusOr<std::unique_ptr<exec::MeshExecutable>> executable =
      exec::MeshExecutable::Compile(*partition->module, devices);
  ASSERT_TRUE(executable.ok()) << executable.status();
  std::vector<ir::Literal> arguments = RandomArguments(**module, 9);
  std::vector<std::unique_ptr<exec::ShardedBuffer>> inputs;
  for (int p = 0; p < 2; ++p) {
    absl::StatusOr<std::unique_ptr<exec::ShardedBuffer>> scattered = exec::ShardedBuffer::Scatter(
        arguments[p], partition->parameter_shardings[p][0], mesh, devices);
    ASSERT_TRUE(scattered.ok()) << scattered.status();
    inputs.push_back(std::move(*scattered));
  }
  ASSERT_EQ(partition->result_shardings[0], partition->parameter_shardings[0][0])
      << "the result comes back split like x, so it can be fed back";
  ir::Literal expected = arguments[0];
  for (int step = 0; step < 3; ++step) {
    absl::StatusOr<std::vector<std::unique_ptr<exec::ShardedBuffer>>> outputs =
        (*executable)
            ->RunSharded({inputs[0].get(), inputs[1].get()}, {(*module)->entry()->root()->shape()},
                         partition->result_shardings, mesh);
    ASSERT_TRUE(outputs.ok()) << outputs.status();
    inputs[0] = std::move((*outputs)[0]);
    absl::StatusOr<ir::Literal> next = interp::Evaluate(**module, {expected, arguments[1]});
    ASSERT_TRUE(next.ok()) << next.status();
    expected = std::move(*next);
  }
  absl::StatusOr<ir::Literal> gathered = inputs[0]->Gather();
  ASSERT_TRUE(gathered.ok()) << gathered.status();
  for (int64_t i = 0; i < expected.ElementCount(); ++i) {
    EXPECT_NEAR(gathered->Get<float>(i), expected.Get<float>(i), 1e-5) << "element " << i;
  }
}

TEST_F(MeshExecutableTest, DonatedParametersAreUpdatedInPlaceStepAfterStep) {
  // An SGD step w' = w - lr * x^T (x w) that returns (w', loss), w' aliased to w. On a 2x2 mesh
  // with w split by columns and x by rows, every device updates its own shard of w in the
  // buffer it was given: the result's shards are the donated buffers themselves, the commands
  // are recorded once more for them and never again, and after 4 steps w and every loss equal
  // the CPU reference's.
  constexpr char kStep[] = R"(
HloModule sgd, input_output_alias={ {0}: (0, {}, may-alias) }
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (w: f32[8,6], x: f32[10,8], lr: f32[]) -> (f32[8,6], f32[]) {
  %w = f32[8,6] parameter(0)
  %x = f32[10,8] parameter(1)
  %lr = f32[] parameter(2)
  %y = f32[10,6] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %g = f32[8,6] dot(%x, %y), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %lrs = f32[8,6] broadcast(%lr), dimensions={}
  %step = f32[8,6] multiply(%g, %lrs)
  %new_w = f32[8,6] subtract(%w, %step)
  %yy = f32[10,6] multiply(%y, %y)
  %zero = f32[] constant(0)
  %loss = f32[] reduce(%yy, %zero), dimensions={0,1}, to_apply=%add
  ROOT %out = (f32[8,6], f32[]) tuple(%new_w, %loss)
}
)";
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(kStep);
  ASSERT_TRUE(module.ok()) << module.status();
  const spmd::Mesh mesh = *spmd::Mesh::Create({2, 2});
  auto sharding = [&](const char* spec) {
    return *spmd::PartitionSpecToSharding(*spmd::PartitionSpec::Parse(spec), mesh, 2);
  };
  (*module)->entry()->parameter(0)->set_sharding(sharding("(None, 1)"));
  (*module)->entry()->parameter(1)->set_sharding(sharding("(0, None)"));
  for (const auto& instruction : (*module)->entry()->instructions()) {
    if (instruction->name() == "new_w") instruction->set_sharding(sharding("(None, 1)"));
  }
  absl::StatusOr<spmd::PartitionResult> partition = spmd::Partition(**module, mesh);
  ASSERT_TRUE(partition.ok()) << partition.status();
  ASSERT_EQ(partition->module->input_output_aliases().size(), 1u)
      << "w and w' are split alike, so the alias survives partitioning";
  OpenDevices(4);
  std::vector<runtime::MeshDevice*> devices = {&device(0), &device(1), &device(2), &device(3)};
  absl::StatusOr<std::unique_ptr<exec::MeshExecutable>> executable =
      exec::MeshExecutable::Compile(*partition->module, devices);
  ASSERT_TRUE(executable.ok()) << executable.status();
  std::vector<ir::Literal> arguments = RandomArguments(**module, 21);
  arguments[2] = ir::Literal::Create<float>(ir::DType::kF32, {}, {0.01f});
  std::vector<std::unique_ptr<exec::ShardedBuffer>> inputs;
  for (int p = 0; p < 3; ++p) {
    absl::StatusOr<std::unique_ptr<exec::ShardedBuffer>> scattered = exec::ShardedBuffer::Scatter(
        arguments[p], partition->parameter_shardings[p][0], mesh, devices);
    ASSERT_TRUE(scattered.ok()) << scattered.status();
    inputs.push_back(std::move(*scattered));
  }
  std::vector<uint64_t> serials;
  for (size_t d = 0; d < 4; ++d) serials.push_back(inputs[0]->shard(d).serial());
  const ir::Shape& result_shape = (*module)->entry()->root()->shape();
  std::vector<ir::Shape> leaves = {result_shape.tuple_elements()[0],
                                   result_shape.tuple_elements()[1]};
  ir::Literal expected_w = arguments[0];
  for (int step = 0; step < 4; ++step) {
    std::unique_ptr<exec::ShardedBuffer> w = std::move(inputs[0]);
    absl::StatusOr<std::vector<std::unique_ptr<exec::ShardedBuffer>>> outputs =
        (*executable)
            ->RunSharded({w.get(), inputs[1].get(), inputs[2].get()}, {true, false, false}, leaves,
                         partition->result_shardings, mesh);
    ASSERT_TRUE(outputs.ok()) << outputs.status();
    EXPECT_TRUE(w->donated());
    EXPECT_EQ(w->Gather().status().code(), absl::StatusCode::kFailedPrecondition);
    for (size_t d = 0; d < 4; ++d) {
      EXPECT_EQ((*outputs)[0]->shard(d).serial(), serials[d]) << "step " << step << " device " << d;
    }
    absl::StatusOr<ir::Literal> reference =
        interp::Evaluate(**module, {expected_w, arguments[1], arguments[2]});
    ASSERT_TRUE(reference.ok()) << reference.status();
    absl::StatusOr<ir::Literal> loss = (*outputs)[1]->Gather();
    ASSERT_TRUE(loss.ok()) << loss.status();
    const float expected_loss = reference->tuple_elements()[1].Get<float>(0);
    EXPECT_NEAR(loss->Get<float>(0), expected_loss, 1e-4 * std::fabs(expected_loss));
    expected_w = reference->tuple_elements()[0];
    inputs[0] = std::move((*outputs)[0]);
    if (step == 0) {
      // The donated value is gone: using it again is an error, not a read of stale memory.
      absl::Status reused =
          (*executable)
              ->RunSharded({w.get(), inputs[1].get(), inputs[2].get()}, {false, false, false},
                           leaves, partition->result_shardings, mesh)
              .status();
      EXPECT_EQ(reused.code(), absl::StatusCode::kFailedPrecondition) << reused;
    }
  }
  for (size_t d = 0; d < 4; ++d) {
    EXPECT_EQ((*executable)->executable(d).recording_count(), 2) << "device " << d;
  }
  absl::StatusOr<ir::Literal> w = inputs[0]->Gather();
  ASSERT_TRUE(w.ok()) << w.status();
  for (int64_t i = 0; i < expected_w.ElementCount(); ++i) {
    EXPECT_NEAR(w->Get<float>(i), expected_w.Get<float>(i),
                1e-5 * std::max(1.0f, std::fabs(expected_w.Get<float>(i))))
        << "element " << i;
  }
}

TEST_F(MeshExecutableTest, TheWrongNumberOfDevicesIsAClearError) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(R"(
HloModule two, num_partitions=2
ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %p = f32[4] collective-permute(%x), channel_id=1, source_target_pairs={{0,1},{1,0}}
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  OpenDevices(3);
  absl::Status status =
      exec::MeshExecutable::Compile(**module, {&device(0), &device(1), &device(2)}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("2 devices; 3 were given"), absl::string_view::npos) << status;
  // One device alone cannot run a collective.
  absl::StatusOr<std::unique_ptr<exec::Executable>> alone =
      exec::Executable::Compile(**module, device(0));
  ASSERT_TRUE(alone.ok()) << alone.status();
  ir::Literal x(ir::Shape(ir::DType::kF32, {4}));
  absl::Status run = (*alone)->Run({x}).status();
  EXPECT_EQ(run.code(), absl::StatusCode::kFailedPrecondition) << run;
  EXPECT_NE(run.message().find("needs all 2 devices"), absl::string_view::npos) << run;

  // A reducer the host cannot run is refused when the program compiles, not mid-run.
  module = ir::ParseAndVerifyModule(R"(
HloModule subtract, num_partitions=2
%sub (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] subtract(%a, %b)
}
ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %r = f32[4] all-reduce(%x), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%sub
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  status = exec::MeshExecutable::Compile(**module, {&device(0), &device(1)}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented) << status;
  EXPECT_NE(status.message().find("%r"), absl::string_view::npos) << status;
}

}  // namespace
}  // namespace vkspmd::testing
