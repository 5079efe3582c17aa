// DeviceMesh factories over the job's devices (include/vkspmd/dtensor.h): PyTorch's
// init_device_mesh, and hybrid meshes whose outer axis spans the processes of the job.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/lazy/distributed.h"
#include "vkspmd/distributed.h"
#include "vkspmd/dtensor.h"

namespace vkspmd {
namespace {

int64_t Product(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

// How many mesh devices each process of the job drives, in process order (one entry without a
// job of several processes).
std::vector<int64_t> DevicesPerProcess() {
  const lazy::DistributedState* job = lazy::Distributed();
  if (job == nullptr) return {distributed::device_count()};
  std::vector<int64_t> counts(static_cast<size_t>(job->process_count), 0);
  for (int64_t rank = 0; rank < job->global_devices; ++rank) {
    ++counts[static_cast<size_t>(job->world->ProcessOf(static_cast<int>(rank)))];
  }
  return counts;
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
  const std::vector<int64_t> counts = DevicesPerProcess();
  const int processes = static_cast<int>(counts.size());
  // Every process sees every count, so all of them fail alike, naming the same processes.
  if (std::any_of(counts.begin(), counts.end(), [&](int64_t n) { return n != inner; })) {
    std::vector<std::string> driven;
    for (int p = 0; p < processes; ++p)
      driven.push_back(absl::StrCat("process ", p, ": ", counts[p]));
    throw Error(
        ErrorCode::kInvalidArgument,
        absl::StrCat("hybrid_device_mesh: the inner shape [", absl::StrJoin(inner_shape, ", "),
                     "] needs ", inner, " devices in each of the ", processes,
                     " process(es), which drive ", absl::StrJoin(driven, ", "),
                     ". A hybrid mesh is rectangular, one slice of its outer axis per process "
                     "(as PyTorch's init_device_mesh and JAX's create_hybrid_device_mesh need); "
                     "init_device_mesh lays a shape over all ",
                     distributed::device_count(), " devices of the job whatever each drives"));
  }
  // Process p drives global devices p * inner .. (p + 1) * inner - 1 (distributed.h), so the
  // row-major layout puts each process's devices in one slice of the outer axis.
  std::vector<int64_t> shape = {processes};
  shape.insert(shape.end(), inner_shape.begin(), inner_shape.end());
  return init_device_mesh(shape, std::move(axis_names));
}

}  // namespace vkspmd
