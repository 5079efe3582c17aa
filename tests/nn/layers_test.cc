// Every layer's forward on one device against plain C++ references (and the transformer against
// the reference evaluator of its traced graph), causal masking, parameter names and export.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "tests/lazy/lazy_test_util.h"
#include "tests/nn/reference.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

Values RandomValues(std::vector<int64_t> shape) {
  return randn(std::move(shape)).to_vector<float>();
}

TEST(LayersTest, LinearMatchesReference) {
  manual_seed(1);
  nn::Linear linear(5, 3);
  const Values x = RandomValues({2, 7, 5});
  const Values y = linear(tensor(x, {2, 7, 5})).to_vector<float>();
  EXPECT_EQ(CompareValues(y, LinearReference(x, 14, 5, linear.weight().to_vector<float>(),
                                             linear.bias().to_vector<float>(), 3)),
            "");
  nn::Linear no_bias(5, 3, /*bias=*/false);
  EXPECT_FALSE(no_bias.bias().defined());
  EXPECT_EQ(no_bias.named_parameters().size(), 1u);
  EXPECT_EQ(CompareValues(no_bias(tensor(x, {14, 5})).to_vector<float>(),
                          LinearReference(x, 14, 5, no_bias.weight().to_vector<float>(), {}, 3)),
            "");
  EXPECT_THROW(linear(zeros({2, 4})), Error);
}

TEST(LayersTest, EmbeddingPicksRows) {
  manual_seed(2);
  nn::Embedding table(7, 3);
  const std::vector<int32_t> indices{6, 0, 3, 3, 5};
  const Values rows = table(tensor(indices, {5})).to_vector<float>();
  const Values weight = table.weight().to_vector<float>();
  Values expected;
  for (int32_t index : indices) {
    expected.insert(expected.end(), weight.begin() + index * 3, weight.begin() + index * 3 + 3);
  }
  EXPECT_EQ(CompareValues(rows, expected), "");
}

TEST(LayersTest, LayerNormAndGeluMatchReferences) {
  manual_seed(3);
  nn::LayerNorm norm(5);
  const Values x = RandomValues({3, 5});
  // A weight and bias other than the initial 1 and 0, so both are seen to be applied.
  const Values weight{0.5f, 2, -1, 1.5f, 3}, bias{0.1f, -0.2f, 0.3f, 0, 1};
  norm.named_parameters()[0].second.assign(tensor(weight, {5}));
  norm.named_parameters()[1].second.assign(tensor(bias, {5}));
  EXPECT_EQ(CompareValues(norm(tensor(x, {3, 5})).to_vector<float>(),
                          LayerNormReference(x, 5, weight, bias)),
            "");
  nn::GELU gelu;
  EXPECT_EQ(CompareValues(gelu(tensor(x, {3, 5})).to_vector<float>(), GeluReference(x)), "");
}

TEST(LayersTest, MlpMatchesReference) {
  manual_seed(4);
  nn::MLP mlp(3, 7, 2);
  const Values x = RandomValues({5, 3});
  const Values hidden = GeluReference(
      LinearReference(x, 5, 3, Parameter(mlp, "fc1.weight"), Parameter(mlp, "fc1.bias"), 7));
  const Values expected =
      LinearReference(hidden, 5, 7, Parameter(mlp, "fc2.weight"), Parameter(mlp, "fc2.bias"), 2);
  EXPECT_EQ(CompareValues(mlp(tensor(x, {5, 3})).to_vector<float>(), expected), "");
}

TEST(LayersTest, AttentionMatchesReference) {
  manual_seed(5);
  nn::CausalSelfAttention attention(6, 3);
  const Values x = RandomValues({2, 5, 6});
  EXPECT_EQ(CompareValues(attention(tensor(x, {2, 5, 6})).to_vector<float>(),
                          AttentionReference(x, 2, 5, attention, 6), 1e-4),
            "");
  EXPECT_THROW(nn::CausalSelfAttention(6, 4), Error);
}

nn::TransformerConfig SmallConfig() {
  return nn::TransformerConfig{.vocab = 11, .d_model = 6, .heads = 3, .layers = 2, .max_seq = 7};
}

TEST(LayersTest, TransformerMatchesEvaluatorAndLossMatchesReference) {
  manual_seed(6);
  nn::TransformerLM model(SmallConfig());
  const std::vector<int32_t> tokens{1, 4, 10, 0, 7, 3, 3, 9, 2, 5},
      targets{4, 10, 0, 7, 2, 3, 9, 2, 5, 8};
  Tensor logits = model(tensor(tokens, {2, 5}));
  ASSERT_EQ(logits.shape(), (std::vector<int64_t>{2, 5, 11}));
  const ir::Literal expected = ReferenceValue(logits);
  const HostTensor actual = logits.to_host();
  EXPECT_EQ(CompareWithReference(actual, expected, 1e-4), "");
  const double loss = model.loss(tensor(tokens, {2, 5}), tensor(targets, {2, 5})).item();
  EXPECT_NEAR(loss, CrossEntropyReference(actual.values<float>(), targets, 11), 1e-5 * loss);
  EXPECT_THROW(model(tensor(std::vector<int32_t>(8, 0), {1, 8})), Error);  // T > max_seq.
}

TEST(LayersTest, ChangingALaterTokenKeepsEarlierOutputs) {
  manual_seed(7);
  nn::TransformerLM model(SmallConfig());
  std::vector<int32_t> tokens{3, 1, 4, 1, 5, 9};
  const Values before = model(tensor(tokens, {1, 6})).to_vector<float>();
  tokens[4] = 2;
  const Values after = model(tensor(tokens, {1, 6})).to_vector<float>();
  for (size_t i = 0; i < 4 * 11; ++i) {
    EXPECT_EQ(before[i], after[i]) << "position " << i / 11 << " saw a later token";
  }
  // The changed position and the ones after it do change.
  EXPECT_NE(CompareValues(Values(before.begin() + 44, before.end()),
                          Values(after.begin() + 44, after.end())),
            "");
}

TEST(LayersTest, ParameterNamesOrderAndCount) {
  manual_seed(8);
  nn::TransformerLM model(SmallConfig());
  std::vector<std::string> names;
  for (const auto& [name, tensor] : model.named_parameters()) names.push_back(name);
  ASSERT_EQ(names.size(), 2u + 2 * 16 + 3);
  EXPECT_EQ(names[0], "token_embedding.weight");
  EXPECT_EQ(names[1], "position_embedding.weight");
  EXPECT_EQ(names[2], "blocks.0.ln1.weight");
  EXPECT_EQ(names[4], "blocks.0.attention.query.weight");
  EXPECT_EQ(names[11], "blocks.0.attention.output.bias");
  EXPECT_EQ(names[17], "blocks.0.mlp.fc2.bias");
  EXPECT_EQ(names[18], "blocks.1.ln1.weight");
  EXPECT_EQ(names[names.size() - 1], "head.weight");
  EXPECT_EQ(names[names.size() - 3], "ln_f.weight");
  // d = 6, vocab 11, max_seq 7: embeddings, per block 2 norms + 4 (d x d + d) + MLP, ln_f, head.
  const int64_t d = 6, block = 2 * 2 * d + 4 * (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d);
  EXPECT_EQ(model.parameter_count(), 11 * d + 7 * d + 2 * block + 2 * d + 11 * d);
  // Handles share state: an assignment through one is seen by the module.
  model.named_parameters()[0].second.assign(zeros({11, 6}));
  EXPECT_EQ(model.parameters()[0].sum().item(), 0);
}

// Modules assembled at run time (Python's nn.Module subclasses): owned parameters and children
// by name, replaced in place, and the names refused.
TEST(LayersTest, AddParameterAndModuleAtRunTime) {
  manual_seed(9);
  nn::Module model;
  const Tensor w = ones({2, 3});
  model.add_parameter("w", w);
  nn::Linear head(3, 1);
  model.add_module("head", &head);
  std::vector<std::string> names;
  for (const auto& [name, tensor] : model.named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"w", "head.weight", "head.bias"}));
  EXPECT_EQ(model.parameter_count(), 6 + 3 + 1);
  EXPECT_TRUE(model.parameters()[0].is_same(w));  // The module keeps the handle itself.
  model.add_parameter("w", zeros({4}));           // Replaced in place: still first.
  EXPECT_EQ(model.named_parameters()[0].first, "w");
  EXPECT_EQ(model.parameters()[0].shape(), (std::vector<int64_t>{4}));
  nn::Linear other(3, 2);
  model.add_module("head", &other);
  EXPECT_EQ(model.parameter_count(), 4 + 6 + 2);
  ASSERT_EQ(model.named_modules().size(), 1u);
  EXPECT_EQ(model.named_modules()[0].second, &other);
  for (const char* bad : {"", "a.b", "head"}) {
    EXPECT_THROW(model.add_parameter(bad, w), Error) << bad;
  }
  EXPECT_THROW(model.add_module("w", &other), Error);
  EXPECT_THROW(model.add_module("self", &model), Error);
  EXPECT_THROW(model.add_parameter("undefined", Tensor()), Error);
}

TEST(LayersTest, SaveAndLoadNpyByName) {
  const std::string directory =
      ::testing::TempDir() + "/nn_layers_npy_" + std::to_string(::getpid());
  std::filesystem::remove_all(directory);
  manual_seed(9);
  nn::MlpRegressor saved(3, 5, 2);
  saved.save_npy(directory);
  EXPECT_TRUE(std::filesystem::exists(directory + "/mlp.fc1.weight.npy"));
  manual_seed(10);
  nn::MlpRegressor loaded(3, 5, 2);
  EXPECT_NE(CompareValues(Parameter(loaded, "mlp.fc1.weight"), Parameter(saved, "mlp.fc1.weight")),
            "");
  loaded.load_npy(directory);
  for (const auto& [name, tensor] : saved.named_parameters()) {
    EXPECT_EQ(Parameter(loaded, name), tensor.to_vector<float>()) << name;
  }
  nn::MlpRegressor other_shape(4, 5, 2);
  EXPECT_THROW(other_shape.load_npy(directory), Error);
  EXPECT_THROW(saved.load_npy(directory + "/missing"), Error);
  std::filesystem::remove_all(directory);
}

TEST(LayersTest, LossesMatchReferences) {
  const Values logits{0.5f, -1, 2, 0, 3, -0.25f, 1, 1, 1};
  const std::vector<int32_t> targets{2, 0, 1};
  EXPECT_NEAR(nn::cross_entropy_loss(tensor(logits, {3, 3}), tensor(targets, {3})).item(),
              CrossEntropyReference(logits, targets, 3), 1e-6);
  const Values prediction{1, 2, 3, 4}, target{0, 2, 5, 4};
  EXPECT_NEAR(nn::mse_loss(tensor(prediction, {2, 2}), tensor(target, {2, 2})).item(), 5.0 / 4,
              1e-6);
  EXPECT_THROW(nn::mse_loss(tensor(prediction, {2, 2}), tensor(target, {4})), Error);
  EXPECT_THROW(nn::cross_entropy_loss(tensor(logits, {9}), tensor(targets, {3})), Error);
}

}  // namespace
}  // namespace vkspmd::testing
