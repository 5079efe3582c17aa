// auto_shard on the MLP and a small transformer: AdamW training auto-sharded on 2, 4 and 2x2
// devices equals the one-device run (losses and final parameters), a memory limit below data
// parallelism's state shards the parameters, steady steps move no state through the host, and an
// infeasible limit is a clear error.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <memory>

#include "absl/strings/str_join.h"
#include "src/spmd/auto_sharding_cost.h"
#include "tests/lazy/lazy_test_util.h"
#include "tests/nn/reference.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

constexpr uint64_t kSeed = 21;
constexpr int kSteps = 3;

struct TrainingRun {
  std::vector<double> losses;
  std::vector<Values> parameters;
  std::vector<std::string> names;
  AutoShardPlan plan;
  // Per tensor of StateOf's list: the plan's sharding of it ("absent": not in plan.state).
  std::vector<std::string> state_shardings;
};

// The parameters and AdamW's two moments of each: what auto_shard places.
std::vector<Tensor> StateOf(const std::vector<Tensor>& parameters, const optim::AdamW& optimizer) {
  std::vector<Tensor> state = parameters;
  for (size_t i = 0; i < parameters.size(); ++i) {
    state.push_back(optimizer.exp_avg(i));
    state.push_back(optimizer.exp_avg_sq(i));
  }
  return state;
}

// Trains `model` for kSteps AdamW steps on the batches `loss_of` makes; with a mesh the first step
// is auto_shard's, given StateOf's list or (`find_state`) finding the state itself.
TrainingRun Train(nn::Module& model, const std::function<Tensor(int)>& loss_of, const Mesh* mesh,
                  const AutoShardOptions& options = {}, bool find_state = false) {
  std::vector<Tensor> parameters = model.parameters();
  optim::AdamW optimizer(parameters, 1e-2);
  const std::vector<Tensor> state = StateOf(parameters, optimizer);
  mark_step();
  TrainingRun run;
  for (int step = 0; step < kSteps; ++step) {
    Tensor loss;
    auto trace = [&] {
      loss = loss_of(step);
      optimizer.step(grad(loss, parameters));
    };
    if (mesh != nullptr && step == 0) {
      run.plan =
          find_state ? auto_shard(trace, *mesh, options) : auto_shard(trace, *mesh, state, options);
      EXPECT_EQ(run.plan.state.size(), run.plan.shardings.size());
      // The step ran as planned: its new state is where the plan put it.
      for (size_t i = 0; i < run.plan.state.size(); ++i) {
        EXPECT_EQ(sharding_spec(run.plan.state[i]), run.plan.shardings.at(i)) << "state " << i;
      }
      for (const Tensor& tensor : state) {
        auto found = std::find_if(run.plan.state.begin(), run.plan.state.end(),
                                  [&](const Tensor& t) { return t.state() == tensor.state(); });
        run.state_shardings.push_back(found == run.plan.state.end()
                                          ? "absent"
                                          : run.plan.shardings[found - run.plan.state.begin()]);
      }
    } else {
      trace();
      mark_step();
    }
    run.losses.push_back(loss.item());
  }
  for (const auto& [name, parameter] : model.named_parameters()) {
    run.names.push_back(name);
    run.parameters.push_back(parameter.to_vector<float>());
  }
  return run;
}

void ExpectSameTraining(const TrainingRun& actual, const TrainingRun& expected,
                        const std::string& what) {
  ASSERT_EQ(actual.losses.size(), expected.losses.size());
  for (size_t i = 0; i < expected.losses.size(); ++i) {
    EXPECT_NEAR(actual.losses[i], expected.losses[i], 1e-4 * std::abs(expected.losses[i]))
        << what << " step " << i;
  }
  ASSERT_EQ(actual.parameters.size(), expected.parameters.size());
  for (size_t i = 0; i < expected.parameters.size(); ++i) {
    // An attention key's bias adds the same q·b to a query's every score, which softmax
    // cancels: its gradient is rounding noise, which AdamW scales up to lr-sized steps.
    if (expected.names[i].ends_with("key.bias")) continue;
    EXPECT_EQ(CompareValues(actual.parameters[i], expected.parameters[i], 1e-4), "")
        << what << " parameter " << expected.names[i];
  }
}

int64_t ShardedCount(const std::vector<std::string>& shardings, size_t count) {
  int64_t sharded = 0;
  for (size_t i = 0; i < count && i < shardings.size(); ++i) {
    sharded += shardings[i] != "{replicated}" ? 1 : 0;
  }
  return sharded;
}

// The MLP's batches: fixed random inputs, one per step.
std::function<Tensor(int)> MlpLoss(nn::MlpRegressor& model) {
  return [&model](int step) {
    manual_seed(100 + step);
    Tensor x = randn({8, 16});
    Tensor y = randn({8, 4});
    return model.loss(x, y);
  };
}

std::function<Tensor(int)> LanguageModelLoss(nn::TransformerLM& model) {
  return [&model](int step) {
    std::vector<int32_t> tokens, targets;
    for (int32_t i = 0; i < 4 * 6; ++i) {
      tokens.push_back((7 * i + step) % 16);
      targets.push_back((5 * i + 3 * step + 1) % 16);
    }
    return model.loss(tensor(std::span<const int32_t>(tokens), {4, 6}),
                      tensor(std::span<const int32_t>(targets), {4, 6}));
  };
}

// A cost model file for `mesh` whose collectives are nearly free, so the ILP shards even a tiny
// step (under the defaults it stays replicated: each collective costs more than its compute).
std::string CheapCollectivesFile(const Mesh& mesh) {
  absl::StatusOr<spmd::Mesh> shape = spmd::Mesh::Parse(absl::StrJoin(mesh.shape(), "x"));
  EXPECT_TRUE(shape.ok()) << shape.status();
  spmd::CostModel model = spmd::CostModel::Default(*shape);
  for (auto& axis : model.axes) {
    for (spmd::AlphaBeta& collective : axis) collective = {1e-9, 1e-14};
  }
  const std::string path =
      ::testing::TempDir() + "/auto-shard-cheap-" + absl::StrJoin(mesh.shape(), "x");
  std::ofstream(path) << model.Serialize(*shape);
  return path;
}

nn::TransformerConfig SmallConfig() {
  return nn::TransformerConfig{.vocab = 16, .d_model = 16, .heads = 2, .layers = 1, .max_seq = 6};
}

class AutoShardTest : public ::testing::Test {
 protected:
  // The largest mesh first: devices grow only while no tensor lives on them.
  AutoShardTest() : four_({4}, {}, {"x"}), two_({2}, {}, {"x"}), grid_({2, 2}, {}, {"x", "y"}) {}
  Mesh four_, two_, grid_;
};

TEST_F(AutoShardTest, MlpTrainsLikeOneDeviceOnEveryMesh) {
  manual_seed(kSeed);
  nn::MlpRegressor reference(16, 32, 4);
  const TrainingRun expected = Train(reference, MlpLoss(reference), nullptr);
  for (const Mesh* mesh : {&two_, &four_, &grid_}) {
    manual_seed(kSeed);
    nn::MlpRegressor model(16, 32, 4);
    const TrainingRun run = Train(model, MlpLoss(model), mesh);
    ExpectSameTraining(run, expected, mesh->to_string());
    EXPECT_EQ(run.plan.shardings.size(), 3 * model.parameters().size());
    EXPECT_GT(run.plan.instructions, 0);
    EXPECT_NE(run.plan.report.find("modelled step"), std::string::npos);
  }
}

TEST_F(AutoShardTest, TransformerTrainsLikeOneDeviceOnEveryMesh) {
  manual_seed(kSeed);
  nn::TransformerLM reference(SmallConfig());
  const TrainingRun expected = Train(reference, LanguageModelLoss(reference), nullptr);
  for (const Mesh* mesh : {&two_, &four_, &grid_}) {
    manual_seed(kSeed);
    nn::TransformerLM model(SmallConfig());
    AutoShardOptions options;
    options.cost_model_file = CheapCollectivesFile(*mesh);
    const TrainingRun run = Train(model, LanguageModelLoss(model), mesh, options);
    ExpectSameTraining(run, expected, mesh->to_string());
    EXPECT_GE(ShardedCount(run.plan.shardings, run.plan.shardings.size()), 1) << run.plan.report;
    // The plan is kept: every parameter is marked where the plan put it.
    const auto parameters = model.parameters();
    for (size_t i = 0; i < parameters.size(); ++i) {
      EXPECT_EQ(sharding_spec(parameters[i]), run.plan.shardings[i]) << i;
    }
  }
}

// auto_shard(step, mesh) finds the state itself: the parameters and AdamW's moments (StateOf's
// list, which the step assigns after reading), not the one-device reference model's tensors nor
// the step's batch. On the same step it gives the explicit list's plan, and the training equals
// the one-device run.
TEST_F(AutoShardTest, FoundStateGivesTheExplicitListsPlan) {
  for (const bool mlp : {true, false}) {
    std::function<std::unique_ptr<nn::Module>()> make = [mlp]() -> std::unique_ptr<nn::Module> {
      manual_seed(kSeed);
      if (mlp) return std::make_unique<nn::MlpRegressor>(16, 32, 4);
      return std::make_unique<nn::TransformerLM>(SmallConfig());
    };
    auto loss_of = [mlp](nn::Module& model) {
      return mlp ? MlpLoss(static_cast<nn::MlpRegressor&>(model))
                 : LanguageModelLoss(static_cast<nn::TransformerLM&>(model));
    };
    std::unique_ptr<nn::Module> reference = make();
    const TrainingRun expected = Train(*reference, loss_of(*reference), nullptr);
    for (const Mesh* mesh : {&two_, &grid_}) {
      const std::string what =
          std::string(mlp ? "mlp" : "transformer") + " on " + mesh->to_string();
      AutoShardOptions options;
      options.cost_model_file = CheapCollectivesFile(*mesh);
      std::unique_ptr<nn::Module> listed = make();
      const TrainingRun given = Train(*listed, loss_of(*listed), mesh, options);
      std::unique_ptr<nn::Module> model = make();
      const TrainingRun found = Train(*model, loss_of(*model), mesh, options, /*find_state=*/true);
      EXPECT_EQ(found.plan.state.size(), 3 * model->parameters().size()) << what;
      EXPECT_EQ(found.state_shardings, given.state_shardings) << what;
      EXPECT_GE(ShardedCount(found.plan.shardings, found.plan.shardings.size()), 1) << what;
      EXPECT_EQ(found.plan.report, given.plan.report) << what;
      EXPECT_EQ(found.plan.modelled_seconds(), given.plan.modelled_seconds()) << what;
      ExpectSameTraining(found, expected, what);
    }
  }
}

// Once the state sits where the plan put it, a step is one cached graph that moves no state
// through the host: only the batch and AdamW's scalars go up and the loss comes back (a state
// tensor resharded through the host each step, as once made auto slower than dp, adds its KiBs).
TEST_F(AutoShardTest, SteadyStepsMoveNoStateThroughTheHost) {
  manual_seed(kSeed);
  nn::TransformerLM model(SmallConfig());
  std::vector<Tensor> parameters = model.parameters();
  optim::AdamW optimizer(parameters, 1e-2);
  const std::vector<Tensor> state = StateOf(parameters, optimizer);
  mark_step();
  const std::function<Tensor(int)> loss_of = LanguageModelLoss(model);
  Tensor loss;
  auto trace = [&](int step) {
    loss = loss_of(step);
    optimizer.step(grad(loss, parameters));
  };
  AutoShardOptions options;
  options.cost_model_file = CheapCollectivesFile(two_);
  const AutoShardPlan plan = auto_shard([&] { trace(0); }, two_, state, options);
  ASSERT_GE(ShardedCount(plan.shardings, plan.shardings.size()), 1) << plan.report;
  (void)loss.item();
  constexpr int kSettle = 3, kMeasured = 3;
  for (int step = 1; step <= kSettle; ++step) {
    trace(step);
    mark_step();
    (void)loss.item();
  }
  const Metrics before = metrics();
  for (int step = kSettle + 1; step <= kSettle + kMeasured; ++step) {
    trace(step);
    mark_step();
    (void)loss.item();
  }
  const Metrics after = metrics();
  EXPECT_EQ(after.compile_count - before.compile_count, 0);
  // Per step and device: the 2x24 int32 tokens and targets and the 7 float scalars go up, the
  // f32 loss comes back. The smallest state tensor (a [16] bias) alone is 64 bytes.
  const int64_t devices = 2;
  EXPECT_LE(after.host_to_device_bytes - before.host_to_device_bytes,
            kMeasured * devices * (2 * 24 * 4 + 7 * 4));
  EXPECT_LE(after.device_to_host_bytes - before.device_to_host_bytes, kMeasured * devices * 4);
}

TEST_F(AutoShardTest, AMemoryLimitBelowDataParallelismShardsTheParameters) {
  manual_seed(kSeed);
  nn::MlpRegressor reference(16, 256, 4);
  const TrainingRun expected = Train(reference, MlpLoss(reference), nullptr);
  int64_t state_bytes = 0;  // The parameters and AdamW's two moments.
  for (const Tensor& parameter : reference.parameters()) state_bytes += 3 * 4 * parameter.numel();
  // Unlimited, this tiny model's step is cheapest replicated (collectives cost more than its
  // compute under the default model): every device holds the whole state, as under data
  // parallelism.
  manual_seed(kSeed);
  nn::MlpRegressor unlimited(16, 256, 4);
  const TrainingRun replicated = Train(unlimited, MlpLoss(unlimited), &four_);
  EXPECT_EQ(ShardedCount(replicated.plan.shardings, replicated.plan.shardings.size()), 0);
  EXPECT_GT(replicated.plan.peak_memory_bytes, state_bytes);
  // A limit half the state below that peak: data parallelism's replicated state does not fit.
  manual_seed(kSeed);
  nn::MlpRegressor model(16, 256, 4);
  AutoShardOptions options;
  options.memory_limit_bytes = replicated.plan.peak_memory_bytes - state_bytes / 2;
  const TrainingRun run = Train(model, MlpLoss(model), &four_, options);
  ExpectSameTraining(run, expected, "memory limit");
  EXPECT_LE(run.plan.peak_memory_bytes, *options.memory_limit_bytes);
  // The largest parameter (fc1.weight, [256, 16]) at least, and its state.
  EXPECT_NE(run.plan.shardings[0], "{replicated}") << run.plan.report;
  EXPECT_GE(ShardedCount(run.plan.shardings, run.plan.shardings.size()), 2) << run.plan.report;
}

TEST_F(AutoShardTest, AnInfeasibleMemoryLimitIsAClearErrorAndLeavesTheStateAlone) {
  manual_seed(kSeed);
  nn::MlpRegressor model(16, 32, 4);
  std::vector<Tensor> parameters = model.parameters();
  optim::SGD optimizer(parameters, 1e-2);
  mark_step();
  const Values before = parameters[0].to_vector<float>();
  AutoShardOptions options;
  options.memory_limit_bytes = 64;
  try {
    auto_shard([&] { optimizer.step(grad(MlpLoss(model)(0), parameters)); }, two_, parameters,
               options);
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition) << error.what();
    EXPECT_NE(std::string(error.what()).find("memory limit"), std::string::npos) << error.what();
  }
  EXPECT_EQ(parameters[0].to_vector<float>(), before);
  EXPECT_EQ(sharding_spec(parameters[0]), "");  // Still on one device, unmarked.
  // Bad options are refused before any work.
  options.memory_limit_bytes = 0;
  EXPECT_THROW(auto_shard([] {}, two_, parameters, options), Error);
  options = {};
  options.cost_model_file = "/nonexistent/cost-model";
  EXPECT_THROW(auto_shard([] {}, two_, parameters, options), Error);
}

}  // namespace
}  // namespace vkspmd::testing
