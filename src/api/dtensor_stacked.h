// The stacked form of a DTensor (a leading dim per Partial mesh axis holding the devices'
// addends), shared by the DTensor API (api_dtensor.cc) and its ops (api_dtensor_ops.cc).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "src/dtensor/placements.h"
#include "vkspmd/dtensor.h"

namespace vkspmd {

// Builds DTensors and reads their stacked value (the class keeps its constructor private).
struct DTensorAccess {
  static DTensor Make(DeviceMesh mesh, Placements placements, std::vector<int64_t> shape,
                      Tensor stacked) {
    DTensor result;
    result.mesh_ = std::move(mesh);
    result.placements_ = std::move(placements);
    result.shape_ = std::move(shape);
    result.stacked_ = std::move(stacked);
    return result;
  }
  static const Tensor& Stacked(const DTensor& tensor) { return tensor.stacked_; }
};

namespace dtensor_api {

// A stacked tensor with the leading dims of the Partial axes not in `keep` reduced (in mesh-axis
// order); the kept axes' leading dims stay, in mesh order. No `keep`: the value itself.
Tensor Resolve(const Tensor& stacked, const std::vector<dtensor::PlacementSpec>& specs,
               const std::vector<bool>& keep = {});
// A DTensor of `stacked` laid out by normalized `specs` on `mesh` (a sharding constraint, or the
// data placed directly where it is host data or another mesh's).
DTensor MakeDTensor(const Tensor& stacked, const DeviceMesh& mesh,
                    const std::vector<dtensor::PlacementSpec>& specs);
// The placements of `tensor` as internal specs.
std::vector<dtensor::PlacementSpec> SpecsOf(const DTensor& tensor);

}  // namespace dtensor_api
}  // namespace vkspmd
