// The state the crash test saves and checks: a few tensors of odd shapes whose values depend on
// the step, on a mesh (the saving child) or as host data (the checking test).
#pragma once

#include <vector>

#include "tests/checkpoint/checkpoint_test_util.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {

inline std::vector<Tensor> CrashStateTensors(int64_t step, const Mesh* mesh) {
  // 14 tensors of odd sizes under four shardings: enough shards that the save passes more than
  // 50 fault points.
  const std::vector<PartitionSpec> specs = {{"dp", "tp"}, {None, "tp"}, {"tp", None}, {None, None}};
  std::vector<std::pair<std::vector<int64_t>, PartitionSpec>> shapes;
  for (int64_t i = 0; i < 14; ++i) shapes.push_back({{3 + i, 2 + (i * 5) % 7}, specs[i % 4]});
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < shapes.size(); ++i) {
    Tensor tensor = from_host(DistinctValues(shapes[i].first, DType::kFloat32, 10 * step + i));
    if (mesh != nullptr) mark_sharding(tensor, *mesh, shapes[i].second);
    tensors.push_back(tensor);
  }
  return tensors;
}

inline CheckpointState CrashState(const std::vector<Tensor>& tensors) {
  CheckpointState state;
  for (size_t i = 0; i < tensors.size(); ++i) state.add("t" + std::to_string(i), tensors[i]);
  state.rng = false;
  return state;
}

}  // namespace vkspmd::testing
