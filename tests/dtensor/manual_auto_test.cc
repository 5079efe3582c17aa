// shard_map with auto axes (JAX's shard_map(..., auto=...)) on lavapipe devices with validation:
// on a 2x2 ("dp", "tp") mesh a Megatron MLP manual over "tp" with a hand-written all_reduce and
// automatic over "dp" (mark_sharding inside the region splits the batch) equals the fully
// automatic program and the unsharded one, forward and backward, on the devices and on the CPU
// reference evaluator; the traced boundaries carry XLA's manual subgroup; misuse is a clear error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "src/api/api_support.h"
#include "src/ir/printer.h"
#include "src/lazy/lowering.h"
#include "src/spmd/partitioner.h"
#include "tests/dtensor/manual_mlp.h"
#include "tests/lazy/lazy_test_util.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Values = std::vector<float>;

Values ToValues(const ir::Literal& literal) {
  Values values;
  for (int64_t i = 0; i < literal.ElementCount(); ++i) values.push_back(literal.GetAsDouble(i));
  return values;
}

// The output and the gradients in x, w1, w2: on the devices and on the CPU reference evaluator
// (evaluated first, while the graphs are pending).
struct MlpRun {
  std::vector<Values> device, reference;
};

MlpRun Finish(const MlpInputs& in, const Tensor& output) {
  std::vector<Tensor> results = grad(sum(output * in.cotangent), {in.x, in.w1, in.w2});
  results.insert(results.begin(), output);
  MlpRun run;
  for (const Tensor& t : results) run.reference.push_back(ToValues(MeshReferenceValue(t)));
  for (const Tensor& t : results) run.device.push_back(t.to_vector<float>());
  return run;
}

MlpRun Unsharded() {
  MlpInputs in = Inputs();
  return Finish(in, matmul(tanh(matmul(in.x, in.w1)), in.w2));
}

const Mesh& Mesh2x2() {
  static const Mesh mesh({2, 2}, {}, {"dp", "tp"});
  return mesh;
}

MlpRun Automatic() {
  MlpInputs in = Inputs();
  mark_sharding(in.x, Mesh2x2(), {"dp", None});
  mark_sharding(in.w1, Mesh2x2(), {None, "tp"});
  mark_sharding(in.w2, Mesh2x2(), {"tp", None});
  return Finish(in, matmul(tanh(matmul(in.x, in.w1)), in.w2));
}

// Manual over "tp" (W1 by columns, W2 by rows, the partial products summed by hand), automatic
// over "dp": the batch split over it inside the region by mark_sharding.
ShardMapFunction PartlyManualMlp() {
  return shard_map(
      [](const std::vector<Tensor>& shards) {
        Tensor x = shards[0];
        mark_sharding(x, Mesh2x2(), {"dp", None});
        const Tensor partial = matmul(tanh(matmul(x, shards[1])), shards[2]);
        return std::vector<Tensor>{all_reduce(partial, {"tp"})};
      },
      Mesh2x2(), {{None, None}, {None, "tp"}, {"tp", None}}, {{None, None}}, {"dp"});
}

void ExpectNear(const std::vector<Values>& actual, const std::vector<Values>& expected,
                const std::string& what) {
  const char* names[] = {"output", "dx", "dw1", "dw2"};
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t k = 0; k < actual.size(); ++k) {
    ASSERT_EQ(actual[k].size(), expected[k].size()) << what << " " << names[k];
    for (size_t i = 0; i < actual[k].size(); ++i) {
      // NaN and Inf fail: the difference is not <= the tolerance.
      ASSERT_TRUE(std::abs(actual[k][i] - expected[k][i]) <= 1e-5)
          << what << " " << names[k] << " element " << i << ": " << actual[k][i] << " vs "
          << expected[k][i];
    }
  }
}

class ManualAutoTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { (void)Mesh({4}); }
};

TEST_F(ManualAutoTest, ManualOverTpAutomaticOverDpEqualsAutomatic) {
  const MlpRun unsharded = Unsharded();
  const MlpRun automatic = Automatic();
  MlpInputs in = Inputs();
  const MlpRun manual = Finish(in, PartlyManualMlp()({in.x, in.w1, in.w2})[0]);
  ExpectNear(unsharded.device, unsharded.reference, "unsharded device vs reference");
  ExpectNear(automatic.device, unsharded.reference, "automatic");
  ExpectNear(manual.device, automatic.device, "partly manual vs automatic (devices)");
  ExpectNear(manual.reference, unsharded.reference, "partly manual (reference evaluator)");
  ExpectNear(manual.device, unsharded.reference, "partly manual vs unsharded");
}

TEST_F(ManualAutoTest, TraceCarriesTheManualSubgroupAndDpSplitsTheRegion) {
  MlpInputs in = Inputs();
  const Tensor y = PartlyManualMlp()({in.x, in.w1, in.w2})[0];
  lazy::NodePtr node = lazy::NodeOf(y);
  absl::StatusOr<lazy::LoweredGraph> graph = lazy::Lower({node}, node->placement);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::string text = ir::PrintModule(*graph->module);
  // XLA's form: manual over tp (axis 1), the dp copies as the replicated subgroup.
  EXPECT_THAT(text, HasSubstr("custom_call_target=\"SPMDFullToShardShape\", "
                              "sharding={devices=[1,1,2,2]<=[2,2]T(1,0) "
                              "last_tile_dims={manual, replicated}}"));
  EXPECT_THAT(text, HasSubstr("custom_call_target=\"Sharding\", sharding={devices=[2,1,2]<=[4] "
                              "last_tile_dims={manual}}"));
  EXPECT_THAT(text, HasSubstr("replica_groups={{0,1},{2,3}}"));
  absl::StatusOr<spmd::PartitionResult> partitioned =
      spmd::Partition(*graph->module, node->placement->local_mesh);
  ASSERT_TRUE(partitioned.ok()) << partitioned.status();
  const std::string program = ir::PrintModule(*partitioned->module);
  // Each device multiplies its half of the batch by its tp block of W1: f32[2,4], not f32[4,4].
  EXPECT_THAT(program, HasSubstr("f32[2,4]{1,0} dot("));
  EXPECT_THAT(program, Not(HasSubstr("f32[4,4]{1,0} dot(")));
}

TEST_F(ManualAutoTest, MisuseIsAClearError) {
  const Mesh& mesh = Mesh2x2();
  const Tensor x = tensor(Pattern(32, 5), {8, 4});
  EXPECT_THAT(ThrownMessage([&] {
                enable_manual_sharding(x, mesh, {"tp", None}, {"zz"});
              }),
              HasSubstr("enable_manual_sharding: auto axes: unknown mesh axis 'zz'"));
  EXPECT_THAT(ThrownMessage([&] {
                enable_manual_sharding(x, mesh, {None, None}, {"dp", "tp"});
              }),
              HasSubstr("enable_manual_sharding: auto axes dp+tp leave no manual axis"));
  EXPECT_THAT(ThrownMessage([&] {
                enable_manual_sharding(x, mesh, {"dp", None}, {"dp"});
              }),
              HasSubstr("enable_manual_sharding: dim 0 is split over mesh axis dp, which the "
                        "region leaves to the automatic partitioner"));
  Tensor shard = enable_manual_sharding(x, mesh, {"tp", None}, {"dp"});
  EXPECT_EQ(shard.shape(), std::vector<int64_t>({4, 4}));
  EXPECT_THAT(ThrownMessage([&] { all_reduce(shard, {"dp"}); }),
              HasSubstr("all_reduce: mesh axis \"dp\" is automatic in this manual region "
                        "(manual over tp); collectives run only over manual axes"));
  EXPECT_THAT(ThrownMessage([&] {
                all_gather(shard, {"tp", "dp"}, 0);
              }),
              HasSubstr("all_gather: mesh axis \"dp\" is automatic"));
  EXPECT_THAT(ThrownMessage([&] {
                mark_sharding(shard, mesh, {"tp", None});
              }),
              HasSubstr("mark_sharding: dim 0 is split over mesh axis tp, which is manual in this "
                        "region; it may name only mesh axes dp"));
  EXPECT_THAT(ThrownMessage([&] {
                disable_manual_sharding(shard, mesh, {"tp", None}, {6, 4});
              }),
              HasSubstr("disable_manual_sharding: the per-device f32[4,4] is not the shard shape "
                        "of f32[6,4]"));
  EXPECT_THAT(ThrownMessage([&] {
                disable_manual_sharding(shard, mesh, {"dp", None}, {8, 4});
              }),
              HasSubstr("disable_manual_sharding: dim 0 is split over mesh axis dp, which the "
                        "region leaves to the automatic partitioner"));
  EXPECT_THAT(ThrownMessage([&] { axis_index(shard, {"dp"}); }),
              HasSubstr("axis_index: mesh axis \"dp\" is automatic in this manual region"));
  // A region manual over every axis has nothing left for mark_sharding.
  Tensor all_manual = enable_manual_sharding(x, mesh, {"tp", None});
  EXPECT_THAT(ThrownMessage([&] {
                mark_sharding(all_manual, mesh, {None, "dp"});
              }),
              HasSubstr("mark_sharding: the f32[4,4] tensor is inside a manual region over every "
                        "mesh axis"));
  sync();
}

}  // namespace
}  // namespace vkspmd::testing
