// DTensor ops (+ - * matmul neg relu sum) with PyTorch's placement rules: pending Partial(sum)
// results are computed addend by addend on the stacked form (docs/dtensor.md, Ops and
// placements).
#include <algorithm>
#include <functional>
#include <mutex>
#include <optional>

#include "absl/strings/str_cat.h"
#include "src/api/api_support.h"
#include "src/api/dtensor_stacked.h"
#include "src/lazy/context.h"
#include "src/lazy/lowering.h"
#include "src/spmd/propagation.h"
#include "vkspmd/dtensor.h"
#include "vkspmd/ops.h"

namespace vkspmd {

using dtensor::PlacementKind;
using dtensor::PlacementSpec;
using dtensor::ReduceKind;
using dtensor_api::MakeDTensor;
using dtensor_api::Resolve;
using dtensor_api::SpecsOf;
using lazy::NodePtr;
using lazy::Unwrap;

namespace {

// The placements sharding propagation gives `stacked` on `mesh`, whose leading dims are the
// pending sums of `partial_axes` (in mesh order): Partial(sum) there, and the Shard placements
// its other dims get (all Replicate where its sharding has no placements, e.g. a device order
// other than the mesh's).
std::vector<PlacementSpec> PropagatedPlacements(const Tensor& stacked, const DeviceMesh& mesh,
                                                const std::vector<int64_t>& partial_axes) {
  const NodePtr node = lazy::NodeOf(stacked, "DTensor op");
  const lazy::PlacementPtr placement = lazy::PlacementOf(mesh.mesh());
  std::lock_guard<std::mutex> lock(lazy::Context::Get().mutex());
  const lazy::LoweredGraph graph = Unwrap(lazy::Lower({node}, placement));
  const spmd::PropagationResult propagation =
      Unwrap(spmd::PropagateShardings(*graph.module, placement->local_mesh));
  spmd::AxisSharding sharding = propagation.shardings.at(graph.instructions.at(node.get())).at(0);
  std::vector<PlacementSpec> specs(mesh.ndim());
  if (!sharding.IsSpecial()) {
    sharding.dims.erase(sharding.dims.begin(), sharding.dims.begin() + partial_axes.size());
    for (std::vector<int64_t>& axes : sharding.dims) {
      std::erase_if(axes, [&](int64_t axis) {
        return std::find(partial_axes.begin(), partial_axes.end(), axis) != partial_axes.end();
      });
    }
    absl::StatusOr<std::vector<PlacementSpec>> found =
        dtensor::PlacementsOf(sharding, placement->local_mesh);
    if (found.ok()) specs = *std::move(found);
  }
  for (int64_t axis : partial_axes) specs[axis] = {PlacementKind::kPartial, 0, ReduceKind::kSum};
  return specs;
}

void RequireOneMesh(const char* op, const DTensor& a, const DTensor& b) {
  if (!(a.device_mesh() == b.device_mesh())) {
    throw Error(
        ErrorCode::kInvalidArgument,
        absl::StrCat(op, ": the operands live on different meshes, ", a.device_mesh().to_string(),
                     " and ", b.device_mesh().to_string(), "; redistribute one first"));
  }
}

bool IsPartialSum(const PlacementSpec& spec) {
  return spec.kind == PlacementKind::kPartial && spec.reduce == ReduceKind::kSum;
}

// How a binary elementwise op carries pending sums (PyTorch's pointwise rules): additive (add,
// sub: P(sum) op P(sum) stays P(sum)), multiplicative (mul: P(sum) * R and R * P(sum) stay
// P(sum)); any other Partial operand is reduced first.
enum class Linearity { kAdditive, kMultiplicative };

bool KeepsPartial(Linearity linearity, const PlacementSpec& a, const PlacementSpec& b) {
  if (linearity == Linearity::kAdditive) return IsPartialSum(a) && IsPartialSum(b);
  return (IsPartialSum(a) && b.kind == PlacementKind::kReplicate) ||
         (a.kind == PlacementKind::kReplicate && IsPartialSum(b));
}

// `stacked` (whose leading dims are those of `kept`'s true entries among `own`'s) with a size-1
// leading dim for each axis in `axes` it lacks, and size-1 dims after the leading ones up to
// `rank` value dims, so that two operands broadcast addend by addend.
Tensor Aligned(Tensor stacked, const std::vector<bool>& own, const std::vector<int64_t>& axes,
               int64_t rank) {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (!own[axes[i]]) stacked = unsqueeze(stacked, static_cast<int64_t>(i));
  }
  const int64_t leading = static_cast<int64_t>(axes.size());
  while (stacked.dim() < leading + rank) stacked = unsqueeze(stacked, leading);
  return stacked;
}

// A binary elementwise op on DTensors of one mesh. Pending sums the op is linear in stay pending
// (computed addend by addend, no collective); the other Partial axes are reduced first.
DTensor Pointwise(const char* op, Linearity linearity, const DTensor& a, const DTensor& b,
                  const std::function<Tensor(const Tensor&, const Tensor&)>& apply) {
  RequireOneMesh(op, a, b);
  const std::vector<PlacementSpec> specs_a = SpecsOf(a), specs_b = SpecsOf(b);
  std::vector<int64_t> kept;
  std::vector<bool> keep_a(specs_a.size()), keep_b(specs_b.size());
  for (size_t axis = 0; axis < specs_a.size(); ++axis) {
    if (!KeepsPartial(linearity, specs_a[axis], specs_b[axis])) continue;
    kept.push_back(static_cast<int64_t>(axis));
    keep_a[axis] = IsPartialSum(specs_a[axis]);
    keep_b[axis] = IsPartialSum(specs_b[axis]);
  }
  const int64_t rank = static_cast<int64_t>(std::max(a.shape().size(), b.shape().size()));
  const Tensor x = Aligned(Resolve(DTensorAccess::Stacked(a), specs_a, keep_a), keep_a, kept, rank);
  const Tensor y = Aligned(Resolve(DTensorAccess::Stacked(b), specs_b, keep_b), keep_b, kept, rank);
  const Tensor result = apply(x, y);
  return MakeDTensor(result, a.device_mesh(), PropagatedPlacements(result, a.device_mesh(), kept));
}

// matmul of two matrices whose contracted dim is split alike over some mesh axes (a Shard(1) and
// b Shard(0) on exactly the same axes): PyTorch's Partial(sum) over those axes, pending. Each
// device's addend is the product of its own blocks: the contracted dim, padded with zeros to a
// multiple of the axes' product (torch.chunk's chunks), is split into one block per addend and
// the blocks multiplied as a batch, [addends..., m, n]. nullopt where the rule does not apply.
std::optional<DTensor> PendingContraction(const DTensor& a, const DTensor& b) {
  if (a.shape().size() != 2 || b.shape().size() != 2) return std::nullopt;
  const std::vector<PlacementSpec> specs_a = SpecsOf(a), specs_b = SpecsOf(b);
  std::vector<int64_t> axes, counts;
  int64_t blocks = 1;
  for (size_t axis = 0; axis < specs_a.size(); ++axis) {
    const bool split_a = specs_a[axis].kind == PlacementKind::kShard && specs_a[axis].dim == 1;
    const bool split_b = specs_b[axis].kind == PlacementKind::kShard && specs_b[axis].dim == 0;
    if (split_a != split_b) return std::nullopt;
    if (!split_a) continue;
    axes.push_back(static_cast<int64_t>(axis));
    counts.push_back(a.device_mesh().size(static_cast<int64_t>(axis)));
    blocks *= counts.back();
  }
  if (axes.empty()) return std::nullopt;
  const int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  if (b.shape()[0] != k) return std::nullopt;  // matmul's own shape error, below.
  Tensor x = Resolve(DTensorAccess::Stacked(a), specs_a);
  Tensor y = Resolve(DTensorAccess::Stacked(b), specs_b);
  const int64_t chunk = (k + blocks - 1) / blocks;
  if (chunk * blocks != k) {
    x = cat({x, zeros({m, chunk * blocks - k}, x.dtype())}, 1);
    y = cat({y, zeros({chunk * blocks - k, n}, y.dtype())}, 0);
  }
  const int64_t count = static_cast<int64_t>(counts.size());
  std::vector<int64_t> x_shape = {m}, y_shape = counts, order;
  x_shape.insert(x_shape.end(), counts.begin(), counts.end());
  x_shape.push_back(chunk);
  y_shape.push_back(chunk);
  y_shape.push_back(n);
  for (int64_t i = 0; i < count; ++i) order.push_back(i + 1);
  order.push_back(0);
  order.push_back(count + 1);
  const Tensor stacked = matmul(permute(reshape(x, x_shape), order), reshape(y, y_shape));
  return MakeDTensor(stacked, a.device_mesh(),
                     PropagatedPlacements(stacked, a.device_mesh(), axes));
}

}  // namespace

DTensor operator+(const DTensor& a, const DTensor& b) {
  return Pointwise("add", Linearity::kAdditive, a, b,
                   [](const Tensor& x, const Tensor& y) { return x + y; });
}
DTensor operator-(const DTensor& a, const DTensor& b) {
  return Pointwise("subtract", Linearity::kAdditive, a, b,
                   [](const Tensor& x, const Tensor& y) { return x - y; });
}
DTensor operator*(const DTensor& a, const DTensor& b) {
  return Pointwise("multiply", Linearity::kMultiplicative, a, b,
                   [](const Tensor& x, const Tensor& y) { return x * y; });
}
DTensor matmul(const DTensor& a, const DTensor& b) {
  RequireOneMesh("matmul", a, b);
  if (std::optional<DTensor> pending = PendingContraction(a, b)) return *std::move(pending);
  const Tensor result = Resolve(DTensorAccess::Stacked(a), SpecsOf(a))
                            .matmul(Resolve(DTensorAccess::Stacked(b), SpecsOf(b)));
  return MakeDTensor(result, a.device_mesh(), PropagatedPlacements(result, a.device_mesh(), {}));
}

DTensor neg(const DTensor& x) {
  std::vector<PlacementSpec> specs = SpecsOf(x);
  for (PlacementSpec& spec : specs) {
    if (spec.kind != PlacementKind::kPartial) continue;
    if (spec.reduce == ReduceKind::kMax) {
      spec.reduce = ReduceKind::kMin;
    } else if (spec.reduce == ReduceKind::kMin) {
      spec.reduce = ReduceKind::kMax;
    }
  }
  return MakeDTensor(neg(DTensorAccess::Stacked(x)), x.device_mesh(), specs);
}
DTensor operator-(const DTensor& x) { return neg(x); }

DTensor relu(const DTensor& x) {
  std::vector<PlacementSpec> specs = SpecsOf(x);
  std::vector<bool> keep(specs.size());
  for (size_t axis = 0; axis < specs.size(); ++axis) {
    if (specs[axis].kind != PlacementKind::kPartial) continue;
    keep[axis] = specs[axis].reduce == ReduceKind::kMax || specs[axis].reduce == ReduceKind::kMin;
    if (!keep[axis]) specs[axis] = PlacementSpec{};
  }
  return MakeDTensor(relu(Resolve(DTensorAccess::Stacked(x), SpecsOf(x), keep)), x.device_mesh(),
                     specs);
}

namespace {

// `stacked` with its dim `position` (of size n, split over mesh axes of sizes `counts`) summed
// within each device's chunk: the dim, padded with zeros to whole chunks, becomes one dim per
// axis (`counts`), the chunk summed away (kept as size 1 with `keepdim`).
Tensor SumChunks(Tensor stacked, int64_t position, const std::vector<int64_t>& counts,
                 bool keepdim) {
  int64_t blocks = 1;
  for (int64_t count : counts) blocks *= count;
  std::vector<int64_t> shape = stacked.shape();
  const int64_t chunk = (shape[position] + blocks - 1) / blocks;
  if (chunk * blocks != shape[position]) {
    std::vector<int64_t> padding = shape;
    padding[position] = chunk * blocks - shape[position];
    stacked = cat({stacked, zeros(padding, stacked.dtype())}, position);
  }
  shape.erase(shape.begin() + position);
  shape.insert(shape.begin() + position, chunk);
  shape.insert(shape.begin() + position, counts.begin(), counts.end());
  const int64_t chunk_dim = position + static_cast<int64_t>(counts.size());
  return sum(reshape(stacked, shape), {chunk_dim}, keepdim);
}

}  // namespace

DTensor sum(const DTensor& x, std::vector<int64_t> dims, bool keepdim) {
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  if (dims.empty()) {
    for (int64_t dim = 0; dim < rank; ++dim) dims.push_back(dim);
  }
  for (int64_t& dim : dims) {
    if (dim < -rank || dim >= rank) {
      throw Error(ErrorCode::kInvalidArgument,
                  absl::StrCat("sum: dim ", dim, " is out of range for ", x.to_string()));
    }
    if (dim < 0) dim += rank;
  }
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  const std::vector<PlacementSpec> specs = SpecsOf(x);
  std::vector<bool> keep(specs.size());
  for (size_t axis = 0; axis < specs.size(); ++axis) keep[axis] = IsPartialSum(specs[axis]);
  Tensor stacked = Resolve(DTensorAccess::Stacked(x), specs, keep);
  // What each dim of `stacked` is: the pending sum of a mesh axis, or a value dim (-1).
  std::vector<int64_t> axis_of_dim;
  for (int64_t axis : dtensor::PartialAxes(specs)) {
    if (keep[axis]) axis_of_dim.push_back(axis);
  }
  const int64_t leading = static_cast<int64_t>(axis_of_dim.size());
  axis_of_dim.resize(leading + rank, -1);
  // From the last dim, so that each step changes only dims already done.
  for (auto dim = dims.rbegin(); dim != dims.rend(); ++dim) {
    const int64_t position = leading + *dim;
    std::vector<int64_t> axes, counts;
    for (size_t axis = 0; axis < specs.size(); ++axis) {
      if (specs[axis].kind != PlacementKind::kShard || specs[axis].dim != *dim) continue;
      axes.push_back(static_cast<int64_t>(axis));
      counts.push_back(x.device_mesh().size(static_cast<int64_t>(axis)));
    }
    axis_of_dim.erase(axis_of_dim.begin() + position);
    if (keepdim) axis_of_dim.insert(axis_of_dim.begin() + position, -1);
    if (axes.empty()) {
      stacked = sum(stacked, {position}, keepdim);
      continue;
    }
    stacked = SumChunks(stacked, position, counts, keepdim);
    axis_of_dim.insert(axis_of_dim.begin() + position, axes.begin(), axes.end());
  }
  // The pending sums' dims first, in mesh-axis order, then the value dims.
  std::vector<int64_t> order;
  for (size_t axis = 0; axis < specs.size(); ++axis) {
    const auto found =
        std::find(axis_of_dim.begin(), axis_of_dim.end(), static_cast<int64_t>(axis));
    if (found != axis_of_dim.end()) order.push_back(found - axis_of_dim.begin());
  }
  for (size_t dim = 0; dim < axis_of_dim.size(); ++dim) {
    if (axis_of_dim[dim] < 0) order.push_back(static_cast<int64_t>(dim));
  }
  std::vector<PlacementSpec> result(specs.size());
  for (size_t axis = 0; axis < specs.size(); ++axis) {
    if (std::find(axis_of_dim.begin(), axis_of_dim.end(), static_cast<int64_t>(axis)) !=
        axis_of_dim.end()) {
      result[axis] = {PlacementKind::kPartial, 0, ReduceKind::kSum};
    } else if (specs[axis].kind == PlacementKind::kShard) {
      const int64_t removed =
          keepdim ? 0 : std::count_if(dims.begin(), dims.end(), [&](int64_t dim) {
            return dim < specs[axis].dim;
          });
      result[axis] = {PlacementKind::kShard, specs[axis].dim - removed, ReduceKind::kSum};
    }
  }
  return MakeDTensor(permute(stacked, order), x.device_mesh(), result);
}

}  // namespace vkspmd
