// The public Mesh, device_count and the global mesh.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/api/api_support.h"
#include "src/lazy/context.h"
#include "src/lazy/device_pool.h"
#include "src/lazy/distributed.h"
#include "vkspmd/mesh.h"

namespace vkspmd {

Mesh::Mesh(std::vector<int64_t> shape, std::vector<int64_t> device_ids,
           std::vector<std::string> axis_names) {
  spmd::Mesh mesh = lazy::Unwrap(
      spmd::Mesh::Create(std::move(shape), std::move(device_ids), std::move(axis_names)));
  lazy::ThrowIfError(lazy::DevicePool::NoteMeshDevices(
      *std::max_element(mesh.device_ids().begin(), mesh.device_ids().end()) + 1));
  shape_ = mesh.shape();
  device_ids_ = mesh.device_ids();
  axis_names_ = mesh.axis_names();
}

int64_t Mesh::axis_index(const std::string& name) const {
  return lazy::Unwrap(lazy::ToSpmdMesh(*this).AxisIndex(name));
}

std::string Mesh::to_string() const {
  return absl::StrCat("Mesh(shape=[", absl::StrJoin(shape_, ","), "], axis_names=(",
                      absl::StrJoin(axis_names_, ", "), "), devices=[",
                      absl::StrJoin(device_ids_, ","), "])");
}

int64_t device_count() {
  // In a job of several processes, every process's devices (as jax.device_count()).
  if (const lazy::DistributedState* job = lazy::Distributed()) return job->global_devices;
  return lazy::Unwrap(lazy::DevicePool::AvailableDeviceCount());
}

Mesh get_1d_mesh(const std::string& axis_name) {
  std::vector<std::string> names;
  if (!axis_name.empty()) names.push_back(axis_name);
  return Mesh({device_count()}, {}, names);
}

void set_global_mesh(const Mesh& mesh) {
  std::lock_guard<std::mutex> lock(lazy::Context::Get().mutex());
  lazy::Context::Get().global_mesh() = mesh;
}

const Mesh& get_global_mesh() {
  std::lock_guard<std::mutex> lock(lazy::Context::Get().mutex());
  const std::optional<Mesh>& mesh = lazy::Context::Get().global_mesh();
  if (!mesh.has_value()) {
    throw Error(ErrorCode::kFailedPrecondition, "no global mesh: call set_global_mesh first");
  }
  return *mesh;
}

}  // namespace vkspmd
