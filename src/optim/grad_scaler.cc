// Dynamic loss scaling (torch.cuda.amp.GradScaler): scale, unscale with the overflow check,
// skip, back off and grow.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "src/lazy/tensor_state.h"
#include "vkspmd/lazy.h"
#include "vkspmd/ops.h"
#include "vkspmd/optim.h"

namespace vkspmd::optim {
namespace {

void CheckScale(double scale, const char* where) {
  if (!(std::isfinite(scale) && scale > 0)) {
    throw Error(ErrorCode::kInvalidArgument, std::string(where) +
                                                 ": the scale must be positive and finite, not " +
                                                 std::to_string(scale));
  }
}

// Whether `tensor` is marked to be split over more than one device (a maximal sharding, on one
// device of several, counts: concatenating it with replicated values would move it).
bool SplitOverDevices(const Tensor& tensor) {
  const std::optional<lazy::ShardingAnnotation>& annotation = tensor.state()->annotation;
  if (!annotation.has_value() || annotation->mesh.size() <= 1) return false;
  const spmd::AxisSharding& sharding = annotation->sharding;
  if (sharding.maximal_device.has_value() || sharding.manual || !sharding.manual_axes.empty()) {
    return true;
  }
  for (const std::vector<int64_t>& axes : sharding.dims) {
    for (int64_t axis : axes) {
      if (annotation->mesh.shape().at(static_cast<size_t>(axis)) > 1) return true;
    }
  }
  return false;
}

}  // namespace

GradScaler::GradScaler(double init_scale, double growth_factor, double backoff_factor,
                       int64_t growth_interval)
    : scale_(init_scale),
      growth_factor_(growth_factor),
      backoff_factor_(backoff_factor),
      growth_interval_(growth_interval) {
  CheckScale(init_scale, "GradScaler");
  if (!(growth_factor > 1) || !(backoff_factor > 0 && backoff_factor < 1) || growth_interval < 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "GradScaler: expected growth_factor > 1, 0 < backoff_factor < 1 and "
                "growth_interval >= 1, not " +
                    std::to_string(growth_factor) + ", " + std::to_string(backoff_factor) + ", " +
                    std::to_string(growth_interval));
  }
}

Tensor GradScaler::scale(const Tensor& loss) const {
  loss_ = loss;
  return loss.to(float32) * vkspmd::scalar(scale_);
}

bool GradScaler::step(Optimizer& optimizer, const std::vector<Tensor>& grads) {
  const Tensor inverse = vkspmd::scalar(1.0 / scale_);
  std::vector<Tensor> unscaled(grads.size());
  // 0 when every gradient is finite, NaN otherwise (inf * 0 and NaN * 0 are NaN): the sum of
  // every gradient's elements times 0, taken over the concatenation of kProbesPerSum probes at a
  // time, each sum the first element of the next concatenation. A sum is one reduction kernel
  // (two for long ones) binding its probes, the zero, the sum before and its result: 16 buffers,
  // the fewest a device we know of allows (lavapipe 32). One sum per gradient was a chain of 37
  // kernels a step for the default transformer. A gradient split over several devices is summed
  // on its own first (its probe is that scalar): flattening and concatenating it would gather it
  // whole on every device, where its own sum is a partial sum per device and one scalar
  // all-reduce.
  constexpr size_t kProbesPerSum = 13;
  const Tensor zero = vkspmd::scalar(0.0);  // One parameter for every probe.
  Tensor overflow = zero;
  std::vector<Tensor> probes;
  size_t fresh = 0;  // Probes in `probes` not yet summed.
  const auto sum_probes = [&] {
    overflow = vkspmd::cat(probes).sum();
    probes = {overflow.reshape({1})};
    fresh = 0;
  };
  const std::vector<Tensor>& params = optimizer.params();
  std::vector<Tensor> computed;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) continue;
    unscaled[i] = grads[i].to(float32) * inverse;
    computed.push_back(unscaled[i]);
    const Tensor probe = unscaled[i] * zero;
    if (SplitOverDevices(grads[i]) || (i < params.size() && SplitOverDevices(params[i]))) {
      probes.push_back(probe.sum().reshape({1}));
    } else {
      probes.push_back(probe.reshape({unscaled[i].numel()}));
    }
    if (++fresh == kProbesPerSum) sum_probes();
  }
  // The last probes, whatever follows them (a list ending in undefined gradients included).
  if (fresh > 0) sum_probes();
  // The one value read. The graph computing it also keeps the unscaled gradients and the loss
  // last passed to scale(), so the update traced after it reads them: reading the flag alone
  // left them to the step's next graph, which ran the forward and backward pass again.
  computed.push_back(overflow);
  if (loss_.defined()) computed.push_back(loss_);
  loss_ = Tensor();
  vkspmd::sync(computed);
  found_inf_ = !std::isfinite(overflow.item());
  if (*found_inf_) {
    ++skipped_steps_;
    return false;
  }
  optimizer.step(unscaled);
  return true;
}

void GradScaler::update() {
  if (!found_inf_.has_value()) {
    throw Error(ErrorCode::kFailedPrecondition, "GradScaler::update: no step() since the last one");
  }
  if (*found_inf_) {
    scale_ *= backoff_factor_;
    growth_tracker_ = 0;
  } else if (++growth_tracker_ == growth_interval_) {
    scale_ *= growth_factor_;
    growth_tracker_ = 0;
  }
  found_inf_.reset();
}

void GradScaler::load_state(double scale, int64_t growth_tracker) {
  CheckScale(scale, "GradScaler::load_state");
  if (growth_tracker < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "GradScaler::load_state: the growth tracker is negative (" +
                    std::to_string(growth_tracker) + ")");
  }
  scale_ = scale;
  growth_tracker_ = growth_tracker;
  found_inf_.reset();
}

}  // namespace vkspmd::optim
