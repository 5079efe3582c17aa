// grad and backward of the Tensor API: the gradients of losses built from the public ops
// (matmul, tanh, softmax/cross_entropy, layer_norm, embedding, gelu, broadcasting, reductions)
// computed on the devices equal central differences of the loss (evaluated by the reference
// evaluator), on one device and with the inputs sharded over a 2x2 mesh; backward's semantics;
// the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "src/api/api_support.h"
#include "tests/lazy/lazy_test_util.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

struct Input {
  std::vector<int64_t> shape;
  PartitionSpec spec;  // Over the 2x2 mesh {"dp", "tp"}; empty: left unsharded.
  std::vector<float> values;
};
using LossFn = std::function<Tensor(const std::vector<Tensor>&)>;

std::vector<float> Random(int64_t count, uint32_t seed, float low = -1, float high = 1) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> distribution(low, high);
  std::vector<float> values(count);
  for (float& value : values) value = distribution(generator);
  return values;
}

Input MakeInput(std::vector<int64_t> shape, PartitionSpec spec, uint32_t seed) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return {shape, std::move(spec), Random(count, seed)};
}

Tensor Constant(std::vector<int64_t> shape, uint32_t seed) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  return tensor(Random(count, seed), shape);
}

double ReferenceLoss(const LossFn& loss, const std::vector<Input>& inputs) {
  std::vector<Tensor> tensors;
  for (const Input& input : inputs) tensors.push_back(tensor(input.values, input.shape));
  return ReferenceValue(loss(tensors)).GetAsDouble(0);
}

// Central differences (step 1e-2, float32 evaluation) of every input element.
std::vector<std::vector<double>> NumericGradients(const LossFn& loss, std::vector<Input> inputs) {
  constexpr double kStep = 1e-2;
  std::vector<std::vector<double>> gradients;
  for (Input& input : inputs) {
    std::vector<double> gradient;
    for (float& value : input.values) {
      const float saved = value;
      value = saved + static_cast<float>(kStep);
      const double plus = ReferenceLoss(loss, inputs);
      value = saved - static_cast<float>(kStep);
      const double minus = ReferenceLoss(loss, inputs);
      value = saved;
      gradient.push_back((plus - minus) / (2 * kStep));
    }
    gradients.push_back(std::move(gradient));
  }
  return gradients;
}

void ExpectGradientsMatch(const LossFn& loss, const std::vector<Input>& inputs, const Mesh* mesh) {
  const std::vector<std::vector<double>> expected = NumericGradients(loss, inputs);
  std::vector<Tensor> tensors;
  for (const Input& input : inputs) {
    Tensor t = tensor(input.values, input.shape);
    if (mesh != nullptr && !input.spec.empty()) mark_sharding(t, *mesh, input.spec);
    tensors.push_back(t);
  }
  std::vector<Tensor> gradients = grad(loss(tensors), tensors);
  ASSERT_EQ(gradients.size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_EQ(gradients[i].shape(), inputs[i].shape) << "input " << i;
    std::vector<float> actual = gradients[i].to_vector<float>();
    for (size_t j = 0; j < actual.size(); ++j) {
      EXPECT_NEAR(actual[j], expected[i][j], 2e-3 + 1e-2 * std::fabs(expected[i][j]))
          << "input " << i << " element " << j << (mesh ? " on the 2x2 mesh" : " on one device");
    }
  }
}

struct Case {
  const char* name;
  LossFn loss;
  std::vector<Input> inputs;
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  // MSE of a tanh layer: matmul, a broadcast bias, elementwise ops, mean.
  Tensor y = Constant({4, 4}, 1);
  cases.push_back({"tanh_layer_mse",
                   [y](const std::vector<Tensor>& t) {
                     Tensor h = tanh(matmul(t[0], t[1]) + t[2]);
                     return ((h - y) * (h - y)).mean();
                   },
                   {MakeInput({4, 6}, {"dp", None}, 2), MakeInput({6, 4}, {None, "tp"}, 3),
                    MakeInput({4}, {"tp"}, 4)}});
  // Softmax cross-entropy of logits from a matmul.
  std::vector<int32_t> labels = {1, 3, 0, 2};
  Tensor target = tensor(labels, {4});
  cases.push_back({"cross_entropy",
                   [target](const std::vector<Tensor>& t) {
                     return cross_entropy(matmul(t[0], t[1]) * 2.0, target);
                   },
                   {MakeInput({4, 6}, {"dp", None}, 5), MakeInput({6, 4}, {None, "tp"}, 6)}});
  // layer_norm with weight and bias, then gelu (erf form) and a weighted sum.
  Tensor c = Constant({4, 8}, 7);
  cases.push_back(
      {"layer_norm_gelu",
       [c](const std::vector<Tensor>& t) {
         return (gelu(layer_norm(t[0], {8}, t[1], t[2])) * c).sum();
       },
       {MakeInput({4, 8}, {"dp", None}, 8), MakeInput({8}, {"tp"}, 9), MakeInput({8}, {}, 10)}});
  // embedding rows (repeated indices accumulate), gelu's tanh form, log_softmax.
  std::vector<int32_t> indices = {3, 0, 3, 7, 1, 5};
  Tensor ids = tensor(indices, {6});
  Tensor d = Constant({6, 4}, 11);
  cases.push_back({"embedding_gelu_tanh",
                   [ids, d](const std::vector<Tensor>& t) {
                     Tensor e = gelu(embedding(ids, t[0]), "tanh");
                     return (e * d).mean() + log_softmax(e, 1).sum() * 0.1;
                   },
                   {MakeInput({8, 4}, {None, "tp"}, 12)}});
  // Broadcasting and reductions: softmax over a dim, amax, keepdim means, a broadcast vector,
  // sigmoid, exp, sqrt, division and pow.
  cases.push_back({"reductions_broadcasting",
                   [](const std::vector<Tensor>& t) {
                     const Tensor& x = t[0];
                     const Tensor& v = t[1];
                     Tensor s = (softmax(x, 1) * v).sum();
                     Tensor m = amax(x, {1}).mean();
                     Tensor r = (x / (x.mean({0}, true) + 3.0)).sum({1}).mean();
                     Tensor u = sigmoid(v).sum() + exp(x * 0.3).mean() + sqrt(x * x + 1.0).mean();
                     return s + m + r + u + pow(v + 2.0, 1.5).sum() * 0.1;
                   },
                   {MakeInput({4, 6}, {"dp", "tp"}, 13), MakeInput({6}, {"tp"}, 14)}});
  return cases;
}

class GradientTest : public ::testing::TestWithParam<int> {};

TEST_P(GradientTest, MatchesCentralDifferencesOnOneDevice) {
  Case c = Cases()[GetParam()];
  SCOPED_TRACE(c.name);
  ExpectGradientsMatch(c.loss, c.inputs, nullptr);
}

TEST_P(GradientTest, MatchesCentralDifferencesOnA2x2Mesh) {
  Case c = Cases()[GetParam()];
  SCOPED_TRACE(c.name);
  Mesh mesh({2, 2}, {}, {"dp", "tp"});
  ExpectGradientsMatch(c.loss, c.inputs, &mesh);
}

INSTANTIATE_TEST_SUITE_P(Losses, GradientTest, ::testing::Range(0, 5),
                         [](const ::testing::TestParamInfo<int>& param) {
                           return std::string(Cases()[param.param].name);
                         });

TEST(GradTest, IntermediatesUnusedAndRepeatedInputs) {
  Tensor x = Constant({3, 4}, 20);
  Tensor w = Constant({4, 2}, 21);
  Tensor unused = Constant({5}, 22);
  Tensor h = matmul(x, w);
  Tensor loss = tanh(h).sum();
  std::vector<Tensor> g = grad(loss, {h, unused, w, w});
  // d sum(tanh(h)) / dh = 1 - tanh(h)^2, here evaluated from h's value.
  std::vector<float> hv = h.to_vector<float>(), gh = g[0].to_vector<float>();
  for (size_t k = 0; k < hv.size(); ++k) {
    EXPECT_NEAR(gh[k], 1 - std::tanh(hv[k]) * std::tanh(hv[k]), 1e-5);
  }
  for (float value : g[1].to_vector<float>()) EXPECT_EQ(value, 0.0f);
  EXPECT_EQ(g[1].shape(), std::vector<int64_t>{5});
  EXPECT_EQ(g[2].to_vector<float>(), g[3].to_vector<float>());
  // The loss itself may be an input: its own gradient is one.
  EXPECT_EQ(grad(loss, {loss})[0].item(), 1.0);
}

TEST(GradTest, ThroughAShardingConstraintOnAnIntermediate) {
  // mark_sharding of an intermediate traces a Sharding custom-call; its gradient is the identity
  // under the same constraint, and the result equals the unsharded one.
  Mesh mesh({2, 2}, {}, {"dp", "tp"});
  auto gradient = [&](bool sharded) {
    Tensor x = Constant({4, 6}, 50);
    Tensor w = Constant({6, 4}, 51);
    if (sharded) mark_sharding(x, mesh, {"dp", None});
    Tensor h = matmul(x, w);
    if (sharded) mark_sharding(h, mesh, {"dp", "tp"});
    std::vector<Tensor> g = grad((tanh(h) * h).mean(), {x, w});
    return std::make_pair(g[0].to_vector<float>(), g[1].to_vector<float>());
  };
  auto [sharded_x, sharded_w] = gradient(true);
  auto [single_x, single_w] = gradient(false);
  for (size_t k = 0; k < single_x.size(); ++k) EXPECT_NEAR(sharded_x[k], single_x[k], 1e-6);
  for (size_t k = 0; k < single_w.size(); ++k) EXPECT_NEAR(sharded_w[k], single_w[k], 1e-6);
}

TEST(BackwardTest, SetsGradOfFlaggedTensorsAndOverwrites) {
  Tensor w = Constant({4, 2}, 30).requires_grad_();
  Tensor b = Constant({2}, 31).requires_grad_();
  Tensor other = Constant({3}, 32).requires_grad_();
  Tensor x = Constant({5, 4}, 33);
  EXPECT_TRUE(w.requires_grad());
  EXPECT_FALSE(x.requires_grad());
  EXPECT_FALSE(w.grad().defined());
  auto loss_of = [&] { return (tanh(matmul(x, w) + b) * 0.5).sum(); };
  Tensor loss = loss_of();
  std::vector<Tensor> expected = grad(loss, {w, b});
  backward(loss);
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().to_vector<float>(), expected[0].to_vector<float>());
  EXPECT_EQ(b.grad().to_vector<float>(), expected[1].to_vector<float>());
  EXPECT_FALSE(other.grad().defined()) << "the loss does not reach it";
  EXPECT_FALSE(x.grad().defined());
  // A second backward replaces the gradient (no accumulation).
  backward(loss_of());
  EXPECT_EQ(w.grad().to_vector<float>(), expected[0].to_vector<float>());
  mark_step();
  EXPECT_EQ(b.grad().to_vector<float>(), expected[1].to_vector<float>());
}

TEST(GradTest, Errors) {
  Tensor w = Constant({4, 2}, 40);
  Tensor x = Constant({3, 4}, 41);
  EXPECT_NE(ThrownMessage([&] { grad(matmul(x, w), {w}); })
                .find("must be a scalar (0-d) tensor; it is "
                      "f32[3,2]"),
            std::string::npos);
  std::vector<int32_t> ints = {1, 2, 3};
  Tensor i = tensor(ints, {3});
  EXPECT_NE(ThrownMessage([&] { grad(i.sum(), {w}); }).find("the loss must be floating-point"),
            std::string::npos);
  EXPECT_NE(ThrownMessage([&] { grad(w.sum(), {i}); }).find("input 0 is s32[3]"),
            std::string::npos);
  EXPECT_NE(ThrownMessage([&] { grad(Tensor(), {w}); }), "no error");
  EXPECT_NE(ThrownMessage([&] { i.requires_grad_(); }).find("only floating-point tensors"),
            std::string::npos);
  EXPECT_NE(ThrownMessage([&] { backward(w.sum()); }).find("no tensor with requires_grad"),
            std::string::npos);
  // An op without a gradient rule is named (no public op lacks one: an all-reduce multiplying
  // made here; sum, max and min have rules).
  ir::InstructionAttributes attributes;
  attributes.to_apply = lazy::TraceReducer(ir::Opcode::kMultiply, ir::DType::kF32);
  Tensor reduced = lazy::Wrap(lazy::MakeOp(ir::Opcode::kAllReduce, {lazy::NodeOf(w)}, attributes));
  EXPECT_NE(ThrownMessage([&] {
              grad(reduced.sum(), {w});
            }).find("all-reduce with multiply has no gradient rule"),
            std::string::npos)
      << ThrownMessage([&] { grad(reduced.sum(), {w}); });
}

}  // namespace
}  // namespace vkspmd::testing
