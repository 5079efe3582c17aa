// The training peer check against PyTorch: the tiny transformer and the MLP regressor, their
// initial weights (Module::save_npy) and batches exported as .npy, trained for 20 steps here (one
// lavapipe device) and by PyTorch on the CPU (tests/train/torch_training.py with the twins of
// tests/nn/torch_models.py, run by Debian's /usr/bin/python3) with the same optimizer: AdamW
// (PyTorch's defaults except lr) for both models, SGD with momentum for the MLP. The per-step
// losses agree to 1e-4 relative. Skipped, saying why, when that interpreter cannot import torch.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>

#include "fmt/format.h"
#include "tests/train/training.h"

namespace vkspmd::testing {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kSteps = 20;

struct PeerRun {
  ModelKind model;
  OptimizerKind optimizer;
  std::string name;
};

void PrintTo(const PeerRun& run, std::ostream* out) { *out << run.name; }

std::string RunJson(const PeerRun& run) {
  const std::string config =
      run.model == ModelKind::kTransformer
          ? fmt::format(
                R"({{"vocab": {}, "d_model": {}, "heads": {}, "layers": {}, "max_seq": {}}})",
                kVocab, kDModel, kHeads, kLayers, kSeq)
          : fmt::format(R"({{"in_features": {}, "hidden_features": {}, "out_features": {}}})",
                        kFeatures, kHidden, kOutputs);
  return fmt::format(
      R"([{{"name": "{}", "model": "{}", "config": {}, "optimizer": "{}", "lr": {}, "momentum": 0.9}}])",
      run.name, run.model == ModelKind::kTransformer ? "transformer" : "mlp", config,
      run.optimizer == OptimizerKind::kAdamW ? "adamw" : "sgd", LearningRate(run.optimizer));
}

std::vector<double> ReadLosses(const fs::path& path) {
  std::ifstream in(path);
  std::vector<double> losses;
  for (double loss; in >> loss;) losses.push_back(loss);
  return losses;
}

class TorchTrainingPeerTest : public ::testing::TestWithParam<PeerRun> {
 protected:
  void SetUp() override {
    python_ = VKSPMD_TORCH_PYTHON;
    if (std::system((python_ + " -c 'import torch, numpy' >/dev/null 2>&1").c_str()) != 0) {
      GTEST_SKIP() << python_ << " cannot import torch and numpy (Debian: apt install "
                   << "python3-torch python3-numpy)";
    }
    directory_ = fs::path(::testing::TempDir()) /
                 fmt::format("vkspmd_train_torch_peer_{}_{}", GetParam().name, ::getpid());
    fs::remove_all(directory_);
    fs::create_directories(directory_);
  }
  void TearDown() override {
    if (!directory_.empty()) fs::remove_all(directory_);
  }

  std::string python_;
  fs::path directory_;
};

TEST_P(TorchTrainingPeerTest, PerStepLossesMatchPyTorch) {
  const PeerRun& run = GetParam();
  {  // The initial weights, drawn as Train draws them.
    TrainingModel model(run.model, kSteps);
    model.module().save_npy((directory_ / run.name).string());
  }
  const Batches batches = MakeBatches(kSteps);
  auto save = [&](const auto& values, std::vector<int64_t> shape, const char* name) {
    tensor(values, std::move(shape)).to_npy((directory_ / name).string());
  };
  save(batches.tokens, {kSteps, kBatch, kSeq}, "tokens.npy");
  save(batches.targets, {kSteps, kBatch, kSeq}, "targets.npy");
  save(batches.x, {kSteps, kBatch, kFeatures}, "x.npy");
  save(batches.y, {kSteps, kBatch, kOutputs}, "y.npy");
  std::ofstream(directory_ / "runs.json") << RunJson(run);
  const fs::path log = directory_ / "torch.log";
  const std::string command = fmt::format("{} {} {} > {} 2>&1", python_, VKSPMD_TORCH_TRAINING,
                                          directory_.string(), log.string());
  const int status = std::system(command.c_str());
  std::ifstream log_stream(log);
  ASSERT_EQ(status, 0) << command << "\n"
                       << std::string(std::istreambuf_iterator<char>(log_stream), {});
  const std::vector<double> expected = ReadLosses(directory_ / ("losses_" + run.name + ".txt"));
  ASSERT_EQ(expected.size(), static_cast<size_t>(kSteps));

  const TrainingRun actual = Train(run.model, run.optimizer, kSteps);
  double worst = 0;
  for (int64_t step = 0; step < kSteps; ++step) {
    const double relative =
        std::fabs(actual.losses[step] - expected[step]) / std::fabs(expected[step]);
    worst = std::max(worst, relative);
    EXPECT_LT(relative, 1e-4) << run.name << " step " << step << ": " << actual.losses[step]
                              << " here, " << expected[step] << " in PyTorch";
  }
  EXPECT_LT(expected.back(), 0.9 * expected.front()) << "PyTorch's run did not learn";
  fmt::print("{}: largest relative loss difference to PyTorch over {} steps {:.3g}\n", run.name,
             kSteps, worst);
}

INSTANTIATE_TEST_SUITE_P(
    Runs, TorchTrainingPeerTest,
    ::testing::Values(PeerRun{ModelKind::kTransformer, OptimizerKind::kAdamW, "transformer_adamw"},
                      PeerRun{ModelKind::kMlp, OptimizerKind::kAdamW, "mlp_adamw"},
                      PeerRun{ModelKind::kMlp, OptimizerKind::kSgdMomentum, "mlp_sgd"}),
    [](const ::testing::TestParamInfo<PeerRun>& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace vkspmd::testing
