// Mesh: a logical N-d array of mesh devices with optional axis names (PyTorch/XLA's Mesh). A mesh
// may cover any subset of the process's mesh devices, and a program may use several meshes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vkspmd/error.h"

namespace vkspmd {

class Mesh {
 public:
  // `shape` (e.g. {2, 4}); `device_ids` in row-major mesh order (default 0..N-1); one name per
  // axis or none. Throws vkspmd::Error when inconsistent, or when an id is not below
  // VKSPMD_DEVICES where that is set.
  Mesh(std::vector<int64_t> shape, std::vector<int64_t> device_ids = {},
       std::vector<std::string> axis_names = {});

  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& device_ids() const { return device_ids_; }
  const std::vector<std::string>& axis_names() const { return axis_names_; }
  int64_t size() const { return static_cast<int64_t>(device_ids_.size()); }
  // The index of the axis called `name`; throws when there is none.
  int64_t axis_index(const std::string& name) const;
  // "Mesh(shape=[2,4], axis_names=(dp, tp), devices=0..7)".
  std::string to_string() const;

  bool operator==(const Mesh& other) const = default;

 private:
  std::vector<int64_t> shape_;
  std::vector<int64_t> device_ids_;
  std::vector<std::string> axis_names_;
};

// The number of mesh devices a mesh may use: VKSPMD_DEVICES when set, else one per usable
// physical device; after distributed::initialize() in a job of several processes, every
// process's devices together.
int64_t device_count();

// A 1-D mesh over every device of device_count(), its axis called `axis_name`.
Mesh get_1d_mesh(const std::string& axis_name = "");

// The mesh used where none is given (as PyTorch/XLA's global mesh); get throws when none was set.
void set_global_mesh(const Mesh& mesh);
const Mesh& get_global_mesh();

}  // namespace vkspmd
