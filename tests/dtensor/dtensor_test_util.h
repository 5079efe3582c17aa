// The DTensor tests' oracle: the local tensor each mesh device must hold under a list of
// placements, computed here from the global values (torch.chunk per dim), not by the library.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vkspmd/dtensor.h"

namespace vkspmd::testing {

struct HostValues {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// 0, 1, 2, ... in `shape` (row-major).
HostValues Iota(const std::vector<int64_t>& shape);

// The local tensor of the device at row-major position `position` of a mesh of `mesh_shape`:
// each dim cut to the torch.chunk piece of the axes that Shard it (several axes: one split over
// their product, major axis first); a Partial(sum) axis divides the value by its size (PyTorch's
// Replicate -> Partial), other Partial ops keep it.
HostValues ExpectedLocal(const HostValues& global, const std::vector<int64_t>& mesh_shape,
                         const Placements& placements, int64_t position);

// "" when `actual` has the shape and values (exactly: the tests use small integers and powers of
// two), else the first difference.
std::string Compare(const Tensor& actual, const HostValues& expected);

Tensor ToTensor(const HostValues& values);

// "[Shard(dim=0), Replicate()]".
std::string Describe(const Placements& placements);

}  // namespace vkspmd::testing
