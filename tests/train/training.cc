// The training tests' models, batches and loop (see training.h).
#include "tests/train/training.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <span>
#include <utility>

#include "fmt/format.h"

namespace vkspmd::testing {

nn::TransformerConfig TransformerConfigForTests() {
  return nn::TransformerConfig{
      .vocab = kVocab, .d_model = kDModel, .heads = kHeads, .layers = kLayers, .max_seq = kSeq};
}

Batches MakeBatches(int64_t steps) {
  std::mt19937 generator(1234);
  std::uniform_int_distribution<int32_t> start(0, kVocab - 1), stride(1, 3);
  Batches batches;
  for (int64_t sequence = 0; sequence < steps * kBatch; ++sequence) {
    const int32_t first = start(generator), step = stride(generator);
    for (int64_t position = 0; position < kSeq; ++position) {
      batches.tokens.push_back(static_cast<int32_t>((first + position * step) % kVocab));
      batches.targets.push_back(static_cast<int32_t>((first + (position + 1) * step) % kVocab));
    }
  }
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> mixing(kFeatures * kOutputs);
  for (float& weight : mixing) weight = normal(generator) / std::sqrt(float{kFeatures});
  for (int64_t sample = 0; sample < steps * kBatch; ++sample) {
    const size_t row = batches.x.size();
    for (int64_t i = 0; i < kFeatures; ++i) batches.x.push_back(normal(generator));
    for (int64_t j = 0; j < kOutputs; ++j) {
      float sum = 0;
      for (int64_t i = 0; i < kFeatures; ++i) sum += batches.x[row + i] * mixing[i * kOutputs + j];
      batches.y.push_back(std::sin(2 * sum));
    }
  }
  return batches;
}

TrainingModel::TrainingModel(ModelKind kind, int64_t steps)
    : kind_(kind), batches_(MakeBatches(steps)) {
  manual_seed(kModelSeed);
  if (kind == ModelKind::kTransformer) {
    module_ = std::make_unique<nn::TransformerLM>(TransformerConfigForTests());
  } else {
    module_ = std::make_unique<nn::MlpRegressor>(kFeatures, kHidden, kOutputs);
  }
}

Tensor TrainingModel::Loss(int64_t step) {
  auto rows = [step](const auto& all, int64_t width) {
    const int64_t count = kBatch * width;
    return std::span(all).subspan(static_cast<size_t>(step * count), static_cast<size_t>(count));
  };
  if (kind_ == ModelKind::kTransformer) {
    Tensor tokens = module_->shard_input(tensor(rows(batches_.tokens, kSeq), {kBatch, kSeq}));
    Tensor targets = module_->shard_input(tensor(rows(batches_.targets, kSeq), {kBatch, kSeq}));
    return static_cast<nn::TransformerLM&>(*module_).loss(tokens, targets);
  }
  Tensor x = module_->shard_input(tensor(rows(batches_.x, kFeatures), {kBatch, kFeatures}));
  Tensor y = module_->shard_input(tensor(rows(batches_.y, kOutputs), {kBatch, kOutputs}));
  return static_cast<nn::MlpRegressor&>(*module_).loss(x, y);
}

double LearningRate(OptimizerKind kind) { return kind == OptimizerKind::kAdamW ? 1e-2 : 5e-2; }

std::unique_ptr<optim::Optimizer> MakeOptimizer(OptimizerKind kind,
                                                const std::vector<Tensor>& parameters) {
  if (kind == OptimizerKind::kAdamW) {
    return std::make_unique<optim::AdamW>(parameters, LearningRate(kind));
  }
  return std::make_unique<optim::SGD>(parameters, LearningRate(kind), /*momentum=*/0.9);
}

TrainingRun Train(ModelKind model_kind, OptimizerKind optimizer_kind, int64_t steps,
                  const std::string& strategy, const Mesh* mesh, DType compute_dtype) {
  TrainingModel model(model_kind, steps);
  if (mesh != nullptr) nn::apply_strategy(model.module(), *mesh, strategy);
  model.module().set_compute_dtype(compute_dtype);
  std::unique_ptr<optim::GradScaler> scaler;
  if (compute_dtype == float16) scaler = std::make_unique<optim::GradScaler>();
  const std::vector<Tensor> parameters = model.module().parameters();
  std::unique_ptr<optim::Optimizer> optimizer = MakeOptimizer(optimizer_kind, parameters);
  mark_step();  // The initial parameters and optimizer state: every step then has one graph.
  const int64_t compilations_before = metrics().compile_count;
  TrainingRun run;
  for (int64_t step = 0; step < steps; ++step) {
    Tensor loss = model.Loss(step);
    if (scaler != nullptr) {
      scaler->step(*optimizer, grad(scaler->scale(loss), parameters));
      scaler->update();
    } else {
      optimizer->step(grad(loss, parameters));
    }
    mark_step();
    run.losses.push_back(loss.item());
  }
  run.step_compilations = metrics().compile_count - compilations_before;
  for (const auto& [name, parameter] : model.module().named_parameters()) {
    run.parameters[name] = parameter.to_vector<float>();
  }
  return run;
}

namespace {

// The largest difference of one parameter relative to max(1, |expected|), and where it is.
std::pair<double, size_t> WorstElement(const std::vector<float>& actual,
                                       const std::vector<float>& expected) {
  std::pair<double, size_t> worst{0, 0};
  for (size_t i = 0; i < expected.size(); ++i) {
    const double error =
        std::fabs(actual[i] - expected[i]) / std::max(1.0, std::fabs(double{expected[i]}));
    if (!(error <= worst.first)) worst = {error, i};  // NaN counts as the worst.
  }
  return worst;
}

double LossDifference(double actual, double expected) {
  return std::fabs(actual - expected) / std::fabs(expected);
}

}  // namespace

RunDifference MeasureDifference(const TrainingRun& actual, const TrainingRun& expected,
                                const std::function<bool(const std::string& name)>& skip) {
  RunDifference difference;
  for (size_t step = 0; step < std::min(actual.losses.size(), expected.losses.size()); ++step) {
    difference.loss =
        std::max(difference.loss, LossDifference(actual.losses[step], expected.losses[step]));
  }
  for (const auto& [name, values] : expected.parameters) {
    const auto found = actual.parameters.find(name);
    if ((skip && skip(name)) || found == actual.parameters.end() ||
        found->second.size() != values.size()) {
      continue;
    }
    const double worst = WorstElement(found->second, values).first;
    if (worst > difference.parameter) {
      difference.parameter = worst;
      difference.worst_parameter = name;
    }
  }
  return difference;
}

std::string CompareRuns(const TrainingRun& actual, const TrainingRun& expected,
                        double loss_relative, const ParameterTolerance& parameter_tolerance) {
  if (actual.losses.size() != expected.losses.size()) return "different step counts";
  std::string differences;
  for (size_t step = 0; step < expected.losses.size(); ++step) {
    const double error = LossDifference(actual.losses[step], expected.losses[step]);
    if (!(error < loss_relative)) {
      differences += fmt::format("loss of step {}: {:.9g} vs {:.9g} (relative {:.3g})\n", step,
                                 actual.losses[step], expected.losses[step], error);
    }
  }
  for (const auto& [name, values] : expected.parameters) {
    const auto found = actual.parameters.find(name);
    if (found == actual.parameters.end() || found->second.size() != values.size()) {
      differences += fmt::format("parameter {}: missing or of another size\n", name);
      continue;
    }
    const auto [worst, index] = WorstElement(found->second, values);
    if (!(worst <= parameter_tolerance(name))) {
      differences +=
          fmt::format("parameter {}[{}]: {:.9g} vs {:.9g} (tolerance {:.3g})\n", name, index,
                      found->second[index], values[index], parameter_tolerance(name));
    }
  }
  return differences;
}

}  // namespace vkspmd::testing
