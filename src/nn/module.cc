// Module: the parameter and child registry, parameter export/import as .npy files and as a
// safetensors file, and the activation constraints a strategy's plan asks for.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <span>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/formatting.h"
#include "src/io/safetensors.h"
#include "src/lazy/public_types.h"
#include "src/nn/init.h"
#include "vkspmd/nn.h"
#include "vkspmd/ops.h"
#include "vkspmd/sharded_tensor.h"

namespace vkspmd::nn {
namespace {

// The error of a failed file operation, its message led by the module function's name.
[[noreturn]] void ThrowStatus(const char* function, const absl::Status& status) {
  throw Error(static_cast<ErrorCode>(status.code()),
              absl::StrCat(function, ": ", std::string(status.message())));
}

// The first few names of a file, safe to print: "a", "b" and 3 more.
std::string SomeNames(const std::vector<std::string>& names) {
  constexpr size_t kShown = 5;
  std::vector<std::string> shown;
  for (size_t i = 0; i < names.size() && i < kShown; ++i) {
    shown.push_back(absl::StrCat("\"", base::EscapeControlBytes(names[i]), "\""));
  }
  std::string text = absl::StrJoin(shown, ", ");
  if (names.size() > kShown) absl::StrAppend(&text, " and ", names.size() - kShown, " more");
  return text;
}

}  // namespace

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

void Module::CheckNewName(const std::string& name, bool parameter) const {
  const char* function = parameter ? "Module::add_parameter" : "Module::add_module";
  if (name.empty() || name.find('.') != std::string::npos) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat(function, ": the name \"", base::EscapeControlBytes(name),
                             "\" must be non-empty and without '.'"));
  }
  const bool is_child = std::any_of(children_.begin(), children_.end(),
                                    [&](const auto& child) { return child.first == name; });
  const bool is_parameter =
      std::any_of(parameters_.begin(), parameters_.end(),
                  [&](const ParameterSlot& slot) { return slot.name == name; });
  if (parameter ? is_child : is_parameter) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat(function, ": \"", name, "\" already names a ",
                             parameter ? "submodule" : "parameter"));
  }
}

void Module::add_parameter(const std::string& name, const Tensor& value) {
  CheckNewName(name, true);
  if (!value.defined()) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("Module::add_parameter: \"", name, "\" is an undefined tensor"));
  }
  for (ParameterSlot& slot : parameters_) {
    if (slot.name == name) {
      *slot.tensor = value;
      return;
    }
  }
  owned_parameters_.push_back(value);
  register_parameter(name, &owned_parameters_.back());
}

void Module::add_module(const std::string& name, Module* child) {
  CheckNewName(name, false);
  if (child == nullptr || child == this) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("Module::add_module: \"", name, "\" needs another module"));
  }
  for (auto& [existing, module] : children_) {
    if (existing == name) {
      module = child;
      return;
    }
  }
  register_module(name, child);
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

std::vector<std::pair<std::string, Module*>> Module::named_modules() const {
  std::vector<std::pair<std::string, Module*>> named;
  for (const auto& [name, child] : children_) {
    named.emplace_back(name, child);
    for (auto& [inner, module] : child->named_modules()) {
      named.emplace_back(name + "." + inner, module);
    }
  }
  return named;
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

void Module::save_safetensors(const std::string& path) const {
  const std::vector<NamedParameter> table = parameter_table();
  std::vector<io::SafetensorsEntry> entries;
  for (const NamedParameter& entry : table) {
    entries.push_back({entry.name, lazy::ToIrType(entry.tensor.dtype()), entry.tensor.shape()});
  }
  // Hugging Face's loaders refuse a file without a known "format"; the names and layouts are
  // PyTorch's (Linear weights [out, in]).
  absl::StatusOr<io::SafetensorsWriter> writer =
      io::SafetensorsWriter::Create(path, std::move(entries), {{"format", "pt"}});
  if (!writer.ok()) ThrowStatus("save_safetensors", writer.status());
  // One parameter at a time on the host, so the model need not fit in host memory.
  for (const NamedParameter& entry : table) {
    const HostTensor value = entry.tensor.to_host();
    const absl::Status appended = writer->Append(
        std::span(reinterpret_cast<const uint8_t*>(value.bytes.data()), value.bytes.size()));
    if (!appended.ok()) ThrowStatus("save_safetensors", appended);
  }
  const absl::Status finished = writer->Finish();
  if (!finished.ok()) ThrowStatus("save_safetensors", finished);
}

void Module::load_safetensors(const std::string& path, bool strict) {
  const absl::StatusOr<io::SafetensorsIndex> index = io::ReadSafetensorsIndex(path);
  if (!index.ok()) ThrowStatus("load_safetensors", index.status());
  std::map<std::string_view, const io::SafetensorsTensorInfo*> by_name;
  for (const io::SafetensorsTensorInfo& tensor : index->tensors) by_name[tensor.name] = &tensor;
  std::vector<NamedParameter> table = parameter_table();
  // Everything is checked before anything is assigned, so a failed load leaves the model as it
  // was.
  for (const NamedParameter& entry : table) {
    const auto found = by_name.find(entry.name);
    if (found == by_name.end()) {
      throw Error(ErrorCode::kNotFound, absl::StrCat("load_safetensors: ", path,
                                                     " has no tensor for parameter ", entry.name));
    }
    const io::SafetensorsTensorInfo& tensor = *found->second;
    if (tensor.dtype != lazy::ToIrType(entry.tensor.dtype()) ||
        tensor.shape != entry.tensor.shape()) {
      throw Error(
          ErrorCode::kInvalidArgument,
          absl::StrCat("load_safetensors: ", path, " holds ", entry.name, " as ",
                       std::string(io::SafetensorsDTypeName(tensor.dtype)), ShapeText(tensor.shape),
                       " but the parameter is ", dtype_name(entry.tensor.dtype()),
                       ShapeText(entry.tensor.shape()), " (shape and type must match)"));
    }
    by_name.erase(found);
  }
  if (strict && !by_name.empty()) {
    std::vector<std::string> extra;
    for (const io::SafetensorsTensorInfo& tensor : index->tensors) {
      if (by_name.contains(tensor.name)) extra.push_back(tensor.name);
    }
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("load_safetensors: ", path, " holds ", extra.size(),
                             " tensors that are not parameters of the module: ", SomeNames(extra),
                             " (strict=false ignores them)"));
  }
  for (NamedParameter& entry : table) {
    absl::StatusOr<ir::Literal> literal = io::ReadSafetensorsTensor(path, *index, entry.name);
    if (!literal.ok()) ThrowStatus("load_safetensors", literal.status());
    HostTensor value{.shape = literal->shape().dimensions(),
                     .dtype = entry.tensor.dtype(),
                     .bytes = std::vector<std::byte>(literal->bytes().size())};
    if (!value.bytes.empty()) {
      std::memcpy(value.bytes.data(), literal->bytes().data(), value.bytes.size());
    }
    entry.tensor.assign(from_host(value));
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

void Module::set_compute_dtype(DType dtype) {
  if (!is_floating_point(dtype)) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("set_compute_dtype: ", dtype_name(dtype),
                             " is not a floating-point type (float32, float16 or bfloat16)"));
  }
  compute_dtype_ = dtype;
  for (const auto& [name, child] : children_) child->set_compute_dtype(dtype);
}

Tensor Module::to_compute_dtype(const Tensor& x) const {
  if (compute_dtype_ == float32 || !is_floating_point(x.dtype())) return x;
  return x.to(compute_dtype_);
}

void Module::set_layouts(const Mesh& mesh, int64_t axis, std::optional<AxisLayout> input,
                         std::optional<AxisLayout> output, std::string style) {
  if (axis < 0 || axis >= static_cast<int64_t>(mesh.shape().size())) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat(style, ": ", mesh.to_string(), " has no axis ", axis));
  }
  layouts_ = Layouts{mesh, axis, input, output, std::move(style)};
}

void Module::set_sequence_parallel(const Mesh& mesh, int64_t axis, int64_t dim) {
  const AxisLayout split{false, dim};
  set_layouts(mesh, axis, split, split, "SequenceParallel");
  layouts_->sequence = true;
}

Tensor Module::Constrain(const Tensor& x, const std::optional<AxisLayout>& layout,
                         const char* side) const {
  if (!layouts_.has_value() || !layout.has_value()) return x;
  std::vector<std::vector<AxisName>> axes(static_cast<size_t>(x.dim()));
  // The batch stays split over the plan's data axis (dp + tp meshes), that axis first when it
  // comes first in the mesh, as the DTensor placements order several axes on one dim.
  int64_t data_axis = -1;
  if (plan_ != nullptr && !plan_->data_axis.empty() && x.dim() > 0) {
    data_axis = layouts_->mesh.axis_index(plan_->data_axis);
    axes[0].emplace_back(data_axis);
  }
  if (!layout->replicate) {
    const int64_t dim = layout->dim < 0 ? layout->dim + x.dim() : layout->dim;
    const int64_t limit = layouts_->sequence ? x.dim() - 1 : x.dim();
    if (dim < 0 || dim >= limit) {
      throw Error(
          ErrorCode::kInvalidArgument,
          layouts_->sequence
              ? absl::StrCat("SequenceParallel: the input ", ShapeText(x.shape()),
                             " has no sequence dim ", layout->dim, " before its last (feature) dim")
              : absl::StrCat(layouts_->style, ": the ", side, " ", ShapeText(x.shape()),
                             " has no dim ", layout->dim, " to split"));
    }
    auto& entry = axes[static_cast<size_t>(dim)];
    if (dim == 0 && data_axis > layouts_->axis) {
      entry.insert(entry.begin(), AxisName(layouts_->axis));
    } else {
      entry.emplace_back(layouts_->axis);
    }
  }
  PartitionSpec spec;
  for (const std::vector<AxisName>& dim_axes : axes) {
    if (dim_axes.empty()) {
      spec.emplace_back(None);
    } else {
      Axes entry({});
      entry.axes = dim_axes;
      spec.emplace_back(std::move(entry));
    }
  }
  return mark_sharding(x, layouts_->mesh, spec);
}

Tensor Module::layout_input(const Tensor& x) const {
  return Constrain(x, layouts_.has_value() ? layouts_->input : std::nullopt, "input");
}

Tensor Module::layout_output(const Tensor& x) const {
  return Constrain(x, layouts_.has_value() ? layouts_->output : std::nullopt, "output");
}

Tensor Module::constrain(const Tensor& x, Activation kind) const {
  if (plan_ == nullptr || !plan_->constrain_activations) return x;
  return Constrain(x, kind);
}

Tensor Module::Constrain(const Tensor& x, Activation kind) const {
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
  return Constrain(x, Activation::kBatch);
}

}  // namespace vkspmd::nn
