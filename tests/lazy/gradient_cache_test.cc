// The gradient cache (src/lazy/autograd.h): a repeated training step differentiates its loss
// graph once and replays the recorded gradient nodes, which give bit for bit what
// differentiating every step gives (on the devices and in the CPU reference); a loss graph that
// differs in a shape, a constant, a sharding, an op's attributes or the tensors differentiated is
// differentiated anew.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "src/lazy/autograd.h"
#include "tests/lazy/lazy_test_util.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

// Equal bits prove nothing when both sides are NaN or infinite: every value must be finite.
void ExpectFinite(const std::vector<float>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_TRUE(std::isfinite(values[i])) << "element " << i << " is " << values[i];
  }
}

std::vector<uint32_t> Bits(const std::vector<float>& values) {
  ExpectFinite(values);
  std::vector<uint32_t> bits(values.size());
  std::memcpy(bits.data(), values.data(), values.size() * sizeof(float));
  return bits;
}

std::vector<uint32_t> Bits(const ir::Literal& literal) {
  std::vector<float> values(literal.bytes().size() / sizeof(float));
  std::memcpy(values.data(), literal.bytes().data(), values.size() * sizeof(float));
  return Bits(values);
}

struct TrainingRun {
  // Per step, every gradient's bits as the devices and as the CPU reference computed them.
  std::vector<std::vector<std::vector<uint32_t>>> device, reference;
  std::vector<std::vector<uint32_t>> parameters;  // After the last step.
  int64_t differentiations = 0;
  int64_t replays = 0;
};

// `steps` of gradient descent on a two-layer network (a layer norm, tanh, a matmul) whose width
// `hidden` keeps each test's graphs apart from the others'.
TrainingRun Train(const Mesh* mesh, int steps, int64_t hidden) {
  manual_seed(7);
  std::vector<Tensor> parameters = {randn({6, hidden}), randn({hidden}), randn({hidden, 3})};
  Tensor x = randn({8, 6}), y = randn({8, 3});
  if (mesh != nullptr) {
    mark_sharding(parameters[0], *mesh, {None, "tp"});
    mark_sharding(parameters[1], *mesh, {"tp"});
    mark_sharding(parameters[2], *mesh, {"tp", None});
    mark_sharding(x, *mesh, {"dp", None});
    mark_sharding(y, *mesh, {"dp", None});
  }
  mark_step();
  TrainingRun run;
  const int64_t differentiations = lazy::DifferentiationCount();
  const int64_t replays = lazy::GradientCacheHits();
  for (int step = 0; step < steps; ++step) {
    Tensor hidden_values = tanh(layer_norm(matmul(x, parameters[0]) + parameters[1], {hidden}));
    Tensor error = matmul(hidden_values, parameters[2]) - y;
    Tensor loss = (error * error).mean();
    std::vector<Tensor> gradients = grad(loss, parameters);
    std::vector<ir::Literal> reference;
    for (const Tensor& gradient : gradients) reference.push_back(MeshReferenceValue(gradient));
    for (size_t k = 0; k < parameters.size(); ++k) {
      parameters[k] -= gradients[k] * (0.05 / (1 + step));  // A new scalar every step.
    }
    mark_step();
    std::vector<std::vector<uint32_t>> device, reference_bits;
    for (size_t k = 0; k < gradients.size(); ++k) {
      // The devices agree with the reference evaluator (an independent check of the values).
      EXPECT_EQ(CompareWithReference(gradients[k].to_host(), reference[k], 1e-4), "")
          << "step " << step << ", gradient " << k;
      device.push_back(Bits(gradients[k].to_vector<float>()));
      reference_bits.push_back(Bits(reference[k]));
    }
    run.device.push_back(std::move(device));
    run.reference.push_back(std::move(reference_bits));
  }
  for (const Tensor& parameter : parameters)
    run.parameters.push_back(Bits(parameter.to_vector<float>()));
  run.differentiations = lazy::DifferentiationCount() - differentiations;
  run.replays = lazy::GradientCacheHits() - replays;
  return run;
}

TEST(GradientCacheTest, ARepeatedStepDifferentiatesOnceAndReplaysTheSameBits) {
  Mesh mesh({2, 2}, {}, {"dp", "tp"});
  constexpr int kSteps = 5;
  for (const Mesh* m : std::vector<const Mesh*>{nullptr, &mesh}) {
    SCOPED_TRACE(m == nullptr ? "one device" : "2x2 mesh");
    setenv("VKSPMD_GRADIENT_CACHE", "0", 1);
    const TrainingRun uncached = Train(m, kSteps, 12);
    unsetenv("VKSPMD_GRADIENT_CACHE");
    EXPECT_EQ(uncached.differentiations, kSteps);
    EXPECT_EQ(uncached.replays, 0);
    const TrainingRun cached = Train(m, kSteps, 12);
    EXPECT_EQ(cached.differentiations, 1);
    EXPECT_EQ(cached.replays, kSteps - 1);
    EXPECT_EQ(cached.device, uncached.device);
    EXPECT_EQ(cached.reference, uncached.reference);
    EXPECT_EQ(cached.parameters, uncached.parameters);
    // Checking every replay against differentiating anew finds no difference.
    setenv("VKSPMD_CHECK_GRADIENT_CACHE", "1", 1);
    const TrainingRun checked = Train(m, kSteps, 12);
    unsetenv("VKSPMD_CHECK_GRADIENT_CACHE");
    EXPECT_EQ(checked.replays, kSteps);
    EXPECT_EQ(checked.device, uncached.device);
  }
}

// How many times `call` differentiated a loss graph.
int64_t Differentiations(const std::function<void()>& call) {
  const int64_t before = lazy::DifferentiationCount();
  call();
  return lazy::DifferentiationCount() - before;
}

TEST(GradientCacheTest, ALossGraphThatDiffersIsDifferentiatedAnew) {
  Mesh mesh({2, 2}, {}, {"dp", "tp"});
  manual_seed(8);
  auto loss_of = [](const Tensor& x, const Tensor& w, double eps) {
    return pow(layer_norm(tanh(matmul(x, w)), {w.shape()[1]}, Tensor(), Tensor(), eps), 2).sum();
  };
  Tensor x = randn({3, 4}), w = randn({4, 5});
  auto base = [&] { grad(loss_of(x, w, 1e-5), {w}); };
  EXPECT_EQ(Differentiations(base), 1);
  EXPECT_EQ(Differentiations(base), 0);
  // Other values of the same shapes: the recorded gradients.
  Tensor x2 = randn({3, 4}), w2 = randn({4, 5});
  EXPECT_EQ(Differentiations([&] { grad(loss_of(x2, w2, 1e-5), {w2}); }), 0);
  // A shape, a constant (layer_norm's epsilon), the tensors differentiated and their order.
  Tensor x3 = randn({5, 4});
  EXPECT_EQ(Differentiations([&] { grad(loss_of(x3, w, 1e-5), {w}); }), 1);
  EXPECT_EQ(Differentiations([&] { grad(loss_of(x, w, 1e-3), {w}); }), 1);
  EXPECT_EQ(Differentiations([&] { grad(loss_of(x, w, 1e-5), {w, x}); }), 1);
  EXPECT_EQ(Differentiations([&] { grad(loss_of(x, w, 1e-5), {x, w}); }), 1);
  EXPECT_EQ(Differentiations([&] { grad(loss_of(x, w, 1e-5), {x, w}); }), 0);
  // Shardings: the same program on a mesh, and w split along either dim.
  Tensor wm = randn({4, 6}), xm = randn({4, 4});
  mark_sharding(wm, mesh, {None, "tp"});
  mark_step();
  auto sharded = [&] { grad(loss_of(xm, wm, 1e-5), {wm}); };
  EXPECT_EQ(Differentiations(sharded), 1);
  EXPECT_EQ(Differentiations(sharded), 0);
  Tensor wm2 = randn({4, 6});
  mark_sharding(wm2, mesh, {"tp", None});
  mark_step();
  EXPECT_EQ(Differentiations([&] { grad(loss_of(xm, wm2, 1e-5), {wm2}); }), 1);
}

// A loss and the tensors to differentiate it by, traced anew (over the same data) at each call.
using Problem = std::function<std::pair<Tensor, std::vector<Tensor>>()>;

// How many times differentiating `problem` with the cache on differentiated a loss graph. The
// gradients agree with the CPU reference and, bit for bit, with differentiating with the cache
// off (every value finite).
int64_t CheckedDifferentiations(const Problem& problem) {
  const int64_t before = lazy::DifferentiationCount();
  auto [loss, wrt] = problem();
  std::vector<Tensor> cached = grad(loss, wrt);
  const int64_t count = lazy::DifferentiationCount() - before;
  setenv("VKSPMD_GRADIENT_CACHE", "0", 1);
  auto [fresh_loss, fresh_wrt] = problem();
  std::vector<Tensor> fresh = grad(fresh_loss, fresh_wrt);
  unsetenv("VKSPMD_GRADIENT_CACHE");
  EXPECT_EQ(cached.size(), fresh.size());
  for (size_t k = 0; k < cached.size() && k < fresh.size(); ++k) {
    const ir::Literal reference = MeshReferenceValue(cached[k]);
    EXPECT_EQ(CompareWithReference(cached[k].to_host(), reference, 1e-4), "") << "gradient " << k;
    EXPECT_EQ(Bits(cached[k].to_vector<float>()), Bits(fresh[k].to_vector<float>()))
        << "gradient " << k;
  }
  return count;
}

// The same shapes on one device and replicated over a 2x2 mesh (or on a 2x2 mesh and on a mesh
// of 4 devices in a row) are other programs: the recorded gradients of one placement must not be
// replayed on the other.
TEST(GradientCacheTest, APlacementThatDiffersIsDifferentiatedAnew) {
  Mesh square({2, 2}, {}, {"dp", "tp"});
  Mesh row({4}, {}, {"dp"});
  manual_seed(9);
  auto problem_on = [](const Mesh* mesh) {
    Tensor x = randn({4, 3}), w = randn({3, 7});
    if (mesh != nullptr) {
      const PartitionSpec replicated = {None, None};
      mark_sharding(x, *mesh, replicated);
      mark_sharding(w, *mesh, replicated);
    }
    return [x, w] {
      Tensor loss = pow(tanh(matmul(x, w)), 2).sum();
      return std::make_pair(loss, std::vector<Tensor>{w, x});
    };
  };
  EXPECT_EQ(CheckedDifferentiations(problem_on(nullptr)), 1);
  EXPECT_EQ(CheckedDifferentiations(problem_on(nullptr)), 0);
  EXPECT_EQ(CheckedDifferentiations(problem_on(&square)), 1);
  EXPECT_EQ(CheckedDifferentiations(problem_on(&square)), 0);
  EXPECT_EQ(CheckedDifferentiations(problem_on(&row)), 1);
  EXPECT_EQ(CheckedDifferentiations(problem_on(&row)), 0);
}

// An intermediate value (not a leaf) among the tensors differentiated: its gradient and the
// leaf's are replayed for a loss of the same graph and recomputed for another.
TEST(GradientCacheTest, AnIntermediateValueAmongTheTensorsDifferentiated) {
  manual_seed(10);
  auto problem = [](int64_t rows) {
    Tensor x = randn({rows, 4}), w = randn({4, 5});
    return [x, w] {
      Tensor hidden = tanh(matmul(x, w));
      Tensor loss = (hidden * hidden * 0.5 + hidden).mean();
      return std::make_pair(loss, std::vector<Tensor>{hidden, w});
    };
  };
  EXPECT_EQ(CheckedDifferentiations(problem(3)), 1);
  EXPECT_EQ(CheckedDifferentiations(problem(3)), 0);
  EXPECT_EQ(CheckedDifferentiations(problem(6)), 1);
}

// The cache switches read through base::BoolFromEnvironment: a value other than 0 or 1 is an
// error at first use, as for the other VKSPMD_* switches, not silently "on".
TEST(GradientCacheTest, ACacheSwitchOtherThanZeroOrOneIsAnError) {
  Tensor w = tensor(std::vector<float>{1, 2, 3}, {3});
  setenv("VKSPMD_GRADIENT_CACHE", "junk", 1);
  EXPECT_THAT(ThrownMessage([&] { grad((w * w).sum(), {w}); }),
              ::testing::HasSubstr("VKSPMD_GRADIENT_CACHE=junk must be 0 or 1"));
  unsetenv("VKSPMD_GRADIENT_CACHE");
  setenv("VKSPMD_LOWERING_CACHE", "yes", 1);
  EXPECT_THAT(ThrownMessage([&] { (w * 3).to_vector<float>(); }),
              ::testing::HasSubstr("VKSPMD_LOWERING_CACHE=yes must be 0 or 1"));
  unsetenv("VKSPMD_LOWERING_CACHE");
  EXPECT_EQ(Differentiations([&] { grad((w * w).sum(), {w}); }), 1);
  EXPECT_EQ(Differentiations([&] { grad((w * w).sum(), {w}); }), 0);
  EXPECT_EQ((w * 3).to_vector<float>(), (std::vector<float>{3, 6, 9}));
}

// A gather along dim 0 and one along dim 1 of a square tensor have the same shapes and operands:
// only the gather's dimension numbers tell them apart. Gradients: d/dx sum(weights * x[idx]) adds
// weights[i][j] at x[idx[i]][j] (at x[i][idx[j]] along dim 1), computed here by hand.
TEST(GradientCacheTest, GathersAlongOtherDimsAreOtherGraphs) {
  const std::vector<float> x_values = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<float> weights_values = {1, 10, 100, 2, 20, 200, 3, 30, 300};
  const std::vector<int32_t> picks = {2, 0, 2};
  for (int64_t dim : {0, 1}) {
    SCOPED_TRACE(dim);
    Tensor x = tensor(x_values, {3, 3}), weights = tensor(weights_values, {3, 3});
    Tensor idx = tensor(std::span<const int32_t>(picks), {3});
    Tensor picked = dim == 0 ? index(x, {idx}) : index(x, {Slice{}, idx});
    std::vector<Tensor> g;
    EXPECT_EQ(Differentiations([&] { g = grad((picked * weights).sum(), {x}); }), 1);
    std::vector<float> expected(9, 0);
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) {
        const int at = dim == 0 ? picks[i] * 3 + j : i * 3 + picks[j];
        expected[at] += weights_values[i * 3 + j];
      }
    }
    EXPECT_EQ(g[0].to_vector<float>(), expected);
  }
}

}  // namespace
}  // namespace vkspmd::testing
