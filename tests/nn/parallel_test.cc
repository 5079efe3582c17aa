// The strategies on meshes of 1, 2 and 4 (2x2) devices: logits, loss and the initial weights
// equal the single-device model's, and every parameter is sharded as docs/nn.md says.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "tests/lazy/lazy_test_util.h"
#include "tests/nn/reference.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

constexpr uint64_t kSeed = 21;
constexpr int64_t kBatch = 4, kLength = 5;

// An odd vocabulary, so the vocab-parallel split is uneven (padded by the partitioner).
nn::TransformerConfig Config() {
  return nn::TransformerConfig{.vocab = 13, .d_model = 8, .heads = 2, .layers = 1, .max_seq = 6};
}

std::vector<int32_t> Tokens(int32_t offset) {
  std::vector<int32_t> tokens;
  for (int32_t i = 0; i < kBatch * kLength; ++i) tokens.push_back((7 * i + offset) % 13);
  return tokens;
}

struct Result {
  std::map<std::string, Values> parameters;
  Values logits;
  std::string logits_sharding;
  double loss = 0;
  int64_t collective_bytes = 0;  // Of the forward and the loss.
};

// Builds the model from kSeed into `model`, applies the strategy (none for ""), materialises the
// parameters, then runs logits and loss in one step.
Result RunModel(const std::string& strategy, const Mesh* mesh,
                std::unique_ptr<nn::TransformerLM>& model) {
  manual_seed(kSeed);
  model = std::make_unique<nn::TransformerLM>(Config());
  if (!strategy.empty()) nn::apply_strategy(*model, *mesh, strategy);
  sync();
  reset_metrics();
  Tensor logits = (*model)(tensor(Tokens(0), {kBatch, kLength}));
  Tensor loss =
      nn::cross_entropy_loss(logits, model->shard_input(tensor(Tokens(1), {kBatch, kLength})));
  Result result;
  result.logits_sharding = sharding_spec(logits);
  mark_step();
  result.collective_bytes = metrics().collective_bytes;
  for (const auto& [name, parameter] : model->named_parameters()) {
    result.parameters[name] = parameter.to_vector<float>();
  }
  result.logits = logits.to_vector<float>();
  result.loss = loss.item();
  return result;
}

const Result& SingleDevice() {
  // Only host values stay: device tensors must not outlive the test's devices.
  static const Result result = [] {
    std::unique_ptr<nn::TransformerLM> model;
    return RunModel("", nullptr, model);
  }();
  return result;
}

// The documented split: Megatron dims by parameter name, FSDP the largest dim.
PartitionSpec DocumentedSpec(const std::string& strategy, const std::string& name,
                             const std::vector<int64_t>& shape) {
  PartitionSpec spec(shape.size(), None);
  if (strategy == "fsdp") {
    spec[std::max_element(shape.begin(), shape.end()) - shape.begin()] = "fsdp";
  }
  if (strategy == "tp" || strategy == "dp+tp") {
    const bool column =
        name.starts_with("token_embedding") || name.starts_with("head") ||
        name.find("query") != std::string::npos || name.find("key") != std::string::npos ||
        name.find("value") != std::string::npos || name.find("fc1") != std::string::npos;
    const bool row = name.ends_with("output.weight") || name.ends_with("fc2.weight");
    if (column) spec[0] = "tp";
    if (row) spec[1] = "tp";
  }
  return spec;
}

struct Case {
  std::string strategy;
  std::vector<int64_t> mesh_shape;
  std::vector<std::string> axes;
};

void PrintTo(const Case& c, std::ostream* out) {
  *out << c.strategy << " on " << Mesh(c.mesh_shape, {}, c.axes).to_string();
}

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.strategy == "dp+tp" ? "dp_tp" : info.param.strategy;
  for (int64_t dim : info.param.mesh_shape) name += "_" + std::to_string(dim);
  return name;
}

class StrategyTest : public ::testing::TestWithParam<Case> {};

TEST_P(StrategyTest, MatchesOneDeviceAndShardsAsDocumented) {
  const Case& c = GetParam();
  const Mesh mesh(c.mesh_shape, {}, c.axes);
  const Result& expected = SingleDevice();
  std::unique_ptr<nn::TransformerLM> model;
  const Result actual = RunModel(c.strategy, &mesh, model);
  EXPECT_EQ(CompareValues(actual.logits, expected.logits, 1e-4), "");
  EXPECT_NEAR(actual.loss, expected.loss, 1e-4 * expected.loss);
  for (const auto& [name, values] : expected.parameters) {
    EXPECT_EQ(actual.parameters.at(name), values) << name << " differs from one device's";
  }
  // Logits [B, T, V]: the batch over the data axis, the vocabulary over tp.
  const std::string data_axis = c.strategy == "tp" ? "" : c.strategy == "fsdp" ? "fsdp" : "dp";
  const bool vocab_split = c.strategy == "tp" || c.strategy == "dp+tp";
  const PartitionSpec logits_spec{data_axis.empty() ? SpecEntry(None) : SpecEntry(data_axis), None,
                                  vocab_split ? SpecEntry("tp") : SpecEntry(None)};
  EXPECT_EQ(actual.logits_sharding,
            sharding_spec(mark_sharding(zeros({kBatch, kLength, 13}), mesh, logits_spec)));
  // Every split needs collectives (if only the loss's all-reduce); one device needs none.
  if (mesh.size() > 1) {
    EXPECT_GT(actual.collective_bytes, 0);
  } else {
    EXPECT_EQ(actual.collective_bytes, 0);
  }
  for (const auto& [name, parameter] : model->named_parameters()) {
    const std::string documented = sharding_spec(mark_sharding(
        zeros(parameter.shape()), mesh, DocumentedSpec(c.strategy, name, parameter.shape())));
    EXPECT_EQ(sharding_spec(parameter), documented) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Meshes, StrategyTest,
                         ::testing::Values(Case{"dp", {1}, {"dp"}}, Case{"dp", {2}, {"dp"}},
                                           Case{"dp", {2, 2}, {"dp", "tp"}},
                                           Case{"tp", {1}, {"tp"}}, Case{"tp", {2}, {"tp"}},
                                           Case{"tp", {2, 2}, {"dp", "tp"}},
                                           Case{"dp+tp", {1, 2}, {"dp", "tp"}},
                                           Case{"dp+tp", {2, 2}, {"dp", "tp"}},
                                           Case{"fsdp", {1}, {"fsdp"}}, Case{"fsdp", {2}, {"fsdp"}},
                                           Case{"fsdp", {2, 2}, {"fsdp", "tp"}}),
                         CaseName);

TEST(StrategyTest, ShardingTextOfTensorParallelWeights) {
  const Mesh mesh({2}, {}, {"tp"});
  manual_seed(kSeed);
  nn::MLP mlp(3, 4, 2);
  nn::tensor_parallel(mlp, mesh);
  const auto parameters = mlp.named_parameters();
  EXPECT_EQ(sharding_spec(parameters[0].second), "{devices=[2,1]<=[2]}");  // fc1.weight [4, 3].
  EXPECT_EQ(sharding_spec(parameters[1].second), "{devices=[2]<=[2]}");    // fc1.bias [4].
  EXPECT_EQ(sharding_spec(parameters[2].second), "{devices=[1,2]<=[2]}");  // fc2.weight [2, 4].
  EXPECT_EQ(sharding_spec(parameters[3].second), "{replicated}");          // fc2.bias [2].
}

TEST(StrategyTest, MlpRegressorUnderEveryStrategyOnTwoByTwo) {
  // The meshes first: devices grow to the largest mesh only while no tensor lives on them.
  const Mesh data_mesh({2, 2}, {}, {"dp", "tp"}), fsdp_mesh({2, 2}, {}, {"fsdp", "tp"});
  const Values x = [] {
    manual_seed(3);
    return randn({4, 5}).to_vector<float>();
  }();
  const Values y(8, 0.5f);
  manual_seed(kSeed);
  nn::MlpRegressor reference(5, 6, 2);
  const double expected = reference.loss(tensor(x, {4, 5}), tensor(y, {4, 2})).item();
  for (const std::string strategy : {"dp", "tp", "dp+tp", "fsdp"}) {
    const Mesh& mesh = strategy == "fsdp" ? fsdp_mesh : data_mesh;
    manual_seed(kSeed);
    nn::MlpRegressor model(5, 6, 2);
    nn::apply_strategy(model, mesh, strategy);
    // The same input tensors twice: placing an input that is already placed is no error.
    Tensor inputs = tensor(x, {4, 5}), targets = tensor(y, {4, 2});
    EXPECT_NEAR(model.loss(inputs, targets).item(), expected, 1e-4 * expected) << strategy;
    EXPECT_NEAR(model.loss(inputs, targets).item(), expected, 1e-4 * expected) << strategy;
  }
}

TEST(StrategyTest, StrategyMeshes) {
  EXPECT_EQ(nn::strategy_mesh("dp+tp", {2, 2}), Mesh({2, 2}, {}, {"dp", "tp"}));
  EXPECT_EQ(nn::strategy_mesh("dp+tp", {2}), Mesh({1, 2}, {}, {"dp", "tp"}));
  EXPECT_EQ(nn::strategy_mesh("fsdp", {2, 2}), Mesh({4}, {}, {"fsdp"}));
  EXPECT_EQ(nn::strategy_mesh("tp", {2}), Mesh({2}, {}, {"tp"}));
  EXPECT_THROW(nn::strategy_mesh("pp", {2}), Error);
  EXPECT_THROW(nn::strategy_mesh("dp+tp", {2, 2, 2}), Error);
}

TEST(StrategyTest, ClearErrors) {
  manual_seed(kSeed);
  nn::TransformerLM model(Config());
  // An axis the mesh does not have, and an unknown strategy.
  EXPECT_THROW(nn::data_parallel(model, Mesh({2}, {}, {"batch"})), Error);
  EXPECT_THROW(nn::fsdp_v2(model, Mesh({2}, {}, {"dp"})), Error);
  EXPECT_THROW(nn::apply_strategy(model, Mesh({2}, {}, {"dp"}), "pipeline"), Error);
  // Two heads do not split over four devices; the failed strategy leaves the model unplanned.
  EXPECT_THROW(nn::tensor_parallel(model, Mesh({4}, {}, {"tp"})), Error);
  EXPECT_EQ(model.parallel_plan(), nullptr);
  // A batch of 3 does not split over 2 devices.
  nn::data_parallel(model, Mesh({2}, {}, {"dp"}));
  try {
    model(tensor(std::vector<int32_t>(3 * kLength, 1), {3, kLength}));
    ADD_FAILURE() << "a batch of 3 on 2 devices did not throw";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("not divisible"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace vkspmd::testing
