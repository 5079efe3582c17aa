// parallelize_module on lavapipe devices with validation: a Megatron MLP built with
// ColwiseParallel/RowwiseParallel equals nn::tensor_parallel (shardings and outputs) and the
// unsharded model; an attention block's projections on a permuted mesh; SequenceParallel
// LayerNorms in a transformer block equal the unsharded block, forward and backward; misuse errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "tests/lazy/lazy_test_util.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kSeed = 5;

Tensor Input() {
  manual_seed(99);
  return randn({4, 6});
}

// The MLP's output and every parameter's sharding text.
struct ForwardRun {
  std::vector<float> output;
  std::vector<std::string> shardings;
  int64_t collective_runs = 0;
};

ForwardRun Forward(nn::MLP& mlp) {
  ForwardRun run;
  sync();
  reset_metrics();
  Tensor output = mlp(Input());
  for (const auto& [name, parameter] : mlp.named_parameters()) {
    run.shardings.push_back(name + " " + sharding_spec(parameter));
  }
  run.output = output.to_vector<float>();
  run.collective_runs = metrics().collective_runs;
  return run;
}

// The largest mesh is named before any tensor runs, so the devices opened cover it.
class ParallelizeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { (void)Mesh({4}); }
};

std::unique_ptr<nn::MLP> Build() {
  manual_seed(kSeed);
  return std::make_unique<nn::MLP>(6, 8, 3);
}

TEST_F(ParallelizeTest, MegatronMlpEqualsTensorParallel) {
  std::unique_ptr<nn::MLP> plain = Build();
  const ForwardRun reference = Forward(*plain);

  std::unique_ptr<nn::MLP> strategy = Build();
  nn::tensor_parallel(*strategy, Mesh({2}, {}, {"tp"}));
  const ForwardRun megatron = Forward(*strategy);

  std::unique_ptr<nn::MLP> planned = Build();
  parallelize_module(*planned, DeviceMesh({0, 1}, {2}, {"tp"}),
                     {{"fc1", ColwiseParallel{}}, {"fc2", RowwiseParallel{}}});
  const ForwardRun run = Forward(*planned);

  EXPECT_EQ(run.shardings, megatron.shardings);
  EXPECT_EQ(run.shardings, std::vector<std::string>(
                               {"fc1.weight {devices=[2,1]<=[2]}", "fc1.bias {devices=[2]<=[2]}",
                                "fc2.weight {devices=[1,2]<=[2]}", "fc2.bias {replicated}"}));
  ASSERT_EQ(run.output.size(), reference.output.size());
  for (size_t i = 0; i < run.output.size(); ++i) {
    EXPECT_NEAR(run.output[i], reference.output[i], 1e-5) << i;
    EXPECT_NEAR(run.output[i], megatron.output[i], 1e-5) << i;
  }
  // The hidden activation stays split: one all-reduce per device ends the block.
  EXPECT_EQ(run.collective_runs, 2);
}

TEST_F(ParallelizeTest, PermutedMeshAndSecondAxis) {
  std::unique_ptr<nn::MLP> plain = Build();
  const ForwardRun reference = Forward(*plain);
  std::unique_ptr<nn::MLP> planned = Build();
  parallelize_module(*planned, DeviceMesh({3, 1, 0, 2}, {2, 2}, {"dp", "tp"}),
                     {{"fc1", ColwiseParallel{}}, {"fc2", RowwiseParallel{}}}, "tp");
  const ForwardRun run = Forward(*planned);
  EXPECT_EQ(run.shardings[0], "fc1.weight {devices=[2,1,2]3,0,1,2 last_tile_dim_replicate}");
  for (size_t i = 0; i < run.output.size(); ++i) {
    EXPECT_NEAR(run.output[i], reference.output[i], 1e-5) << i;
  }
}

// The output of a block and every parameter's gradient, read as host values.
std::vector<std::vector<float>> BlockRun(nn::TransformerBlock& block) {
  manual_seed(7);
  Tensor x = randn({2, 4, 8});
  Tensor y = block(x);
  std::vector<std::vector<float>> run = {y.to_vector<float>()};
  const std::vector<Tensor> grads = grad(sum(y * y), block.parameters());
  for (const Tensor& g : grads) run.push_back(g.to_vector<float>());
  return run;
}

TEST_F(ParallelizeTest, SequenceParallelLayerNormsEqualTheUnshardedBlock) {
  manual_seed(kSeed);
  nn::TransformerBlock plain(8, 2);
  const std::vector<std::vector<float>> reference = BlockRun(plain);

  manual_seed(kSeed);
  nn::TransformerBlock block(8, 2);
  parallelize_module(block, DeviceMesh({0, 1}, {2}, {"tp"}),
                     {{"ln1", SequenceParallel{}},
                      {"ln2", SequenceParallel{}},
                      {"mlp.fc1", ColwiseParallel{}},
                      {"mlp.fc2", RowwiseParallel{}}});
  const std::vector<std::vector<float>> run = BlockRun(block);
  ASSERT_EQ(run.size(), reference.size());
  for (size_t t = 0; t < run.size(); ++t) {
    ASSERT_EQ(run[t].size(), reference[t].size()) << t;
    for (size_t i = 0; i < run[t].size(); ++i) {
      EXPECT_NEAR(run[t][i], reference[t][i], 1e-4) << "tensor " << t << " element " << i;
    }
  }

  // The LayerNorm's input and output are split along the sequence (dim 1), its parameters not.
  nn::LayerNorm norm(8);
  struct Holder : nn::Module {
    explicit Holder(nn::LayerNorm* child) { register_module("norm", child); }
  } holder(&norm);
  parallelize_module(holder, DeviceMesh({0, 1}, {2}, {"tp"}), {{"norm", SequenceParallel{}}});
  Tensor x = randn({2, 4, 8});
  Tensor y = norm(x);
  EXPECT_EQ(sharding_spec(x), "{devices=[1,2,1]<=[2]}");
  EXPECT_EQ(sharding_spec(y), "{devices=[1,2,1]<=[2]}");
  EXPECT_EQ(sharding_spec(norm.weight()), "{replicated}");
  EXPECT_THAT(ThrownMessage([&] {
                (void)norm(randn({4, 8}));
              }),
              HasSubstr("SequenceParallel: the input [4,8] has no sequence dim 1 before its "
                        "last (feature) dim"));
}

TEST_F(ParallelizeTest, MisuseIsAClearError) {
  const DeviceMesh mesh({0, 1}, {2}, {"tp"});
  std::unique_ptr<nn::MLP> mlp = Build();
  EXPECT_THAT(ThrownMessage([&] {
                parallelize_module(*mlp, mesh, {{"fc3", ColwiseParallel{}}});
              }),
              HasSubstr("the model has no module \"fc3\" (its modules: fc1, fc2)"));
  nn::LayerNorm norm(4);
  EXPECT_THAT(ThrownMessage([&] { parallelize_module(norm, mesh, {}, "dp"); }),
              HasSubstr("unknown mesh axis 'dp'"));
  nn::TransformerBlock block(8, 2);
  EXPECT_THAT(ThrownMessage([&] {
                parallelize_module(block, mesh, {{"ln1", RowwiseParallel{}}});
              }),
              HasSubstr("RowwiseParallel applies to Linear and Embedding; \"ln1\" is neither"));
  EXPECT_THAT(ThrownMessage([&] {
                parallelize_module(block, mesh, {{"mlp.fc1", SequenceParallel{}}});
              }),
              HasSubstr("SequenceParallel applies to LayerNorm; \"mlp.fc1\" is not one"));
  EXPECT_THAT(
      ThrownMessage([&] {
        parallelize_module(*mlp, DeviceMesh({0, 1, 2, 3}, {2, 2}), {{"fc1", ColwiseParallel{}}});
      }),
      HasSubstr("has several axes; name the tensor-parallel one"));
}

}  // namespace
}  // namespace vkspmd::testing
