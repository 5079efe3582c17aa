// PartitionSpec: per tensor dim a mesh axis (index or name), a tuple of axes, or none, as in
// PyTorch/XLA's mark_sharding and JAX's P(...); converts to an ir::Sharding over a Mesh.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/sharding.h"
#include "src/spmd/axis_sharding.h"
#include "src/spmd/mesh.h"

namespace vkspmd::spmd {

// A mesh axis named by index or by name.
using AxisRef = std::variant<int64_t, std::string>;

class PartitionSpec {
 public:
  PartitionSpec() = default;
  // One entry per tensor dim; an empty entry is None, several axes split the dim over their
  // product (first axis major).
  explicit PartitionSpec(std::vector<std::vector<AxisRef>> dims) : dims_(std::move(dims)) {}
  // Python-like text: "(0, None)", "('dp', None)", "(('dp','tp'), None)", "(dp, _)".
  static absl::StatusOr<PartitionSpec> Parse(std::string_view text);

  const std::vector<std::vector<AxisRef>>& dims() const { return dims_; }
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  std::string ToString() const;

 private:
  std::vector<std::vector<AxisRef>> dims_;
};

// Resolves names and checks the spec against the mesh and the tensor rank: errors for a rank
// mismatch, an unknown axis (index or name) and an axis used twice.
absl::StatusOr<AxisSharding> ResolvePartitionSpec(const PartitionSpec& spec, const Mesh& mesh,
                                                  int64_t rank);

// The HLO sharding PyTorch/XLA gives mark_sharding(tensor, mesh, spec): TILED when the spec names
// every axis, PARTIAL (last_tile_dim_replicate) when some are unused, REPLICATED when all dims are
// None, MAXIMAL on a one-device mesh.
absl::StatusOr<ir::Sharding> PartitionSpecToSharding(const PartitionSpec& spec, const Mesh& mesh,
                                                     int64_t rank);

}  // namespace vkspmd::spmd
