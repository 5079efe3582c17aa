// SGD and AdamW against a plain C++ implementation of PyTorch's formulas (float32, 5 steps, the
// learning rate changing every step: one compilation), on one device and on a 2x2 mesh; a
// 10-step SGD training loop on a 2x2 mesh updates parameters and momentum in place (donated
// buffers, one compilation) and matches the same loop on one device; a tensor still holding an
// old value keeps it (no donation); bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <random>

#include "tests/lazy/lazy_test_util.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

std::vector<float> Random(int64_t count, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> distribution(-1, 1);
  std::vector<float> values(count);
  for (float& value : values) value = distribution(generator);
  return values;
}

constexpr int kSteps = 5;
const std::vector<std::vector<int64_t>> kShapes = {{4, 6}, {6}};
const std::vector<PartitionSpec> kSpecs = {{"dp", "tp"}, {"tp"}};

double LearningRate(double lr0, int step) { return lr0 / (1 + 0.5 * step); }

std::vector<float> InitialValues(size_t i) {
  return Random(i == 0 ? 24 : 6, 100 + static_cast<uint32_t>(i));
}
std::vector<float> GradientValues(size_t i, int step) {
  return Random(i == 0 ? 24 : 6, 1000 + 10 * step + static_cast<uint32_t>(i));
}

// PyTorch's single-tensor SGD and AdamW on one parameter, in float32 like the device (the
// scalars are float32 graph parameters there).
struct Reference {
  std::vector<float> p, buffer, m, v;
};

void SgdReference(Reference& r, const std::vector<float>& g, int step, float lr, float momentum,
                  float dampening, float weight_decay, bool nesterov) {
  if (r.buffer.empty()) r.buffer.assign(r.p.size(), 0);
  for (size_t k = 0; k < r.p.size(); ++k) {
    float d = g[k];
    if (weight_decay != 0) d = d + r.p[k] * weight_decay;
    if (momentum != 0) {
      r.buffer[k] = step == 1 ? d : r.buffer[k] * momentum + d * (1 - dampening);
      d = nesterov ? d + r.buffer[k] * momentum : r.buffer[k];
    }
    r.p[k] = r.p[k] - d * lr;
  }
}

void AdamWReference(Reference& r, const std::vector<float>& g, int step, double lr, double beta1,
                    double beta2, double eps, double weight_decay) {
  if (r.m.empty()) r.m.assign(r.p.size(), 0), r.v.assign(r.p.size(), 0);
  const double bias_correction1 = 1 - std::pow(beta1, step);
  const double bias_correction2 = 1 - std::pow(beta2, step);
  const float step_size = static_cast<float>(lr / bias_correction1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  for (size_t k = 0; k < r.p.size(); ++k) {
    r.p[k] = r.p[k] * static_cast<float>(1 - lr * weight_decay);
    r.m[k] = r.m[k] + (g[k] - r.m[k]) * static_cast<float>(1 - beta1);
    r.v[k] = r.v[k] * static_cast<float>(beta2) + g[k] * g[k] * static_cast<float>(1 - beta2);
    const float denom = std::sqrt(r.v[k]) / bc2_sqrt + static_cast<float>(eps);
    r.p[k] = r.p[k] - r.m[k] / denom * step_size;
  }
}

using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;
using ReferenceStep = std::function<void(Reference&, const std::vector<float>&, int, double)>;

// Runs kSteps steps on the devices and on the reference, comparing parameters after every step.
// Returns the metrics of the steps (after the optimizer's state was created).
Metrics CompareWithReference(const MakeOptimizer& make, const ReferenceStep& reference_step,
                             double lr0, const Mesh* mesh) {
  std::vector<Tensor> params;
  std::vector<Reference> references;
  for (size_t i = 0; i < kShapes.size(); ++i) {
    params.push_back(tensor(InitialValues(i), kShapes[i]));
    if (mesh != nullptr) mark_sharding(params[i], *mesh, kSpecs[i]);
    references.push_back({InitialValues(i), {}, {}, {}});
  }
  std::unique_ptr<optim::Optimizer> optimizer = make(params);
  mark_step();  // Creates the zero state, so every step below has the same graph.
  reset_metrics();
  for (int step = 1; step <= kSteps; ++step) {
    const double lr = LearningRate(lr0, step);
    optimizer->set_lr(lr);
    EXPECT_EQ(optimizer->lr(), lr);
    std::vector<Tensor> grads;
    for (size_t i = 0; i < kShapes.size(); ++i) {
      grads.push_back(tensor(GradientValues(i, step), kShapes[i]));
      reference_step(references[i], GradientValues(i, step), step, lr);
    }
    optimizer->step(grads);
    mark_step();
    for (size_t i = 0; i < kShapes.size(); ++i) {
      std::vector<float> actual = params[i].to_vector<float>();
      for (size_t k = 0; k < actual.size(); ++k) {
        EXPECT_NEAR(actual[k], references[i].p[k], 1e-5 * std::max(1.0f, std::fabs(actual[k])))
            << "parameter " << i << " element " << k << " after step " << step;
      }
    }
    EXPECT_EQ(optimizer->step_count(0), step);
  }
  return metrics();
}

class OptimizerTest : public ::testing::TestWithParam<bool> {
 protected:
  std::unique_ptr<Mesh> mesh_ =
      GetParam() ? std::make_unique<Mesh>(std::vector<int64_t>{2, 2}, std::vector<int64_t>{},
                                          std::vector<std::string>{"dp", "tp"})
                 : nullptr;
};

TEST_P(OptimizerTest, SgdWithMomentumDampeningAndWeightDecay) {
  Metrics m = CompareWithReference(
      [](std::vector<Tensor> p) {
        return std::make_unique<optim::SGD>(std::move(p), 0.1, 0.9, 0.2, 0.01);
      },
      [](Reference& r, const std::vector<float>& g, int step, double lr) {
        SgdReference(r, g, step, static_cast<float>(lr), 0.9f, 0.2f, 0.01f, false);
      },
      0.1, mesh_.get());
  EXPECT_EQ(m.compile_count, 1) << metrics_report();
  EXPECT_EQ(m.donated_count, kSteps * 4) << "2 parameters and 2 momentum buffers per step";
}

TEST_P(OptimizerTest, SgdNesterov) {
  Metrics m = CompareWithReference(
      [](std::vector<Tensor> p) {
        return std::make_unique<optim::SGD>(std::move(p), 0.05, 0.8, 0.0, 0.0, true);
      },
      [](Reference& r, const std::vector<float>& g, int step, double lr) {
        SgdReference(r, g, step, static_cast<float>(lr), 0.8f, 0, 0, true);
      },
      0.05, mesh_.get());
  EXPECT_EQ(m.compile_count, 1) << metrics_report();
}

TEST_P(OptimizerTest, AdamW) {
  Metrics m = CompareWithReference(
      [](std::vector<Tensor> p) {
        return std::make_unique<optim::AdamW>(std::move(p), 0.01, std::pair{0.9, 0.99}, 1e-6, 0.1);
      },
      [](Reference& r, const std::vector<float>& g, int step, double lr) {
        AdamWReference(r, g, step, lr, 0.9, 0.99, 1e-6, 0.1);
      },
      0.01, mesh_.get());
  EXPECT_EQ(m.compile_count, 1) << metrics_report();
  EXPECT_EQ(m.donated_count, kSteps * 6) << "2 parameters, 2 exp_avg, 2 exp_avg_sq per step";
}

INSTANTIATE_TEST_SUITE_P(Placements, OptimizerTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? std::string("Mesh2x2") : std::string("OneDevice");
                         });

// Ten steps of SGD with momentum on a least-squares problem; returns the losses and weights.
struct TrainingRun {
  std::vector<double> losses;
  std::vector<float> weight, bias;
  Metrics metrics;
};

TrainingRun TrainLinear(const Mesh* mesh) {
  Tensor w = tensor(Random(32, 1), {8, 4});
  Tensor b = tensor(Random(4, 2), {4});
  Tensor x = tensor(Random(48, 3), {6, 8});
  Tensor y = tensor(Random(24, 4), {6, 4});
  if (mesh != nullptr) {
    mark_sharding(w, *mesh, {None, "tp"});
    mark_sharding(b, *mesh, {"tp"});
    mark_sharding(x, *mesh, {"dp", None});
    mark_sharding(y, *mesh, {"dp", "tp"});
  }
  optim::SGD optimizer({w, b}, 0.1, 0.9);
  mark_step();
  reset_metrics();
  TrainingRun run;
  for (int step = 0; step < 10; ++step) {
    Tensor error = matmul(x, w) + b - y;
    Tensor loss = (error * error).mean();
    optimizer.step(grad(loss, {w, b}));
    mark_step();
    run.losses.push_back(loss.item());
  }
  run.metrics = metrics();
  run.weight = w.to_vector<float>();
  run.bias = b.to_vector<float>();
  return run;
}

TEST(DonationTest, TenSgdStepsOnA2x2MeshUpdateInPlaceAndCompileOnce) {
  Mesh mesh({2, 2}, {}, {"dp", "tp"});
  TrainingRun sharded = TrainLinear(&mesh);
  EXPECT_EQ(sharded.metrics.compile_count, 1) << metrics_report();
  EXPECT_EQ(sharded.metrics.execute_count, 10);
  // w, b and their momentum buffers every step; w's shards are [8, 2] on 4 devices, b's [2].
  EXPECT_EQ(sharded.metrics.donated_count, 40);
  EXPECT_EQ(sharded.metrics.donated_bytes, 10 * 2 * (8 * 2 + 2) * 4 * 4);
  EXPECT_LT(sharded.losses.back(), sharded.losses.front());
  TrainingRun single = TrainLinear(nullptr);
  EXPECT_EQ(single.metrics.compile_count, 1);
  EXPECT_EQ(single.metrics.donated_count, 40);
  for (size_t k = 0; k < single.losses.size(); ++k) {
    EXPECT_NEAR(sharded.losses[k], single.losses[k], 1e-5 * std::max(1.0, single.losses[k]));
  }
  for (size_t k = 0; k < single.weight.size(); ++k) {
    EXPECT_NEAR(sharded.weight[k], single.weight[k], 1e-5);
  }
  for (size_t k = 0; k < single.bias.size(); ++k) {
    EXPECT_NEAR(sharded.bias[k], single.bias[k], 1e-5);
  }
}

TEST(DonationTest, ATensorHoldingTheOldValueKeepsIt) {
  Mesh mesh({2, 2}, {}, {"dp", "tp"});
  Tensor w = tensor(Random(16, 5), {4, 4});
  mark_sharding(w, mesh, {"dp", "tp"});
  Tensor old = w.reshape({4, 4});  // The same value under another tensor.
  const std::vector<float> before = w.to_vector<float>();
  reset_metrics();
  w += 1.0f;
  mark_step();
  EXPECT_EQ(metrics().donated_count, 0);
  EXPECT_EQ(old.to_vector<float>(), before);
  std::vector<float> after = w.to_vector<float>();
  for (size_t k = 0; k < after.size(); ++k) EXPECT_EQ(after[k], before[k] + 1.0f);
  // Once nothing else holds it, the next update is in place.
  old = Tensor();
  w += 1.0f;
  mark_step();
  EXPECT_EQ(metrics().donated_count, 1);
  after = w.to_vector<float>();
  for (size_t k = 0; k < after.size(); ++k) EXPECT_EQ(after[k], before[k] + 2.0f);
}

TEST(OptimizerErrorsTest, BadArguments) {
  Tensor w = tensor(Random(6, 7), {2, 3});
  Tensor b = tensor(Random(3, 8), {3});
  std::vector<int32_t> ints = {1, 2};
  Tensor i = tensor(ints, {2});
  EXPECT_NE(ThrownMessage([&] { optim::SGD({w}, -1.0); }).find("Invalid learning rate"),
            std::string::npos);
  EXPECT_NE(ThrownMessage([&] { optim::SGD({w}, 0.1, 0.0, 0.0, 0.0, true); }).find("Nesterov"),
            std::string::npos);
  EXPECT_NE(ThrownMessage([&] {
              optim::AdamW({w}, 0.1, {0.9, 1.0});
            }).find("Invalid beta"),
            std::string::npos);
  EXPECT_NE(ThrownMessage([&] {
              optim::AdamW({w}, 0.1, {0.9, 0.99}, -1.0);
            }).find("Invalid epsilon"),
            std::string::npos);
  EXPECT_NE(ThrownMessage([&] { optim::SGD({}, 0.1); }).find("empty parameter list"),
            std::string::npos);
  EXPECT_NE(ThrownMessage([&] {
              optim::SGD({w, i}, 0.1);
            }).find("parameter 1 is int32"),
            std::string::npos);
  EXPECT_NE(ThrownMessage([&] {
              optim::SGD({w, w}, 0.1);
            }).find("same tensor as parameter 0"),
            std::string::npos);
  EXPECT_NE(ThrownMessage([&] {
              optim::SGD({w, Tensor()}, 0.1);
            }).find("undefined"),
            std::string::npos);
  optim::SGD sgd({w, b}, 0.1);
  EXPECT_NE(ThrownMessage([&] { sgd.step({b}); }).find("1 gradients for 2 parameters"),
            std::string::npos);
  EXPECT_NE(ThrownMessage([&] {
              sgd.step({b, b});
            }).find("gradient 0 is float32[3]"),
            std::string::npos);
  EXPECT_NE(ThrownMessage([&] { sgd.set_lr(-0.5); }).find("Invalid learning rate"),
            std::string::npos);
  // step() without any backward: every parameter is skipped, nothing changes.
  const std::vector<float> before = w.to_vector<float>();
  sgd.step();
  EXPECT_EQ(w.to_vector<float>(), before);
  EXPECT_EQ(sgd.step_count(0), 0);
}

TEST(OptimizerTest, StepUsesGradFromBackward) {
  Tensor w = tensor(Random(6, 9), {2, 3}).requires_grad_();
  Tensor x = tensor(Random(8, 10), {4, 2});
  optim::SGD optimizer({w}, 0.5);
  const std::vector<float> before = w.to_vector<float>();
  Tensor loss = tanh(matmul(x, w)).sum();
  const std::vector<float> expected = grad(loss, {w})[0].to_vector<float>();
  backward(loss);
  optimizer.step();
  mark_step();
  std::vector<float> after = w.to_vector<float>();
  for (size_t k = 0; k < after.size(); ++k) {
    EXPECT_NEAR(after[k], before[k] - 0.5f * expected[k], 1e-6);
  }
}

}  // namespace
}  // namespace vkspmd::testing
