// The public API's boundary helpers: statuses become vkspmd::Error here, tensors are wrapped and
// unwrapped, public types convert to internal ones.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/lazy/placement.h"
#include "src/lazy/public_types.h"
#include "src/lazy/tensor_state.h"
#include "src/spmd/mesh.h"
#include "src/spmd/partition_spec.h"
#include "vkspmd/dtype.h"
#include "vkspmd/mesh.h"
#include "vkspmd/scalar.h"
#include "vkspmd/sharding.h"
#include "vkspmd/tensor.h"

namespace vkspmd::lazy {

[[noreturn]] void ThrowStatus(const absl::Status& status);
inline void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) ThrowStatus(status);
}
template <typename T>
T Unwrap(absl::StatusOr<T> value) {
  if (!value.ok()) ThrowStatus(value.status());
  return std::move(*value);
}

// The node of a defined tensor (throws for an undefined one, naming `op`).
NodePtr NodeOf(const Tensor& tensor, const char* op = "this op");
// A new registered tensor of `node` (throws the error of a failed trace step).
Tensor Wrap(absl::StatusOr<NodePtr> node);

// Throws for element types the public API has no name for.
DType FromIrType(ir::DType type);
// A user scalar as a graph parameter of the type an op with a `tensor_type` tensor computes in.
NodePtr ScalarFor(Scalar value, ir::DType tensor_type);
// A negative dim counted from the end of `rank` dims; throws when out of range.
int64_t NormalizeDim(int64_t dim, int64_t rank, const char* op);

spmd::Mesh ToSpmdMesh(const Mesh& mesh);
// A public partition spec as the partitioner's (axes by index or name, resolved later).
spmd::PartitionSpec ToSpmdSpec(const PartitionSpec& spec);
// One shared placement per distinct mesh.
PlacementPtr PlacementOf(const Mesh& mesh);

// The tensor's value on the host, running what is pending (a value read).
ir::Literal ReadValue(const Tensor& tensor, const std::source_location& where);
HostTensor ToHostTensor(const ir::Literal& literal);
ir::Literal FromHostTensor(const HostTensor& value);

}  // namespace vkspmd::lazy
