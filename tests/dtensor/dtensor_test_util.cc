// The DTensor tests' oracle (see dtensor_test_util.h).
#include "tests/dtensor/dtensor_test_util.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace vkspmd::testing {

HostValues Iota(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  HostValues result{shape, {}};
  for (int64_t i = 0; i < count; ++i) result.values.push_back(static_cast<float>(i));
  return result;
}

HostValues ExpectedLocal(const HostValues& global, const std::vector<int64_t>& mesh_shape,
                         const Placements& placements, int64_t position) {
  const int64_t rank = static_cast<int64_t>(global.shape.size());
  std::vector<int64_t> coordinates(mesh_shape.size());
  for (int64_t axis = static_cast<int64_t>(mesh_shape.size()) - 1; axis >= 0; --axis) {
    coordinates[axis] = position % mesh_shape[axis];
    position /= mesh_shape[axis];
  }
  std::vector<int64_t> start(rank, 0), stop = global.shape;
  float divisor = 1;
  for (int64_t dim = 0; dim < rank; ++dim) {
    int64_t tiles = 1, index = 0;
    for (size_t axis = 0; axis < placements.size(); ++axis) {
      if (!placements[axis].is_shard()) continue;
      const int64_t shard_dim = (placements[axis].dim() + rank) % rank;
      if (shard_dim != dim) continue;
      index = index * mesh_shape[axis] + coordinates[axis];
      tiles *= mesh_shape[axis];
    }
    const int64_t chunk = (global.shape[dim] + tiles - 1) / tiles;
    start[dim] = std::min(index * chunk, global.shape[dim]);
    stop[dim] = std::min(start[dim] + chunk, global.shape[dim]);
  }
  for (size_t axis = 0; axis < placements.size(); ++axis) {
    if (placements[axis].is_partial() && placements[axis].reduce_op() == ReduceOp::kSum) {
      divisor *= static_cast<float>(mesh_shape[axis]);
    }
  }
  HostValues local;
  for (int64_t dim = 0; dim < rank; ++dim) local.shape.push_back(stop[dim] - start[dim]);
  int64_t count = 1;
  for (int64_t size : local.shape) count *= size;
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, flat = 0, stride = 1;
    for (int64_t dim = rank - 1; dim >= 0; --dim) {
      flat += (start[dim] + rest % local.shape[dim]) * stride;
      rest /= local.shape[dim];
      stride *= global.shape[dim];
    }
    local.values.push_back(global.values[flat] / divisor);
  }
  return local;
}

std::string Compare(const Tensor& actual, const HostValues& expected) {
  const HostTensor host = actual.to_host();
  if (host.shape != expected.shape) {
    return absl::StrCat("shape [", absl::StrJoin(host.shape, ","), "] but expected [",
                        absl::StrJoin(expected.shape, ","), "]");
  }
  const std::vector<float> values = host.values<float>();
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] != expected.values[i]) {
      return absl::StrCat("element ", i, " is ", values[i], " but expected ", expected.values[i]);
    }
  }
  return "";
}

Tensor ToTensor(const HostValues& values) { return tensor(values.values, values.shape); }

std::string Describe(const Placements& placements) {
  std::vector<std::string> parts;
  for (const Placement& placement : placements) parts.push_back(placement.to_string());
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

}  // namespace vkspmd::testing
