// The lazy runtime: a training-style loop compiles once even when its learning rate changes every
// step; assign keeps a tensor's identity and sharding; meshes over subsets of the devices; the
// VKSPMD_DEBUG analysis names the cause, graph and the caller's line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "src/lazy/engine.h"
#include "src/lazy/lowering.h"
#include "src/lazy/trace_manual.h"
#include "src/lazy/trace_ops.h"
#include "tests/lazy/lazy_test_util.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

// Ten steps of gradient descent on a linear least-squares problem, the learning rate decaying
// every step; returns the losses and the final weight.
std::pair<std::vector<double>, std::vector<float>> Train(const Mesh* mesh) {
  manual_seed(5);
  Tensor w = randn({8, 4});
  Tensor x = randn({6, 8});
  Tensor y = randn({6, 4});
  if (mesh != nullptr) {
    mark_sharding(w, *mesh, {None, "tp"});
    mark_sharding(x, *mesh, {"dp", None});
  }
  std::vector<double> losses;
  for (int step = 0; step < 10; ++step) {
    Tensor error = matmul(x, w) - y;
    Tensor loss = (error * error).mean();
    Tensor gradient = matmul(x.t(), error) * (2.0 / 24);
    w -= gradient * (0.1 / (1 + step));  // The scalar is a graph parameter.
    mark_step();
    losses.push_back(loss.item());
  }
  return {losses, w.to_vector<float>()};
}

TEST(RuntimeTest, TenStepsCompileOnceWhileTheLearningRateChanges) {
  Mesh mesh({2, 2}, {}, {"dp", "tp"});
  reset_metrics();
  auto [losses, weight] = Train(&mesh);
  Metrics counters = metrics();
  EXPECT_EQ(counters.compile_count, 1) << metrics_report();
  EXPECT_EQ(counters.execute_count, 10);
  EXPECT_EQ(counters.cache_hits, 9);
  EXPECT_GT(counters.collective_bytes, 0);
  EXPECT_LT(losses.back(), losses.front());
  auto [single_losses, single_weight] = Train(nullptr);
  for (size_t k = 0; k < losses.size(); ++k) {
    EXPECT_NEAR(losses[k], single_losses[k], 1e-5 * std::max(1.0, single_losses[k]));
  }
  for (size_t k = 0; k < weight.size(); ++k) EXPECT_NEAR(weight[k], single_weight[k], 1e-5);
  EXPECT_NE(metrics_report().find("CompileCount"), std::string::npos);
}

TEST(RuntimeTest, AssignKeepsShardingAndOldValuesStay) {
  Mesh mesh({4}, {}, {"x"});
  Tensor t = tensor(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {8});
  ShardedTensor sharded = mark_sharding(t, mesh, {"x"});
  Tensor before = t * 1;
  t.assign(t * 10);
  t += 1;
  sync();
  EXPECT_EQ(sharded.sharding_spec(), "{devices=[4]<=[4]}");
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{11, 21, 31, 41, 51, 61, 71, 81}));
  EXPECT_EQ(before.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_THROW(t.assign(ones({3})), Error);
}

TEST(RuntimeTest, MeshesOverSubsetsOfTheDevices) {
  Mesh left({2, 2}, {0, 1, 2, 3});
  Mesh right({2, 2}, {7, 6, 5, 4});
  Tensor a = arange(12).reshape({4, 3}).to(float32);
  sync();
  ShardedTensor on_left = mark_sharding(a, left, {0, None});
  Tensor doubled = on_left * 2;
  Tensor moved = doubled * 1;
  sync();
  ShardedTensor on_right = mark_sharding(moved, right, {1, 0});
  Tensor result = on_right + 1;
  std::vector<float> expected;
  for (int i = 0; i < 12; ++i) expected.push_back(static_cast<float>(2 * i + 1));
  EXPECT_EQ(result.to_vector<float>(), expected);
  // Tile (i, j) is on mesh device (j, i): dim 0 follows mesh axis 1.
  EXPECT_EQ(on_right.sharding_spec(), "{devices=[2,2]7,5,6,4}");
  std::vector<int64_t> devices;
  for (const LocalShard& shard : on_right.local_shards()) devices.push_back(shard.device);
  EXPECT_EQ(devices, (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_THROW(on_left + on_right, Error);  // Different meshes: move one first.
}

TEST(RuntimeTest, IntermediateShardingIsPropagatedWithoutExecuting) {
  Mesh mesh({2, 2});
  Tensor x = randn({8, 6});
  mark_sharding(x, mesh, {0, None});
  Tensor y = exp(x) + 1;  // Not executed: its sharding comes from propagation.
  reset_metrics();
  EXPECT_EQ(sharding_spec(y), "{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
  EXPECT_EQ(metrics().execute_count, 0);
}

// Tracing step k+2 overlaps the devices' work on step k+1 only if what a training loop does
// meanwhile (read step k's loss, place the next batch on the mesh) does not queue behind k+1. The
// worker is kept busy here (as by a running step) until the test releases it or 5 s pass.
TEST(RuntimeTest, ReadingAComputedValueAndPlacingHostDataDoNotWaitForQueuedWork) {
  Mesh mesh({2});
  Tensor computed = arange(4).to(float32) * 3;
  sync();
  wait_device_ops();
  std::atomic<bool> started{false}, release{false}, timed_out{false};
  std::thread busy([&] {
    (void)lazy::Engine::Get().Call([&](lazy::DevicePool&) {
      started = true;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (!release && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      timed_out = !release;
      return absl::OkStatus();
    });
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const std::vector<float> read = computed.to_vector<float>();
  Tensor batch = tensor(std::vector<float>{1, 2, 3, 4}, {4});
  mark_sharding(batch, mesh, {0});
  const bool waited = timed_out;
  release = true;
  busy.join();
  EXPECT_FALSE(waited) << "the read or mark_sharding waited for the busy worker";
  EXPECT_EQ(read, (std::vector<float>{0, 3, 6, 9}));
  EXPECT_EQ((batch * 2).to_vector<float>(), (std::vector<float>{2, 4, 6, 8}));
}

// An optimizer's scalars are fresh host leaves every step; equal ones share one upload. A step
// repeated with the same scalars uploads nothing, one with a new scalar uploads only it, and a
// scalar tensor that is assigned (its value donated) never gives away a shared upload.
TEST(RuntimeTest, RepeatedScalarsAreUploadedOnce) {
  Tensor w = ones({16});
  Tensor counter =
      tensor(std::vector<float>{2}, {});  // A scalar of host data, like the repeated 2.0 below.
  auto step = [&](double rate) {
    w -= (w * 2.0 + 0.5) * rate;
    counter += 1;
    mark_step();
    return w.sum().item();
  };
  double expected = 16;
  auto expect = [&](double rate) {
    expected -= (2 * expected + 0.5 * 16) * rate;
    return expected;
  };
  EXPECT_NEAR(step(0.25), expect(0.25), 1e-4);
  wait_device_ops();
  reset_metrics();
  EXPECT_NEAR(step(0.25), expect(0.25), 1e-4);
  EXPECT_EQ(metrics().host_to_device_bytes, 0) << "the repeated scalars were uploaded again";
  reset_metrics();
  EXPECT_NEAR(step(0.125), expect(0.125), 1e-4);
  EXPECT_EQ(metrics().host_to_device_bytes, 4) << "only the new rate is uploaded";
  EXPECT_EQ(counter.item(), 5);
  Tensor two = tensor(std::vector<float>{2}, {}) *
               1;  // Reads the shared 2.0, which counter's donation left alone.
  EXPECT_EQ(two.item(), 2);
  // A scalar tensor whose upload is shared while it is only read, then assigned: the shared
  // upload is not donated to the update, so equal scalars read later still read 2.
  Tensor held = tensor(std::vector<float>{2}, {});
  Tensor read = held * 1;
  mark_step();
  held += 1;
  mark_step();
  EXPECT_EQ(held.item(), 3);
  EXPECT_EQ(read.item(), 2);
  EXPECT_EQ((tensor(std::vector<float>{2}, {}) * 1).item(), 2);
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

TEST(RuntimeTest, DebugAnalysisNamesCauseGraphAndSourceLine) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("vkspmd-debug-" + std::to_string(getpid())))
          .string();
  std::filesystem::remove(path);
  setenv("VKSPMD_DEBUG", "1", 1);
  setenv("VKSPMD_DEBUG_FILE", path.c_str(), 1);
  Tensor t = ones({3}) * 2;
  const int sync_line = __LINE__ + 1;
  sync();
  Tensor u = t + t;
  const int read_line = __LINE__ + 1;
  const double value = u.sum().item();
  Tensor v = u * 3;
  const int step_line = __LINE__ + 1;
  mark_step();
  wait_device_ops();
  unsetenv("VKSPMD_DEBUG");
  unsetenv("VKSPMD_DEBUG_FILE");
  EXPECT_EQ(value, 12);
  const std::string log = ReadFile(path);
  std::filesystem::remove(path);
  for (const auto& [cause, line] : {std::pair<std::string, int>{"user sync", sync_line},
                                    {"value read", read_line},
                                    {"step marker", step_line}}) {
    const std::regex block("\\[vkspmd\\] execution analysis\\n  cause: " + cause +
                           "[^\\n]*\\n  source: runtime_test.cc:" + std::to_string(line) +
                           " [^\\n]*\\n  graph hash: [0-9a-f]{16}\\n  graph inputs: [0-9]+\\n"
                           "  graph outputs: [0-9]+\\n");
    EXPECT_TRUE(std::regex_search(log, block)) << cause << " at line " << line << " in\n" << log;
  }
  EXPECT_NE(log.find("compilation analysis"), std::string::npos);
  EXPECT_NE(log.find("graph inputs: 1\n  graph outputs: 1\n"), std::string::npos) << log;
}

TEST(RuntimeTest, AHundredThousandTracedOpsRun) {
  // 6,000 traced tanh used to overflow the stack in kernel generation. The oracle is the same
  // chain in double precision.
  const std::vector<float> start = {-1.5f, -0.25f, 0.0f, 0.5f, 2.0f};
  Tensor y = tensor(start);
  std::vector<double> expected(start.begin(), start.end());
  for (int k = 0; k < 100000; ++k) {
    y = k % 2 ? tanh(y) : -y;
    for (double& value : expected) value = k % 2 ? std::tanh(value) : -value;
  }
  const std::vector<float> actual = y.to_vector<float>();
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], 1e-5) << "element " << i;
  }
}

// Dropping the last tensor of a long trace that never ran frees its nodes in a loop: released
// recursively, node by node, 300,000 of them overflowed the 8 MiB stack (seen with ~Node's loop
// removed). Nothing runs; the oracle is that the process survives and the tensors stay usable.
TEST(RuntimeTest, DroppingAThreeHundredThousandOpTraceDoesNotRecurse) {
  Tensor x = tensor(std::vector<float>{1.0f, -2.0f});
  {
    Tensor y = x;
    for (int k = 0; k < 300000; ++k) y = -y;
  }
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1.0f, -2.0f}));
}

// The lowering cache: a sync whose graph signature it has seen reuses the lowered module's hash
// instead of lowering and hashing its text again. The signature must tell apart every graph that
// lowers differently.
TEST(RuntimeTest, GraphSignatureSeparatesGraphsThatLowerDifferently) {
  using lazy::NodePtr;
  const lazy::PlacementPtr device = lazy::SingleDevicePlacement();
  auto leaf = [](std::vector<float> values, ir::DType type = ir::DType::kF32) {
    ir::Literal literal(ir::Shape(type, {static_cast<int64_t>(values.size())}));
    return lazy::MakeHostLeaf(std::move(literal));
  };
  auto add = [](NodePtr a, NodePtr b) {
    return *lazy::trace::Binary(ir::Opcode::kAdd, std::move(a), std::move(b), "add");
  };
  auto scaled = [&](NodePtr x, double constant) {
    NodePtr c = *lazy::trace::Reshape(lazy::trace::Constant(constant, ir::DType::kF32), {1});
    return *lazy::trace::Binary(ir::Opcode::kMultiply, x, c, "mul");
  };
  auto signature = [&](const std::vector<NodePtr>& outputs) {
    absl::StatusOr<lazy::GraphSignature> result = lazy::Signature(outputs, *device);
    EXPECT_TRUE(result.ok()) << result.status();
    return std::make_pair(result->hash[0], result->hash[1]);
  };
  NodePtr p = leaf({1, 2}), q = leaf({3, 4});
  const auto base = signature({scaled(add(p, q), 2)});
  // Other leaves of the same shapes (the next step's data): the same graph.
  EXPECT_EQ(signature({scaled(add(leaf({5, 6}), leaf({7, 8})), 2)}), base);
  EXPECT_NE(signature({scaled(add(p, q), 3)}), base);  // Constants by value.
  EXPECT_NE(signature({scaled(add(p, p), 2)}), base);  // One parameter, not two.
  EXPECT_NE(signature({scaled(add(leaf({1, 2, 3}), leaf({1, 2, 3})), 2)}), base);  // Shapes.
  EXPECT_NE(signature({scaled(add(p, q), 2), add(p, q)}), base);                   // Outputs.
  NodePtr s = leaf({1, 2}, ir::DType::kS32);
  EXPECT_NE(signature({add(s, s)}), signature({add(p, p)}));  // Element types.
  // p - q and q - p are one program (parameter 0 minus parameter 1) bound to other leaves.
  EXPECT_EQ(signature({*lazy::trace::Binary(ir::Opcode::kSubtract, p, q, "sub")}),
            signature({*lazy::trace::Binary(ir::Opcode::kSubtract, q, p, "sub")}));
  // Parameters in the lowering's order.
  NodePtr graph = add(q, p);
  absl::StatusOr<lazy::GraphSignature> sig = lazy::Signature({graph}, *device);
  absl::StatusOr<lazy::LoweredGraph> lowered = lazy::Lower({graph}, device);
  ASSERT_TRUE(sig.ok() && lowered.ok());
  EXPECT_EQ(sig->parameters, lowered->parameters);
}

// Every attribute LowerNode copies is part of the op's hash: a Sharding custom call whose
// unspecified_dims differ lowers differently (the partitioner may keep those dims split), so it
// must not share a cached lowering with one that has none.
TEST(RuntimeTest, OpHashSeparatesUnspecifiedDims) {
  ir::Literal literal(ir::Shape(ir::DType::kF32, {2, 2}));
  lazy::NodePtr x = lazy::MakeHostLeaf(std::move(literal));
  auto sharding_op = [&](std::vector<int64_t> unspecified_dims) {
    ir::InstructionAttributes attributes;
    attributes.custom_call_target = "Sharding";
    attributes.unspecified_dims = std::move(unspecified_dims);
    absl::StatusOr<lazy::NodePtr> node =
        lazy::MakeOp(ir::Opcode::kCustomCall, {x}, std::move(attributes));
    EXPECT_TRUE(node.ok()) << node.status();
    lazy::HashOp(**node);
    return std::make_pair((*node)->op_hash[0], (*node)->op_hash[1]);
  };
  EXPECT_EQ(sharding_op({}), sharding_op({}));
  EXPECT_NE(sharding_op({0}), sharding_op({}));
  EXPECT_NE(sharding_op({0}), sharding_op({1}));
  EXPECT_NE(sharding_op({0, 1}), sharding_op({0}));
}

// A manual value whose manual operands do not lead back to its region's entry has unknown manual
// axes: an INTERNAL error, never "every axis" (which would let a collective over an auto axis
// through).
TEST(RuntimeTest, AManualValueWithoutItsRegionEntryIsAnError) {
  absl::StatusOr<spmd::Mesh> mesh = spmd::Mesh::Create({2, 2}, {}, {"x", "y"});
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  absl::StatusOr<lazy::PlacementPtr> placement = lazy::PlacementForMesh(*mesh);
  ASSERT_TRUE(placement.ok()) << placement.status();
  lazy::NodePtr orphan = lazy::MakeHostLeaf(ir::Literal(ir::Shape(ir::DType::kF32, {2})));
  orphan->placement = *placement;
  orphan->manual = true;
  absl::StatusOr<std::vector<int64_t>> axes = lazy::trace::RegionManualAxes(orphan);
  EXPECT_EQ(axes.status().code(), absl::StatusCode::kInternal) << axes.status();
  // A collective over "y" (the check every collective of the API makes first).
  absl::StatusOr<std::vector<int64_t>> over = lazy::trace::ManualAxes(orphan, {"y"}, "all_reduce");
  EXPECT_EQ(over.status().code(), absl::StatusCode::kInternal) << over.status();
  EXPECT_THAT(std::string(over.status().message()), ::testing::HasSubstr("has no entry"));
}

std::vector<float> RepeatedSteps(const Mesh* mesh, int steps) {
  Tensor w = tensor(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  Tensor b = tensor(std::vector<float>{1, -1, 2, -2}, {4});
  if (mesh != nullptr) mark_sharding(w, *mesh, {None, "tp"});
  mark_step();
  for (int step = 0; step < steps; ++step) {
    w.assign(relu(w * (1.0 - 0.01 * step) + b) - 0.5);  // New scalar data every step.
    mark_step();
  }
  return w.to_vector<float>();
}

TEST(RuntimeTest, ARepeatedStepIsLoweredOnceAndRecompilesFromTheCachedLowering) {
  Mesh mesh({2, 2}, {}, {"dp", "tp"});
  for (const Mesh* m : std::vector<const Mesh*>{nullptr, &mesh}) {
    SCOPED_TRACE(m == nullptr ? "one device" : "2x2 mesh");
    setenv("VKSPMD_LOWERING_CACHE", "0", 1);
    const std::vector<float> expected = RepeatedSteps(m, 6);
    unsetenv("VKSPMD_LOWERING_CACHE");
    // Lowers the steps once more, now into the cache (the first step, reading the initial w, may
    // be a graph of its own on the mesh: w's sharding there is the one mark_sharding gave).
    RepeatedSteps(m, 3);
    const int64_t before = lazy::LoweringCount();
    reset_metrics();
    EXPECT_EQ(RepeatedSteps(m, 6), expected);
    EXPECT_EQ(lazy::LoweringCount() - before, 0);
    EXPECT_EQ(metrics().compile_count, 0) << metrics_report();
    // Executables gone (devices closed): the cached lowering is compiled again from its text.
    lazy::Engine::Get().CloseDevices();
    reset_metrics();
    EXPECT_EQ(RepeatedSteps(m, 6), expected);
    EXPECT_GT(metrics().compile_count, 0);
    // Checking every cached lowering against a fresh one finds no difference.
    setenv("VKSPMD_CHECK_LOWERING_CACHE", "1", 1);
    EXPECT_EQ(RepeatedSteps(m, 6), expected);
    unsetenv("VKSPMD_CHECK_LOWERING_CACHE");
  }
}

TEST(RuntimeTest, ShutdownFreesDeviceValuesAndTheNextUseReopens) {
  // The devices the public API opens are the ones tensors run on.
  DeviceSet devices = DeviceSet::Open(2);
  ASSERT_GE(devices.size(), 2);
  Mesh mesh({2});
  Tensor kept = ones({4, 3});
  mark_sharding(kept, mesh, {0, None});
  Tensor doubled = kept * 2;
  sync();
  EXPECT_EQ(doubled.sum().item(), 24);
  EXPECT_EQ(static_cast<int>(memory_stats().size()), devices.size());
  HostTensor host = doubled.to_host();
  shutdown();
  EXPECT_NE(ThrownMessage([&] { doubled.sum().item(); }).find("the runtime was shut down"),
            std::string::npos);
  // Host copies stay readable, and new work opens the devices again.
  EXPECT_EQ(host.values<float>()[0], 2);
  Tensor fresh = ones({5}) * 3;
  EXPECT_EQ(fresh.sum().item(), 15);
  shutdown();
  shutdown();  // Idempotent.
}

}  // namespace
}  // namespace vkspmd::testing
