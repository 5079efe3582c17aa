// The dp, tp, dp+tp and fsdp strategies as parallelize_module plans (tensor_parallel_plan plus
// the data axis; FullyShard on the whole model for fsdp) on lavapipe with validation: the same
// parameter shardings and the same losses and parameters over SGD steps as nn::apply_strategy, and
// the unsharded model's within rounding; the styles' input_layouts / output_layouts constrain a
// module's ends; misuse errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>

#include "tests/lazy/lazy_test_util.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kSteps = 3;

struct Training {
  std::vector<std::string> shardings;  // "name spec" per parameter, before the first step.
  std::vector<double> losses;
  std::vector<std::vector<float>> parameters;
};

// kSteps of SGD on `loss_of(step)`, after `place` put the model on its mesh.
Training Train(nn::Module& model, const std::function<void(nn::Module&)>& place,
               const std::function<Tensor(int)>& loss_of) {
  place(model);
  Training run;
  for (const auto& [name, parameter] : model.named_parameters()) {
    run.shardings.push_back(name + " " + sharding_spec(parameter));
  }
  std::vector<Tensor> parameters = model.parameters();
  optim::SGD optimizer(parameters, 0.1);
  for (int step = 0; step < kSteps; ++step) {
    Tensor loss = loss_of(step);
    optimizer.step(grad(loss, parameters));
    mark_step();
    run.losses.push_back(loss.item());
  }
  for (const Tensor& parameter : parameters) run.parameters.push_back(parameter.to_vector<float>());
  return run;
}

// The plan-built run equals the strategy's bit for bit; both equal the unsharded run within
// float rounding (a sharded contraction sums in another order).
void ExpectSame(const Training& planned, const Training& strategy, const Training& plain,
                const std::string& what) {
  EXPECT_EQ(planned.shardings, strategy.shardings) << what;
  EXPECT_EQ(planned.losses, strategy.losses) << what;
  ASSERT_EQ(planned.parameters.size(), strategy.parameters.size()) << what;
  for (size_t p = 0; p < planned.parameters.size(); ++p) {
    // Bit for bit (EXPECT_EQ on float): the first differing element only, not the whole tensor.
    const std::vector<float>& a = planned.parameters[p];
    const std::vector<float>& b = strategy.parameters[p];
    ASSERT_EQ(a.size(), b.size()) << what << " parameter " << p;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] != b[i]) {
        ADD_FAILURE() << what << " parameter " << p << " element " << i << ": " << a[i]
                      << " vs the strategy's " << b[i];
        break;
      }
    }
  }
  ASSERT_EQ(planned.losses.size(), plain.losses.size());
  for (size_t i = 0; i < plain.losses.size(); ++i) {
    EXPECT_NEAR(planned.losses[i], plain.losses[i], 1e-5 * std::abs(plain.losses[i]))
        << what << " step " << i;
  }
  for (size_t p = 0; p < plain.parameters.size(); ++p) {
    for (size_t i = 0; i < plain.parameters[p].size(); ++i) {
      EXPECT_NEAR(planned.parameters[p][i], plain.parameters[p][i], 1e-5)
          << what << " parameter " << p << " element " << i;
    }
  }
}

// A strategy and its plan: tensor_parallel_plan for the model axis, the data axis for inputs.
struct StrategyCase {
  std::string strategy;
  std::vector<int64_t> shape;
  bool tensor_parallel;
  bool data_parallel;
  bool fully_shard = false;  // fsdp: FullyShard on the whole model over the data axis "fsdp".
};

const std::vector<StrategyCase>& Cases() {
  static const std::vector<StrategyCase> cases = {{"dp", {2}, false, true},
                                                  {"tp", {2}, true, false},
                                                  {"dp+tp", {2, 2}, true, true},
                                                  {"fsdp", {2}, false, false, true},
                                                  {"fsdp", {4}, false, false, true}};
  return cases;
}

void ParallelizeAs(nn::Module& model, const StrategyCase& c) {
  const Mesh mesh = nn::strategy_mesh(c.strategy, c.shape);
  if (c.fully_shard) {
    parallelize_module(model, DeviceMesh(mesh), {{"", FullyShard{}}}, "", "fsdp");
    return;
  }
  parallelize_module(model, DeviceMesh(mesh),
                     c.tensor_parallel ? tensor_parallel_plan(model) : ParallelizePlan{},
                     c.tensor_parallel ? "tp" : "", c.data_parallel ? "dp" : "");
}

class ParallelizeStrategiesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { (void)Mesh({4}); }
};

// For each strategy: a model from `build` placed by it, one placed by its plan, one unsharded,
// each trained on `loss_of(model)(step)` with batches of `batch` (fsdp meshes that do not divide
// it are left out).
template <typename Model>
void ExpectPlansEqualStrategies(const std::function<std::unique_ptr<Model>()>& build,
                                const std::function<std::function<Tensor(int)>(Model&)>& loss_of,
                                int64_t batch, const std::string& what) {
  std::unique_ptr<Model> plain_model = build();
  const Training plain = Train(
      *plain_model, [](nn::Module&) {}, loss_of(*plain_model));
  for (const StrategyCase& c : Cases()) {
    const Mesh mesh = nn::strategy_mesh(c.strategy, c.shape);
    if (c.fully_shard && batch % mesh.size() != 0) continue;  // The batch splits over them all.
    std::unique_ptr<Model> a = build();
    const Training strategy = Train(
        *a, [&](nn::Module& m) { nn::apply_strategy(m, mesh, c.strategy); }, loss_of(*a));
    std::unique_ptr<Model> b = build();
    const Training planned = Train(
        *b, [&](nn::Module& m) { ParallelizeAs(m, c); }, loss_of(*b));
    ExpectSame(planned, strategy, plain,
               what + " " + c.strategy + " on " + std::to_string(mesh.size()) + " devices");
  }
}

TEST_F(ParallelizeStrategiesTest, MlpPlansEqualTheStrategies) {
  ExpectPlansEqualStrategies<nn::MlpRegressor>(
      [] {
        manual_seed(3);
        return std::make_unique<nn::MlpRegressor>(6, 8, 3);
      },
      [](nn::MlpRegressor& model) {
        return [&model](int step) {
          manual_seed(100 + step);
          return model.loss(randn({4, 6}), randn({4, 3}));
        };
      },
      4, "MLP");
}

TEST_F(ParallelizeStrategiesTest, TransformerPlansEqualTheStrategies) {
  ExpectPlansEqualStrategies<nn::TransformerLM>(
      [] {
        manual_seed(4);
        return std::make_unique<nn::TransformerLM>(nn::TransformerConfig{16, 8, 2, 1, 4});
      },
      [](nn::TransformerLM& model) {
        return [&model](int step) {
          std::vector<int32_t> tokens(8), targets(8);
          for (int i = 0; i < 8; ++i) {
            tokens[i] = (i * 5 + step * 3) % 16;
            targets[i] = (i * 7 + step + 1) % 16;
          }
          return model.loss(tensor(std::span<const int32_t>(tokens), {2, 4}),
                            tensor(std::span<const int32_t>(targets), {2, 4}));
        };
      },
      2, "transformer");
}

TEST_F(ParallelizeStrategiesTest, TensorParallelPlanNamesMegatronsLayers) {
  const nn::TransformerConfig config{16, 8, 2, 1, 4};
  nn::TransformerLM model(config);
  std::vector<std::string> plan;
  for (const auto& [name, style] : tensor_parallel_plan(model)) {
    plan.push_back(name + (std::holds_alternative<ColwiseParallel>(style) ? " col" : " row"));
  }
  EXPECT_EQ(plan,
            std::vector<std::string>({"token_embedding row", "blocks.0.attention.query col",
                                      "blocks.0.attention.key col", "blocks.0.attention.value col",
                                      "blocks.0.attention.output row", "blocks.0.mlp.fc1 col",
                                      "blocks.0.mlp.fc2 row", "head col"}));
}

// A Linear inside a module, so parallelize_module can name it.
struct Holder : nn::Module {
  explicit Holder(nn::Module* child) { register_module("fc", child); }
};

TEST_F(ParallelizeStrategiesTest, LayoutOptionsConstrainTheModulesEnds) {
  manual_seed(8);
  nn::Linear reference(8, 6);
  manual_seed(9);
  const Tensor x_value = randn({2, 4, 8});
  const std::vector<float> expected = reference(x_value).to_vector<float>();

  // Colwise taking a sequence-split input and giving a replicated output.
  manual_seed(8);
  nn::Linear colwise(8, 6);
  Holder a(&colwise);
  parallelize_module(a, DeviceMesh({0, 1}, {2}, {"tp"}),
                     {{"fc", ColwiseParallel{Shard{1}, Replicate{}}}});
  manual_seed(9);
  Tensor x = randn({2, 4, 8});
  Tensor y = colwise(x);
  EXPECT_EQ(sharding_spec(x), "{devices=[1,2,1]<=[2]}");
  EXPECT_EQ(sharding_spec(y), "{replicated}");
  std::vector<float> got = y.to_vector<float>();
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-5) << i;

  // Rowwise reduce-scattering into the sequence on a dp x tp mesh: the batch stays on dp.
  manual_seed(8);
  nn::Linear rowwise(8, 6);
  Holder b(&rowwise);
  parallelize_module(b, DeviceMesh({0, 1, 2, 3}, {2, 2}, {"dp", "tp"}),
                     {{"fc", RowwiseParallel{std::nullopt, Shard{-2}}}}, "tp", "dp");
  manual_seed(9);
  Tensor x2 = b.shard_input(randn({2, 4, 8}));
  Tensor y2 = rowwise(x2);
  EXPECT_EQ(sharding_spec(x2), "{devices=[2,1,1,2]<=[4] last_tile_dim_replicate}");
  EXPECT_EQ(sharding_spec(y2), "{devices=[2,2,1]<=[4]}");
  got = y2.to_vector<float>();
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-5) << i;
}

// Name -> sharding of each parameter of an 8 -> 6 Linear (weight [6, 8], bias [6]) named "fc"
// in a Holder, parallelized by `plan`.
std::map<std::string, std::string> LinearShardings(const DeviceMesh& mesh,
                                                   const ParallelizePlan& plan,
                                                   const std::string& axis,
                                                   const std::string& data_axis) {
  nn::Linear linear(8, 6);
  Holder holder(&linear);
  parallelize_module(holder, mesh, plan, axis, data_axis);
  std::map<std::string, std::string> shardings;
  for (const auto& [name, parameter] : holder.named_parameters()) {
    shardings[name] = sharding_spec(parameter);
  }
  return shardings;
}

TEST_F(ParallelizeStrategiesTest, FullyShardSplitsItsModulesParametersOverTheDataAxis) {
  using Map = std::map<std::string, std::string>;
  const DeviceMesh line({0, 1}, {2}, {"dp"});
  const DeviceMesh square({0, 1, 2, 3}, {2, 2}, {"dp", "tp"});
  // Unset dim: the largest (FSDPv2's shard_maximal), here on the whole model ("").
  EXPECT_EQ(LinearShardings(line, {{"", FullyShard{}}}, "", "dp"),
            Map({{"fc.bias", "{devices=[2]<=[2]}"}, {"fc.weight", "{devices=[1,2]<=[2]}"}}));
  // PyTorch's fully_shard default, Shard(0), on the named submodule.
  EXPECT_EQ(LinearShardings(line, {{"fc", FullyShard{0}}}, "", "dp"),
            Map({{"fc.bias", "{devices=[2]<=[2]}"}, {"fc.weight", "{devices=[2,1]<=[2]}"}}));
  // With tensor parallelism on a dp x tp mesh: Colwise splits the same dim (dp major), Rowwise
  // the other one (and leaves the bias to FSDP alone).
  EXPECT_EQ(LinearShardings(square, {{"", FullyShard{0}}, {"fc", ColwiseParallel{}}}, "tp", "dp"),
            Map({{"fc.bias", "{devices=[4]<=[4]}"}, {"fc.weight", "{devices=[4,1]<=[4]}"}}));
  EXPECT_EQ(LinearShardings(square, {{"", FullyShard{0}}, {"fc", RowwiseParallel{}}}, "tp", "dp"),
            Map({{"fc.bias", "{devices=[2,2]<=[4] last_tile_dim_replicate}"},
                 {"fc.weight", "{devices=[2,2]<=[4]}"}}));
  EXPECT_THAT(ThrownMessage([&] {
                LinearShardings(line, {{"", FullyShard{}}}, "", "");
              }),
              HasSubstr("FullyShard on the whole model shards over the data axis; name it"));
  EXPECT_THAT(ThrownMessage([&] {
                LinearShardings(line, {{"fc", FullyShard{}}}, "", "");
              }),
              HasSubstr("FullyShard on \"fc\" shards over the data axis; name it"));
  EXPECT_THAT(ThrownMessage([&] {
                LinearShardings(line, {{"fc", FullyShard{1}}}, "", "dp");
              }),
              HasSubstr("FullyShard dim 1 is outside parameter \"fc.bias\" of shape [6]"));
}

TEST_F(ParallelizeStrategiesTest, LayoutMisuseIsAClearError) {
  const DeviceMesh mesh({0, 1}, {2}, {"tp"});
  nn::Linear linear(8, 6);
  Holder holder(&linear);
  EXPECT_THAT(
      ThrownMessage([&] {
        parallelize_module(holder, mesh, {{"fc", RowwiseParallel{std::nullopt, Partial{}}}});
      }),
      HasSubstr("RowwiseParallel output_layouts of \"fc\" is Partial(sum); a module's "
                "input or output is Shard or Replicate"));
  parallelize_module(holder, mesh, {{"fc", ColwiseParallel{Shard{2}, std::nullopt}}});
  EXPECT_THAT(ThrownMessage([&] {
                (void)linear(randn({4, 8}));
              }),
              HasSubstr("ColwiseParallel \"fc\": the input [4,8] has no dim 2 to split"));
  nn::MlpRegressor mlp(6, 8, 3);
  EXPECT_THAT(ThrownMessage([&] {
                parallelize_module(mlp, DeviceMesh({0, 1}, {2}, {"dp"}), tensor_parallel_plan(mlp),
                                   "", "dp");
              }),
              HasSubstr("the data axis \"dp\" is the tensor-parallel axis"));
}

}  // namespace
}  // namespace vkspmd::testing
