// The sharding strategies: parameter annotations (mark_sharding) and the model's plan for its
// activation constraints. The partitioner derives every collective from these.
#include "vkspmd/parallel.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "vkspmd/sharded_tensor.h"

namespace vkspmd::nn {
namespace {

// Throws, naming the strategy and the mesh's axes, unless the mesh has an axis `axis`.
void RequireAxis(const Mesh& mesh, const std::string& axis, const std::string& strategy) {
  const std::vector<std::string>& names = mesh.axis_names();
  if (std::find(names.begin(), names.end(), axis) == names.end()) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat(
                    "strategy ", strategy, ": ", mesh.to_string(), " has no axis named \"", axis,
                    "\" (its axes: ", names.empty() ? "unnamed" : absl::StrJoin(names, ", "), ")"));
  }
}

// The first of the largest dims, as PyTorch/XLA's FSDPv2 picks with shard_maximal.
size_t LargestDim(const std::vector<int64_t>& shape) {
  return static_cast<size_t>(std::max_element(shape.begin(), shape.end()) - shape.begin());
}

// Sets the plan (which checks every module can run under it), then marks every parameter.
void Apply(Module& model, ParallelPlan plan) {
  for (const std::string* axis : {&plan.data_axis, &plan.model_axis, &plan.fsdp_axis}) {
    if (!axis->empty()) RequireAxis(plan.mesh, *axis, plan.strategy);
  }
  if (!plan.data_axis.empty() && plan.data_axis == plan.model_axis) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("strategy ", plan.strategy, ": the data and model axes must differ"));
  }
  auto shared = std::make_shared<const ParallelPlan>(std::move(plan));
  model.set_parallel_plan(shared);
  for (const NamedParameter& entry : model.parameter_table()) {
    const std::vector<int64_t>& shape = entry.tensor.shape();
    PartitionSpec spec(shape.size(), None);
    if (!shared->fsdp_axis.empty() && !shape.empty()) spec[LargestDim(shape)] = shared->fsdp_axis;
    if (!shared->model_axis.empty() && entry.tensor_parallel_dim >= 0) {
      spec[static_cast<size_t>(entry.tensor_parallel_dim)] = shared->model_axis;
    }
    mark_sharding(entry.tensor, shared->mesh, spec);
  }
}

Error UnknownStrategy(const std::string& strategy) {
  return Error(ErrorCode::kInvalidArgument,
               absl::StrCat("unknown strategy \"", strategy, "\" (dp, tp, dp+tp or fsdp)"));
}

}  // namespace

void data_parallel(Module& model, const Mesh& mesh, const std::string& data_axis) {
  Apply(model, ParallelPlan{"dp", mesh, data_axis, "", ""});
}

void tensor_parallel(Module& model, const Mesh& mesh, const std::string& model_axis) {
  Apply(model, ParallelPlan{"tp", mesh, "", model_axis, ""});
}

void data_tensor_parallel(Module& model, const Mesh& mesh, const std::string& data_axis,
                          const std::string& model_axis) {
  Apply(model, ParallelPlan{"dp+tp", mesh, data_axis, model_axis, ""});
}

void fsdp_v2(Module& model, const Mesh& mesh, const std::string& fsdp_axis) {
  // The batch goes over the same axis as the parameters' shards (FSDPv2's shard_output).
  Apply(model, ParallelPlan{"fsdp", mesh, fsdp_axis, "", fsdp_axis});
}

void apply_strategy(Module& model, const Mesh& mesh, const std::string& strategy) {
  if (strategy == "dp") return data_parallel(model, mesh);
  if (strategy == "tp") return tensor_parallel(model, mesh);
  if (strategy == "dp+tp") return data_tensor_parallel(model, mesh);
  if (strategy == "fsdp") return fsdp_v2(model, mesh);
  throw UnknownStrategy(strategy);
}

Mesh strategy_mesh(const std::string& strategy, const std::vector<int64_t>& shape) {
  if (strategy == "dp+tp") {
    if (shape.size() > 2) {
      throw Error(ErrorCode::kInvalidArgument,
                  "strategy dp+tp: the mesh must be 1-D or 2-D (dp x tp)");
    }
    return Mesh(shape.size() == 2 ? shape : std::vector<int64_t>{1, shape.at(0)}, {}, {"dp", "tp"});
  }
  if (strategy != "dp" && strategy != "tp" && strategy != "fsdp") throw UnknownStrategy(strategy);
  int64_t devices = 1;
  for (int64_t dim : shape) devices *= dim;
  return Mesh({devices}, {}, {strategy});
}

}  // namespace vkspmd::nn
