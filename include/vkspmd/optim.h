// Optimizers with PyTorch's formulas (torch.optim.SGD and torch.optim.AdamW, single-tensor
// form). An update is traced like any op: every parameter and every state tensor is updated with
// assign, so a step's graph writes them in place (donated buffers) and, since the learning rate
// and everything derived from the step count are graph parameters, a run compiles its step once
// even with a learning-rate schedule. State tensors are created at construction, zero, and
// sharded like their parameter (mark_sharding_like): call mark_step() after constructing the
// optimizer so the first training step already has the graph of every later one. GradScaler
// adds PyTorch's dynamic loss scaling for float16 mixed precision.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vkspmd/tensor.h"

namespace vkspmd::optim {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter with grads[i] (one per parameter, in order, each of its
  // parameter's shape; an undefined grads[i] skips parameter i, as PyTorch skips a None grad).
  void step(const std::vector<Tensor>& grads);
  // The same with each parameter's grad() (set by backward); parameters without one are skipped.
  void step();

  double lr() const { return lr_; }
  // Takes effect at the next step; the learning rate is a graph parameter (no recompilation).
  void set_lr(double lr);
  // Steps taken by parameter i (AdamW's bias correction counts them per parameter, as PyTorch).
  int64_t step_count(size_t i = 0) const { return steps_.at(i); }
  const std::vector<Tensor>& params() const { return params_; }

  // For checkpoints (vkspmd/checkpoint.h): every step count, and setting them back (one per
  // parameter, none negative, else it throws); the state tensors by name ("exp_avg.3"), each
  // held by reference, so restoring one updates the optimizer.
  const std::vector<int64_t>& step_counts() const { return steps_; }
  void set_step_counts(const std::vector<int64_t>& counts);
  virtual std::vector<std::pair<std::string, Tensor>> state_tensors() const = 0;

 protected:
  // Throws for an empty list, an undefined or non-floating parameter, a repeated one, or a
  // negative learning rate.
  Optimizer(std::vector<Tensor> params, double lr);
  // Updates parameter i with `grad` at its `step`-th step (1 the first).
  virtual void Update(size_t i, const Tensor& grad, int64_t step) = 0;
  // Called once a step's parameters were all updated: per-step state kept while updating them
  // can be dropped here.
  virtual void FinishStep() {}
  // A zero tensor shaped and sharded like parameter i.
  Tensor ZerosLikeParam(size_t i) const;

 private:
  std::vector<Tensor> params_;
  std::vector<int64_t> steps_;
  double lr_;
};

// torch.optim.SGD: d = g + weight_decay * p; with momentum, buf = momentum * buf +
// (1 - dampening) * d (buf = d at the first step), d = nesterov ? d + momentum * buf : buf;
// p -= lr * d.
class SGD : public Optimizer {
 public:
  // Throws for negative lr, momentum or weight_decay, and for nesterov without momentum or with
  // dampening (PyTorch's checks).
  SGD(std::vector<Tensor> params, double lr, double momentum = 0, double dampening = 0,
      double weight_decay = 0, bool nesterov = false);
  // The momentum buffer of parameter i (undefined without momentum).
  const Tensor& momentum_buffer(size_t i) const { return buffers_.at(i); }
  // "momentum_buffer.<i>" per parameter (none without momentum).
  std::vector<std::pair<std::string, Tensor>> state_tensors() const override;

 private:
  void Update(size_t i, const Tensor& grad, int64_t step) override;

  double momentum_, dampening_, weight_decay_;
  bool nesterov_;
  std::vector<Tensor> buffers_;
};

// torch.optim.AdamW (decoupled weight decay): p *= 1 - lr * weight_decay;
// m = m + (1 - beta1) * (g - m); v = beta2 * v + (1 - beta2) * g * g;
// p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps), t the parameter's step.
class AdamW : public Optimizer {
 public:
  // Throws for negative lr, eps or weight_decay, and betas outside [0, 1) (PyTorch's checks).
  explicit AdamW(std::vector<Tensor> params, double lr = 1e-3,
                 std::pair<double, double> betas = {0.9, 0.999}, double eps = 1e-8,
                 double weight_decay = 1e-2);
  const Tensor& exp_avg(size_t i) const { return exp_avg_.at(i); }
  const Tensor& exp_avg_sq(size_t i) const { return exp_avg_sq_.at(i); }
  // "exp_avg.<i>" and "exp_avg_sq.<i>" per parameter.
  std::vector<std::pair<std::string, Tensor>> state_tensors() const override;

 private:
  void Update(size_t i, const Tensor& grad, int64_t step) override;
  // Drops the step's scalars: they are lazy slices of one host tensor, and a live one at
  // mark_step would be computed by a graph of its own.
  void FinishStep() override { step_scalars_.clear(); }
  // The update's host numbers at `step` as 0-d tensors of `dtype`, the same tensors for every
  // parameter at that step (weight decay factor, 1 - beta1, beta2, 1 - beta2, sqrt of the second
  // bias correction, eps, step size).
  const std::vector<Tensor>& StepScalars(int64_t step, DType dtype);

  double beta1_, beta2_, eps_, weight_decay_;
  std::vector<Tensor> exp_avg_, exp_avg_sq_;
  struct ScalarsEntry {
    int64_t step;
    DType dtype;
    std::vector<double> values;
    std::vector<Tensor> tensors;
  };
  std::vector<ScalarsEntry> step_scalars_;
};

// Dynamic loss scaling for float16 mixed precision (torch.cuda.amp.GradScaler): the loss is
// multiplied by the scale before the gradients are taken, so small gradients do not flush to
// zero in float16; step() divides the gradients by it (in float32) and skips the optimizer step
// when any of them is inf or NaN; update() then halves the scale (backoff_factor), or multiplies
// it by growth_factor after growth_interval good steps in a row. The scale is a graph parameter.
// step() reads one value (whether a gradient overflowed), so the forward and backward pass run
// before the update is traced: a step is two graphs, each compiled once. The first also keeps
// the unscaled gradients and the loss last passed to scale(), so the second is only the update
// (it does not run the forward and backward pass again).
class GradScaler {
 public:
  // Throws for a scale that is not positive and finite, growth_factor <= 1, backoff_factor
  // outside (0, 1), or growth_interval < 1 (PyTorch's checks).
  explicit GradScaler(double init_scale = 65536.0, double growth_factor = 2.0,
                      double backoff_factor = 0.5, int64_t growth_interval = 2000);

  // loss * scale, in float32. The next step() computes `loss` with the gradients.
  Tensor scale(const Tensor& loss) const;
  // Unscales `grads` (one per optimizer parameter, as Optimizer::step takes them) and steps the
  // optimizer with them unless one holds an inf or NaN. Returns whether it stepped.
  bool step(Optimizer& optimizer, const std::vector<Tensor>& grads);
  // Adjusts the scale after step() (throws when step() was not called since the last update).
  void update();

  double get_scale() const { return scale_; }
  // Good steps in a row since the scale last changed.
  int64_t growth_tracker() const { return growth_tracker_; }
  // Steps skipped so far (gradients with an inf or NaN).
  int64_t skipped_steps() const { return skipped_steps_; }
  // For checkpoints: the scale and the growth tracker (throws for a bad scale or a negative
  // tracker).
  void load_state(double scale, int64_t growth_tracker);

 private:
  double scale_, growth_factor_, backoff_factor_;
  int64_t growth_interval_;
  int64_t growth_tracker_ = 0;
  int64_t skipped_steps_ = 0;
  // Whether the last step() found an inf or NaN; empty when update() has nothing to apply.
  std::optional<bool> found_inf_;
  // The loss last passed to scale(), until step() computes it.
  mutable Tensor loss_;
};

}  // namespace vkspmd::optim
