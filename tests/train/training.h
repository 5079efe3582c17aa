// Test support for the training tests: the tiny transformer and MLP regressor, their batches (the
// same for every run, so a sharded run and the single-device run see the same data), and one
// training loop as `vkspmd train` runs it (seed, model, strategy, optimizer, mark_step, steps).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {

enum class ModelKind { kTransformer, kMlp };
enum class OptimizerKind { kAdamW, kSgdMomentum };

// The models' sizes. Four heads and a vocabulary of 16 split evenly over 4 tensor-parallel
// devices; a batch of 8 splits over 4 data-parallel ones.
inline constexpr int64_t kVocab = 16, kDModel = 16, kHeads = 4, kLayers = 2, kSeq = 8;
inline constexpr int64_t kBatch = 8;
inline constexpr int64_t kFeatures = 8, kHidden = 32, kOutputs = 2;
inline constexpr uint64_t kModelSeed = 7;

nn::TransformerConfig TransformerConfigForTests();

// The batches of `steps` steps, as flat row-major host values: the transformer's int32 tokens
// and next-token targets [steps, kBatch, kSeq] (sequences counting up from a random start by a
// random stride, so the loss can fall), or the regressor's x [steps, kBatch, kFeatures] ~ N(0, 1)
// and y [steps, kBatch, kOutputs] a smooth function of x.
struct Batches {
  std::vector<int32_t> tokens, targets;
  std::vector<float> x, y;
};
Batches MakeBatches(int64_t steps);

// A model of `kind` with its loss over the batches of MakeBatches(steps).
class TrainingModel {
 public:
  // Draws the parameters from the seeded generator (manual_seed(kModelSeed) first).
  TrainingModel(ModelKind kind, int64_t steps);
  nn::Module& module() { return *module_; }
  // The loss of batch `step` (pending), inputs placed with shard_input.
  Tensor Loss(int64_t step);

 private:
  ModelKind kind_;
  Batches batches_;
  std::unique_ptr<nn::Module> module_;
};

std::unique_ptr<optim::Optimizer> MakeOptimizer(OptimizerKind kind,
                                                const std::vector<Tensor>& parameters);
// The learning rates the tests use (PyTorch's defaults for everything else in AdamW; SGD has
// momentum 0.9).
double LearningRate(OptimizerKind kind);

struct TrainingRun {
  std::vector<double> losses;
  std::map<std::string, std::vector<float>> parameters;  // By dotted name, after the last step.
  int64_t step_compilations = 0;                         // Compilations during the steps.
};

// Trains `steps` steps: the model, `strategy` on `mesh` ("" and nullptr: no strategy, one device),
// the optimizer, mark_step, then per step loss → grad → optimizer step → mark_step → loss.item().
// A float16 or bfloat16 `compute_dtype` trains with mixed precision as `vkspmd train
// --precision` does (float16 with an optim::GradScaler).
TrainingRun Train(ModelKind model, OptimizerKind optimizer, int64_t steps,
                  const std::string& strategy = "", const Mesh* mesh = nullptr,
                  DType compute_dtype = float32);

// A parameter's tolerance after training, relative to max(1, |expected|), by dotted name.
using ParameterTolerance = std::function<double(const std::string& name)>;

// The largest relative difference of the losses, and of the parameters (relative to
// max(1, |expected|)) with the parameter that has it, leaving out those `skip` names.
struct RunDifference {
  double loss = 0, parameter = 0;
  std::string worst_parameter;
};
RunDifference MeasureDifference(const TrainingRun& actual, const TrainingRun& expected,
                                const std::function<bool(const std::string& name)>& skip = {});

// "" when the runs' losses agree within `loss_relative` and every parameter within its
// tolerance, else the differences.
std::string CompareRuns(const TrainingRun& actual, const TrainingRun& expected,
                        double loss_relative, const ParameterTolerance& parameter_tolerance);

}  // namespace vkspmd::testing
