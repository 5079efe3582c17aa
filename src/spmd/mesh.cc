// Mesh validation, axis lookup, device coordinates and replica groups along mesh axes.
#include "src/spmd/mesh.h"

#include <algorithm>
#include <numeric>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "fmt/format.h"

namespace vkspmd::spmd {

absl::StatusOr<Mesh> Mesh::Create(std::vector<int64_t> shape, std::vector<int64_t> device_ids,
                                  std::vector<std::string> axis_names,
                                  std::optional<int64_t> available_devices) {
  if (shape.empty()) return absl::InvalidArgumentError("a mesh needs at least one axis");
  if (shape.size() > kMaxMeshAxes) {
    return absl::InvalidArgumentError(
        fmt::format("mesh has {} axes; at most {} are allowed", shape.size(), kMaxMeshAxes));
  }
  int64_t count = 1;
  for (int64_t size : shape) {
    if (size <= 0) {
      return absl::InvalidArgumentError(
          fmt::format("mesh shape [{}] has an axis of size {}; sizes must be positive",
                      absl::StrJoin(shape, ","), size));
    }
    // Both factors are at most kMaxMeshDevices here, so the product cannot overflow.
    if (size > kMaxMeshDevices || count * size > kMaxMeshDevices) {
      return absl::InvalidArgumentError(fmt::format("mesh shape [{}] holds more than {} devices",
                                                    absl::StrJoin(shape, ","), kMaxMeshDevices));
    }
    count *= size;
  }
  if (device_ids.empty()) {
    device_ids.resize(count);
    std::iota(device_ids.begin(), device_ids.end(), 0);
  }
  if (static_cast<int64_t>(device_ids.size()) != count) {
    return absl::InvalidArgumentError(
        fmt::format("mesh shape [{}] holds {} devices but {} device ids were given",
                    absl::StrJoin(shape, ","), count, device_ids.size()));
  }
  absl::flat_hash_set<int64_t> seen;
  for (int64_t id : device_ids) {
    if (id < 0 || (available_devices.has_value() && id >= *available_devices)) {
      return absl::InvalidArgumentError(
          available_devices.has_value()
              ? fmt::format("mesh device id {} does not exist: there are {} devices (0..{})", id,
                            *available_devices, *available_devices - 1)
              : fmt::format("mesh device id {} is negative", id));
    }
    if (!seen.insert(id).second) {
      return absl::InvalidArgumentError(fmt::format("mesh device id {} appears twice", id));
    }
  }
  if (!axis_names.empty()) {
    if (axis_names.size() != shape.size()) {
      return absl::InvalidArgumentError(fmt::format("mesh has {} axes but {} axis names ({})",
                                                    shape.size(), axis_names.size(),
                                                    absl::StrJoin(axis_names, ", ")));
    }
    absl::flat_hash_set<std::string> names;
    for (const std::string& name : axis_names) {
      if (name.empty()) return absl::InvalidArgumentError("mesh axis names must not be empty");
      if (!names.insert(name).second) {
        return absl::InvalidArgumentError(fmt::format("mesh axis name '{}' appears twice", name));
      }
    }
  }
  Mesh mesh;
  mesh.shape_ = std::move(shape);
  mesh.device_ids_ = std::move(device_ids);
  mesh.axis_names_ = std::move(axis_names);
  return mesh;
}

absl::StatusOr<Mesh> Mesh::Parse(std::string_view text) {
  const std::string spelled(text);
  std::vector<std::string> parts = absl::StrSplit(spelled, ':');
  if (parts.size() > 2) {
    return absl::InvalidArgumentError(fmt::format("mesh '{}': expected SHAPE[:NAMES]", spelled));
  }
  std::vector<int64_t> shape;
  const std::vector<std::string> sizes = absl::StrSplit(parts[0], 'x');
  for (const std::string& size_text : sizes) {
    int64_t size = 0;
    if (!absl::SimpleAtoi(size_text, &size)) {
      return absl::InvalidArgumentError(fmt::format(
          "mesh '{}': '{}' is not a number (write the shape as 2x4)", spelled, size_text));
    }
    shape.push_back(size);
  }
  std::vector<std::string> names;
  if (parts.size() == 2) names = absl::StrSplit(parts[1], ',');
  absl::StatusOr<Mesh> mesh = Create(std::move(shape), {}, std::move(names));
  if (!mesh.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("mesh '{}': {}", spelled, std::string(mesh.status().message())));
  }
  return mesh;
}

bool Mesh::IsIota() const {
  for (size_t i = 0; i < device_ids_.size(); ++i) {
    if (device_ids_[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

absl::StatusOr<int64_t> Mesh::AxisIndex(std::string_view name) const {
  for (size_t i = 0; i < axis_names_.size(); ++i) {
    if (axis_names_[i] == name) return static_cast<int64_t>(i);
  }
  return absl::InvalidArgumentError(
      fmt::format("unknown mesh axis '{}' (the mesh's axes are {})", std::string(name),
                  axis_names_.empty() ? "unnamed" : absl::StrJoin(axis_names_, ", ")));
}

std::string Mesh::AxisLabel(int64_t axis) const {
  if (!axis_names_.empty()) return axis_names_[axis];
  return fmt::format("axis {}", axis);
}

std::string Mesh::AxesLabel(const std::vector<int64_t>& axes) const {
  std::vector<std::string> labels;
  for (int64_t axis : axes) labels.push_back(AxisLabel(axis));
  return absl::StrJoin(labels, "+");
}

std::optional<std::vector<int64_t>> Mesh::CoordinatesOf(int64_t device) const {
  const auto found = std::find(device_ids_.begin(), device_ids_.end(), device);
  if (found == device_ids_.end()) return std::nullopt;
  int64_t linear = found - device_ids_.begin();
  std::vector<int64_t> coordinates(shape_.size());
  for (int64_t axis = axis_count() - 1; axis >= 0; --axis) {
    coordinates[axis] = linear % shape_[axis];
    linear /= shape_[axis];
  }
  return coordinates;
}

int64_t Mesh::DeviceAt(const std::vector<int64_t>& coordinates) const {
  int64_t linear = 0;
  for (int64_t axis = 0; axis < axis_count(); ++axis)
    linear = linear * shape_[axis] + coordinates[axis];
  return device_ids_[linear];
}

int64_t Mesh::IndexAlong(int64_t device, const std::vector<int64_t>& axes) const {
  const std::optional<std::vector<int64_t>> coordinates = CoordinatesOf(device);
  if (!coordinates.has_value()) return 0;
  int64_t index = 0;
  for (int64_t axis : axes) index = index * shape_[axis] + (*coordinates)[axis];
  return index;
}

int64_t Mesh::SizeOf(const std::vector<int64_t>& axes) const {
  int64_t size = 1;
  for (int64_t axis : axes) size *= shape_[axis];
  return size;
}

std::vector<std::vector<int64_t>> Mesh::GroupsAlong(const std::vector<int64_t>& axes) const {
  std::vector<int64_t> others;
  for (int64_t axis = 0; axis < axis_count(); ++axis) {
    if (std::find(axes.begin(), axes.end(), axis) == axes.end()) others.push_back(axis);
  }
  std::vector<std::vector<int64_t>> groups(SizeOf(others), std::vector<int64_t>(SizeOf(axes), 0));
  for (int64_t device : device_ids_) {
    groups[IndexAlong(device, others)][IndexAlong(device, axes)] = device;
  }
  return groups;
}

Mesh Mesh::WithDeviceIds(std::vector<int64_t> device_ids) const {
  Mesh mesh = *this;
  mesh.device_ids_ = std::move(device_ids);
  return mesh;
}

namespace {

std::vector<int64_t> PrimeFactors(int64_t n) {
  std::vector<int64_t> factors;
  for (int64_t p = 2; p * p <= n; ++p) {
    for (; n % p == 0; n /= p) factors.push_back(p);
  }
  if (n > 1) factors.push_back(n);
  return factors;
}

}  // namespace

bool Mesh::IsRefined() const {
  return std::all_of(shape_.begin(), shape_.end(),
                     [](int64_t size) { return PrimeFactors(size).size() <= 1; });
}

Mesh Mesh::Refined() const {
  Mesh mesh;
  mesh.device_ids_ = device_ids_;
  for (int64_t axis = 0; axis < axis_count(); ++axis) {
    const std::vector<int64_t> factors = PrimeFactors(shape_[axis]);
    if (factors.size() <= 1) {
      mesh.shape_.push_back(shape_[axis]);
      if (!axis_names_.empty()) mesh.axis_names_.push_back(axis_names_[axis]);
      continue;
    }
    for (size_t f = 0; f < factors.size(); ++f) {
      mesh.shape_.push_back(factors[f]);
      if (!axis_names_.empty())
        mesh.axis_names_.push_back(fmt::format("{}.{}", axis_names_[axis], f));
    }
  }
  return mesh;
}

std::string Mesh::ToString() const {
  std::string text = fmt::format("[{}]", absl::StrJoin(shape_, ","));
  if (!axis_names_.empty()) text += fmt::format(" ({})", absl::StrJoin(axis_names_, ", "));
  if (IsIota()) return text + fmt::format(" devices 0..{}", device_count() - 1);
  return text + fmt::format(" devices {}", absl::StrJoin(device_ids_, ","));
}

}  // namespace vkspmd::spmd
