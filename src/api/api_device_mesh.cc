// DeviceMesh factories over the job's devices (include/vkspmd/dtensor.h): PyTorch's
// init_device_mesh, and hybrid meshes whose outer axis spans the processes of the job.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "vkspmd/distributed.h"
#include "vkspmd/dtensor.h"

namespace vkspmd {
namespace {

int64_t Product(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

}  // namespace

DeviceMesh init_device_mesh(const std::vector<int64_t>& shape,
                            std::vector<std::string> axis_names) {
  const int64_t size = Product(shape);
  if (size > distributed::device_count()) {
    throw Error(
        ErrorCode::kInvalidArgument,
        absl::StrCat("init_device_mesh: a mesh of shape [", absl::StrJoin(shape, ", "), "] needs ",
                     size, " devices; the job has ", distributed::device_count()));
  }
  std::vector<int64_t> ids(static_cast<size_t>(std::max<int64_t>(size, 0)));
  std::iota(ids.begin(), ids.end(), int64_t{0});
  return DeviceMesh(std::move(ids), shape, std::move(axis_names));
}

DeviceMesh hybrid_device_mesh(const std::vector<int64_t>& inner_shape,
                              std::vector<std::string> axis_names) {
  if (!axis_names.empty() && axis_names.size() != inner_shape.size() + 1) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("hybrid_device_mesh: ", axis_names.size(), " axis names (",
                             absl::StrJoin(axis_names, ", "), ") for the process axis and ",
                             inner_shape.size(), " inner axes"));
  }
  const int64_t inner = Product(inner_shape);
  const int64_t local = static_cast<int64_t>(distributed::addressable_devices().size());
  const int processes = distributed::process_count();
  // Every process checks the total, so a process driving another count fails them all alike.
  if (inner != local || inner * processes != distributed::device_count()) {
    throw Error(
        ErrorCode::kInvalidArgument,
        absl::StrCat("hybrid_device_mesh: the inner shape [", absl::StrJoin(inner_shape, ", "),
                     "] needs ", inner, " devices in each of the ", processes,
                     " process(es); process ", distributed::process_index(), " drives ", local,
                     " and the job ", distributed::device_count()));
  }
  // Process p drives global devices p * inner .. (p + 1) * inner - 1 (distributed.h), so the
  // row-major layout puts each process's devices in one slice of the outer axis.
  std::vector<int64_t> shape = {processes};
  shape.insert(shape.end(), inner_shape.begin(), inner_shape.end());
  return init_device_mesh(shape, std::move(axis_names));
}

}  // namespace vkspmd
