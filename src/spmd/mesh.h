// A logical device mesh: an N-d array of partition ids with optional axis names (torch_xla's
// Mesh, JAX's Mesh). Shardings are built over its axes and collectives run along them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace vkspmd::spmd {

// The most devices a mesh may hold (the IR's bound on replica_count x num_partitions) and the
// most axes it may have; larger meshes are refused before anything is allocated for them.
inline constexpr int64_t kMaxMeshDevices = int64_t{1} << 16;
inline constexpr size_t kMaxMeshAxes = 16;

class Mesh {
 public:
  // Checks that the shape is positive with at most kMaxMeshAxes axes and kMaxMeshDevices devices,
  // its product equals the number of ids, the ids are unique
  // and below `available_devices` (when given), and the names are unique and one per axis (or
  // none). Empty `device_ids` means 0..N-1 in order.
  static absl::StatusOr<Mesh> Create(std::vector<int64_t> shape,
                                     std::vector<int64_t> device_ids = {},
                                     std::vector<std::string> axis_names = {},
                                     std::optional<int64_t> available_devices = std::nullopt);
  // "2x4", "2x4:dp,tp" (names after a colon); ids are 0..N-1.
  static absl::StatusOr<Mesh> Parse(std::string_view text);

  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& device_ids() const { return device_ids_; }
  const std::vector<std::string>& axis_names() const { return axis_names_; }
  int64_t axis_count() const { return static_cast<int64_t>(shape_.size()); }
  int64_t axis_size(int64_t axis) const { return shape_[axis]; }
  int64_t device_count() const { return static_cast<int64_t>(device_ids_.size()); }
  // True when the ids are 0..N-1 in row-major order (shardings then print in iota form).
  bool IsIota() const;

  // The axis a name refers to; the error lists the mesh's names.
  absl::StatusOr<int64_t> AxisIndex(std::string_view name) const;
  // "dp" for named axes, "axis 1" otherwise: how messages and tables name an axis.
  std::string AxisLabel(int64_t axis) const;
  std::string AxesLabel(const std::vector<int64_t>& axes) const;

  // Mesh coordinates of a device id (nullopt when the device is not in the mesh).
  std::optional<std::vector<int64_t>> CoordinatesOf(int64_t device) const;
  int64_t DeviceAt(const std::vector<int64_t>& coordinates) const;
  // Linear index of a device's coordinates over `axes` (first axis major): its rank inside the
  // group of a collective along those axes.
  int64_t IndexAlong(int64_t device, const std::vector<int64_t>& axes) const;
  int64_t SizeOf(const std::vector<int64_t>& axes) const;

  // Replica groups for a collective along `axes` (GSPMD-NOTES 4): one group per coordinate of
  // the other axes, members ordered by IndexAlong.
  std::vector<std::vector<int64_t>> GroupsAlong(const std::vector<int64_t>& axes) const;

  // The same shape and names with other device ids in row-major order (the ids are not checked:
  // they come from a validated mesh or sharding).
  Mesh WithDeviceIds(std::vector<int64_t> device_ids) const;
  // The same devices in the same row-major order with every axis split into its prime factors
  // (major first): a [4] mesh becomes [2,2], "tp" of size 4 becomes "tp.0", "tp.1". Any tile
  // assignment over all devices is then a product of axes in some device order.
  Mesh Refined() const;
  // Whether Refined() would change the mesh (some axis is not prime).
  bool IsRefined() const;

  // "[2,4] (dp, tp) devices 0..7" or with the id list when not in order.
  std::string ToString() const;
  bool operator==(const Mesh& other) const = default;

 private:
  std::vector<int64_t> shape_;
  std::vector<int64_t> device_ids_;
  std::vector<std::string> axis_names_;
};

}  // namespace vkspmd::spmd
