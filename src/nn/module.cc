// Module: the parameter and child registry, parameter export/import as .npy files, and the
// activation constraints a strategy's plan asks for.
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "src/nn/init.h"
#include "vkspmd/nn.h"
#include "vkspmd/ops.h"
#include "vkspmd/sharded_tensor.h"

namespace vkspmd::nn {

int64_t ParallelPlan::axis_size(const std::string& axis) const {
  if (axis.empty()) return 1;
  return mesh.shape()[static_cast<size_t>(mesh.axis_index(axis))];
}

void Module::register_parameter(const std::string& name, Tensor* tensor,
                                int64_t tensor_parallel_dim) {
  parameters_.push_back(ParameterSlot{name, tensor, tensor_parallel_dim});
}

void Module::register_module(const std::string& name, Module* child) {
  children_.emplace_back(name, child);
}

void Module::CollectParameters(const std::string& prefix, std::vector<NamedParameter>& out) const {
  for (const ParameterSlot& slot : parameters_) {
    out.push_back(NamedParameter{prefix + slot.name, *slot.tensor, slot.tensor_parallel_dim});
  }
  for (const auto& [name, child] : children_) child->CollectParameters(prefix + name + ".", out);
}

std::vector<NamedParameter> Module::parameter_table() const {
  std::vector<NamedParameter> table;
  CollectParameters("", table);
  return table;
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> named;
  for (NamedParameter& entry : parameter_table()) {
    named.emplace_back(std::move(entry.name), std::move(entry.tensor));
  }
  return named;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> tensors;
  for (NamedParameter& entry : parameter_table()) tensors.push_back(std::move(entry.tensor));
  return tensors;
}

int64_t Module::parameter_count() const {
  int64_t count = 0;
  for (const NamedParameter& entry : parameter_table()) count += entry.tensor.numel();
  return count;
}

void Module::save_npy(const std::string& directory) const {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("save_npy: cannot create ", directory, ": ", error.message()));
  }
  for (const NamedParameter& entry : parameter_table()) {
    entry.tensor.to_npy((std::filesystem::path(directory) / (entry.name + ".npy")).string());
  }
}

void Module::load_npy(const std::string& directory) {
  for (NamedParameter& entry : parameter_table()) {
    const std::string path = (std::filesystem::path(directory) / (entry.name + ".npy")).string();
    if (!std::filesystem::is_regular_file(path)) {
      throw Error(ErrorCode::kNotFound,
                  absl::StrCat("load_npy: no file ", path, " for parameter ", entry.name));
    }
    Tensor value = from_npy(path);
    if (value.shape() != entry.tensor.shape() || value.dtype() != entry.tensor.dtype()) {
      throw Error(ErrorCode::kInvalidArgument,
                  absl::StrCat("load_npy: ", path, " holds ", ShapeText(value.shape()),
                               " but parameter ", entry.name, " is ",
                               ShapeText(entry.tensor.shape()), " (shape and type must match)"));
    }
    entry.tensor.assign(value);
  }
}

void Module::set_parallel_plan(std::shared_ptr<const ParallelPlan> plan) {
  if (plan != nullptr) CheckPlanRecursively(*plan);
  SetPlanRecursively(plan);
}

void Module::CheckPlanRecursively(const ParallelPlan& plan) const {
  check_parallel_plan(plan);
  for (const auto& [name, child] : children_) child->CheckPlanRecursively(plan);
}

void Module::SetPlanRecursively(const std::shared_ptr<const ParallelPlan>& plan) {
  plan_ = plan;
  for (const auto& [name, child] : children_) child->SetPlanRecursively(plan);
}

Tensor Module::constrain(const Tensor& x, Activation kind) const {
  if (plan_ == nullptr) return x;
  PartitionSpec spec(static_cast<size_t>(x.dim()), None);
  if (!plan_->data_axis.empty()) spec[0] = plan_->data_axis;
  if (!plan_->model_axis.empty()) {
    if (kind == Activation::kHeads) spec[1] = plan_->model_axis;
    if (kind == Activation::kFeatures) spec.back() = plan_->model_axis;
  }
  return mark_sharding(x, plan_->mesh, spec);
}

Tensor Module::shard_input(const Tensor& x) const {
  if (plan_ == nullptr) return x;
  const int64_t ways = plan_->axis_size(plan_->data_axis);
  if (x.dim() == 0 || x.size(0) % ways != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("strategy ", plan_->strategy, ": the batch of input ",
                             ShapeText(x.shape()), " is not divisible by the ", ways,
                             " devices of data axis \"", plan_->data_axis, "\" of ",
                             plan_->mesh.to_string(), " (batches are not padded)"));
  }
  return constrain(x, Activation::kBatch);
}

}  // namespace vkspmd::nn
