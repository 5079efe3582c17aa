// The public DTensor API: a DTensor is one lazy "stacked" tensor (a leading dim per Partial mesh
// axis) marked with the sharding its placements give, so the SPMD partitioner moves its data.
#include <algorithm>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/api/api_support.h"
#include "src/api/dtensor_stacked.h"
#include "src/dtensor/placements.h"
#include "src/lazy/context.h"
#include "src/lazy/lowering.h"
#include "src/lazy/trace_ops.h"
#include "src/spmd/partitioner.h"
#include "vkspmd/distributed.h"
#include "vkspmd/dtensor.h"
#include "vkspmd/ops.h"
#include "vkspmd/sharded_tensor.h"

namespace vkspmd {

using dtensor_api::MakeDTensor;
using dtensor_api::Resolve;
using dtensor_api::SpecsOf;

namespace {

using dtensor::PlacementKind;
using dtensor::PlacementSpec;
using dtensor::ReduceKind;
using lazy::NodePtr;
using lazy::Unwrap;

PlacementSpec ToSpec(const Placement& placement) {
  if (placement.is_shard()) return {PlacementKind::kShard, placement.dim(), ReduceKind::kSum};
  if (placement.is_replicate()) return {};
  return {PlacementKind::kPartial, 0, static_cast<ReduceKind>(placement.reduce_op())};
}

Placement FromSpec(const PlacementSpec& spec) {
  switch (spec.kind) {
    case PlacementKind::kShard:
      return Shard{spec.dim};
    case PlacementKind::kPartial:
      return Partial{static_cast<ReduceOp>(spec.reduce)};
    case PlacementKind::kReplicate:
      break;
  }
  return Replicate{};
}

// The placements checked against the mesh and a tensor of `rank` dims (Shard dims made
// non-negative), as internal specs.
std::vector<PlacementSpec> Checked(const Placements& placements, const DeviceMesh& mesh,
                                   int64_t rank) {
  std::vector<PlacementSpec> specs;
  for (const Placement& placement : placements) specs.push_back(ToSpec(placement));
  return Unwrap(dtensor::Normalize(std::move(specs), lazy::ToSpmdMesh(mesh.mesh()), rank));
}

Placements FromSpecs(const std::vector<PlacementSpec>& specs) {
  Placements placements;
  for (const PlacementSpec& spec : specs) placements.push_back(FromSpec(spec));
  return placements;
}

PartitionSpec SpecOf(const spmd::AxisSharding& sharding) {
  PartitionSpec spec;
  for (const std::vector<int64_t>& axes : sharding.dims) {
    Axes entry({});
    for (int64_t axis : axes) entry.axes.emplace_back(axis);
    spec.emplace_back(std::move(entry));
  }
  return spec;
}

// A new tensor holding `value` laid out by `sharding` on `mesh`. Host data and data on another
// mesh are placed there directly (each device receives its shard); a value computed on this
// mesh, or held there already, gets a sharding constraint, which the partitioner meets with
// collectives.
Tensor Place(const Tensor& value, const DeviceMesh& mesh, const spmd::AxisSharding& sharding) {
  const lazy::PlacementPtr placement = lazy::PlacementOf(mesh.mesh());
  NodePtr node = lazy::NodeOf(value, "DTensor");
  if (!node->is_leaf() && node->placement != nullptr &&
      !lazy::SamePlacement(node->placement, placement)) {
    // Computed on another mesh: materialise it there first, then move the data. (A value of no
    // mesh, such as from_local's concatenation of host data, is computed on this one.)
    lazy::ThrowIfError(lazy::Context::Get().Sync({value.state()}, lazy::SyncCause::kValueRead,
                                                 std::source_location::current()));
    node = value.state()->node;
  }
  if (node->is_leaf() && (node->host_value.has_value() ||
                          !lazy::SamePlacement(node->device_value->placement(), placement))) {
    Tensor alias = lazy::Wrap(node);
    mark_sharding(alias, mesh.mesh(), SpecOf(sharding));
    return alias;
  }
  Tensor result = lazy::Wrap(lazy::trace::ShardingConstraint(
      node, spmd::ToHloSharding(sharding, placement->local_mesh), placement));
  result.state()->annotation = lazy::ShardingAnnotation{mesh.mesh(), placement, sharding};
  return result;
}

// The stacked form of a full `value` under placements with Partial axes (PyTorch's Replicate ->
// Partial): every device's addend is the value, divided by the axis size for a sum. An integer
// sum keeps its dtype: the axis's first device holds the value and the others zeros (a division
// would round, or, as PyTorch's true division does, make it float).
Tensor Partition(const Tensor& value, const std::vector<PlacementSpec>& specs,
                 const DeviceMesh& mesh) {
  const std::vector<int64_t> partial_axes = dtensor::PartialAxes(specs);
  const bool integer = !is_floating_point(value.dtype());
  Tensor stacked = value;
  int64_t divisor = 1;
  for (auto axis = partial_axes.rbegin(); axis != partial_axes.rend(); ++axis) {
    std::vector<int64_t> shape = stacked.shape();
    shape.insert(shape.begin(), mesh.size(*axis));
    if (integer && specs[*axis].reduce == ReduceKind::kSum) {
      if (shape[0] == 1) {
        stacked = unsqueeze(stacked, 0);
        continue;
      }
      std::vector<int64_t> rest = shape;
      rest[0] -= 1;
      stacked = cat({unsqueeze(stacked, 0), zeros(rest, stacked.dtype())}, 0);
      continue;
    }
    stacked = expand(unsqueeze(stacked, 0), shape);
    if (specs[*axis].reduce == ReduceKind::kSum) divisor *= mesh.size(*axis);
  }
  return divisor == 1 ? stacked : stacked / Scalar(static_cast<double>(divisor));
}

bool SamePartials(const std::vector<PlacementSpec>& a, const std::vector<PlacementSpec>& b) {
  if (a.size() != b.size()) return false;
  for (size_t axis = 0; axis < a.size(); ++axis) {
    const bool partial = a[axis].kind == PlacementKind::kPartial;
    if (partial != (b[axis].kind == PlacementKind::kPartial)) return false;
    if (partial && a[axis].reduce != b[axis].reduce) return false;
  }
  return true;
}

}  // namespace

namespace dtensor_api {

Tensor Resolve(const Tensor& stacked, const std::vector<PlacementSpec>& specs,
               const std::vector<bool>& keep) {
  Tensor value = stacked;
  int64_t leading = 0;  // The leading dim of the next Partial axis.
  for (int64_t axis : dtensor::PartialAxes(specs)) {
    if (!keep.empty() && keep[axis]) {
      ++leading;
      continue;
    }
    switch (specs[axis].reduce) {
      case ReduceKind::kSum:
        value = sum(value, {leading});
        break;
      case ReduceKind::kAvg:
        value = mean(value, {leading});
        break;
      case ReduceKind::kMax:
        value = amax(value, {leading});
        break;
      case ReduceKind::kMin:
        value = amin(value, {leading});
        break;
    }
  }
  return value;
}

DTensor MakeDTensor(const Tensor& stacked, const DeviceMesh& mesh,
                    const std::vector<PlacementSpec>& specs) {
  const int64_t leading = static_cast<int64_t>(dtensor::PartialAxes(specs).size());
  std::vector<int64_t> shape(stacked.shape().begin() + leading, stacked.shape().end());
  const int64_t rank = static_cast<int64_t>(shape.size());
  return DTensorAccess::Make(mesh, FromSpecs(specs), shape,
                             Place(stacked, mesh, dtensor::StackedSharding(specs, rank)));
}

std::vector<PlacementSpec> SpecsOf(const DTensor& tensor) {
  std::vector<PlacementSpec> specs;
  for (const Placement& placement : tensor.placements()) specs.push_back(ToSpec(placement));
  return specs;
}

}  // namespace dtensor_api

DeviceMesh::DeviceMesh(std::vector<int64_t> device_ids, std::vector<int64_t> shape,
                       std::vector<std::string> axis_names)
    : mesh_(std::move(shape), std::move(device_ids), std::move(axis_names)) {}

int64_t DeviceMesh::size(int64_t axis) const {
  if (axis < 0 || axis >= ndim()) {
    throw Error(ErrorCode::kInvalidArgument, absl::StrCat("DeviceMesh::size: axis ", axis,
                                                          " is out of range for ", to_string()));
  }
  return mesh_.shape()[axis];
}

std::string DeviceMesh::to_string() const {
  return absl::StrCat("DeviceMesh(", mesh_.to_string(), ")");
}

int64_t Placement::dim() const {
  if (!is_shard()) {
    throw Error(ErrorCode::kFailedPrecondition, absl::StrCat(to_string(), " has no dim"));
  }
  return std::get<Shard>(value_).dim;
}

ReduceOp Placement::reduce_op() const {
  if (!is_partial()) {
    throw Error(ErrorCode::kFailedPrecondition, absl::StrCat(to_string(), " has no reduce op"));
  }
  return std::get<Partial>(value_).op;
}

std::string Placement::to_string() const { return dtensor::ToString(ToSpec(*this)); }

DTensor distribute_tensor(const Tensor& tensor, const DeviceMesh& mesh,
                          const Placements& placements) {
  const std::vector<PlacementSpec> specs = Checked(placements, mesh, tensor.dim());
  return MakeDTensor(Partition(tensor, specs, mesh), mesh, specs);
}

namespace {

// Which mesh positions are this process's devices.
std::vector<bool> OwnDevices(const DeviceMesh& mesh) {
  const std::vector<int> addressable = distributed::addressable_devices();
  std::vector<bool> mine(mesh.size(), false);
  for (int64_t k = 0; k < mesh.size(); ++k) {
    mine[k] = std::find(addressable.begin(), addressable.end(), mesh.device_ids()[k]) !=
              addressable.end();
  }
  return mine;
}

// from_local in a job of several processes: `own` holds a local per mesh device of this process
// (mesh order), as PyTorch's DTensor.from_local takes each rank's shard. The other processes'
// devices get zeros of the same shape in their place: each process uploads only its own devices'
// shards of the combined value (docs/distributed.md), so no other process's data is needed. A
// Replicate axis takes, per group, the first local this process holds (the group's other members
// are other processes', each of which uses its own).
std::vector<Tensor> LocalsOfTheJob(const std::vector<Tensor>& own, const DeviceMesh& mesh,
                                   const std::vector<bool>& mine) {
  const int64_t count = std::count(mine.begin(), mine.end(), true);
  if (static_cast<int64_t>(own.size()) != count) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("from_local: ", own.size(), " local tensor(s) for ", mesh.to_string(),
                             " in process ", distributed::process_index(), " of ",
                             distributed::process_count(), ", which drives ", count,
                             " of its devices; give one per device of this process, in mesh "
                             "order (as PyTorch's from_local takes the rank's own shard)"));
  }
  if (own.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("from_local: this process drives no device of ", mesh.to_string()));
  }
  for (const Tensor& local : own) {
    if (local.shape() != own.front().shape() || local.dtype() != own.front().dtype()) {
      throw Error(ErrorCode::kInvalidArgument,
                  absl::StrCat("from_local: in a job of several processes every local tensor must "
                               "have the same shape and dtype (the other processes' shards are "
                               "not known here): [",
                               absl::StrJoin(local.shape(), ","), "] and [",
                               absl::StrJoin(own.front().shape(), ","), "]"));
    }
  }
  const Tensor zeros_like = zeros(own.front().shape(), own.front().dtype());
  std::vector<Tensor> locals(mesh.size());
  size_t next = 0;
  for (int64_t k = 0; k < mesh.size(); ++k) locals[k] = mine[k] ? own[next++] : zeros_like;
  return locals;
}

}  // namespace

DTensor from_local(const std::vector<Tensor>& given, const DeviceMesh& mesh,
                   const Placements& placements) {
  const bool job = distributed::process_count() > 1;
  if (!job && static_cast<int64_t>(given.size()) != mesh.size()) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("from_local: ", given.size(), " local tensor(s) for ",
                             mesh.to_string(), "; give one per mesh device, in mesh order"));
  }
  std::vector<bool> mine = job ? OwnDevices(mesh) : std::vector<bool>(mesh.size(), true);
  const std::vector<Tensor> locals = job ? LocalsOfTheJob(given, mesh, mine) : given;
  const std::vector<PlacementSpec> specs = Checked(placements, mesh, locals.front().dim());
  // Combines the locals axis by axis from the last: a Partial axis stacks its group on a new
  // leading dim (so leading dims end up in mesh-axis order), a Shard axis concatenates it past
  // the leading dims of the Partial axes after it, a Replicate axis keeps its first.
  // `mine` says which of them hold this process's data (all, in a job of one process): a
  // Replicate group takes its first such local.
  std::vector<Tensor> groups = locals;
  int64_t inner_partials = 0;
  for (int64_t axis = mesh.ndim() - 1; axis >= 0; --axis) {
    const int64_t size = mesh.size(axis);
    std::vector<Tensor> combined;
    std::vector<bool> combined_mine;
    for (size_t start = 0; start < groups.size(); start += size) {
      std::vector<Tensor> group(groups.begin() + start, groups.begin() + start + size);
      const auto first = std::find(mine.begin() + start, mine.begin() + start + size, true);
      combined_mine.push_back(first != mine.begin() + start + size);
      switch (specs[axis].kind) {
        case PlacementKind::kShard:
          combined.push_back(cat(group, inner_partials + specs[axis].dim));
          break;
        case PlacementKind::kReplicate:
          combined.push_back(combined_mine.back() ? group[first - (mine.begin() + start)]
                                                  : group.front());
          break;
        case PlacementKind::kPartial:
          for (Tensor& local : group) local = unsqueeze(local, 0);
          combined.push_back(cat(group, 0));
          break;
      }
    }
    if (specs[axis].kind == PlacementKind::kPartial) ++inner_partials;
    groups = std::move(combined);
    mine = std::move(combined_mine);
  }
  if (!job) return MakeDTensor(groups.front(), mesh, specs);
  // This process's combined value as host data, which the placement uploads only this process's
  // shards of. (Traced instead, the partitioner would split the concatenation itself and feed a
  // device pieces of locals that only another process holds.)
  return MakeDTensor(from_host(groups.front().to_host()), mesh, specs);
}

DTensor DTensor::redistribute(const DeviceMesh& mesh, const Placements& placements) const {
  const std::vector<PlacementSpec> from = SpecsOf(*this);
  const std::vector<PlacementSpec> to =
      Checked(placements, mesh, static_cast<int64_t>(shape_.size()));
  // Pending reductions that stay pending (same axes, same ops, same mesh) move as they are.
  if (mesh == mesh_ && SamePartials(from, to)) return MakeDTensor(stacked_, mesh, to);
  return MakeDTensor(Partition(Resolve(stacked_, from), to, mesh), mesh, to);
}

std::vector<Tensor> DTensor::to_local(std::source_location where) const {
  const std::vector<LocalShard> shards = ShardedTensor(stacked_).local_shards(where);
  const int64_t leading = stacked_.dim() - static_cast<int64_t>(shape_.size());
  std::vector<Tensor> locals(mesh_.size());
  for (const LocalShard& shard : shards) {
    const auto found =
        std::find(mesh_.device_ids().begin(), mesh_.device_ids().end(), shard.device);
    HostTensor data = shard.unpadded_data;
    data.shape.erase(data.shape.begin(), data.shape.begin() + leading);
    locals[found - mesh_.device_ids().begin()] = from_host(data);
  }
  return locals;
}

Tensor DTensor::full_tensor() const {
  return Place(Resolve(stacked_, SpecsOf(*this)), mesh_,
               spmd::AxisSharding::Replicated(static_cast<int64_t>(shape_.size())));
}

std::string DTensor::to_string() const {
  std::vector<std::string> parts;
  for (const Placement& placement : placements_) parts.push_back(placement.to_string());
  return absl::StrCat("DTensor(shape=[", absl::StrJoin(shape_, ","), "], ", mesh_.to_string(),
                      ", placements=[", absl::StrJoin(parts, ", "), "])");
}

std::vector<std::string> DTensor::redistribute_collectives(const DeviceMesh& mesh,
                                                           const Placements& placements) const {
  const NodePtr node = lazy::NodeOf(redistribute(mesh, placements).stacked_, "redistribute");
  if (node->is_leaf()) return {};  // Placed directly: host data or another mesh's.
  const lazy::PlacementPtr placement = lazy::PlacementOf(mesh.mesh());
  std::lock_guard<std::mutex> lock(lazy::Context::Get().mutex());
  const lazy::LoweredGraph graph = Unwrap(lazy::Lower({node}, placement));
  const spmd::PartitionResult partition =
      Unwrap(spmd::Partition(*graph.module, placement->local_mesh));
  std::vector<std::string> collectives;
  for (const spmd::CollectiveRecord& record : partition.collectives) {
    collectives.push_back(absl::StrCat(std::string(ir::OpcodeName(record.kind)), " along ",
                                       partition.mesh.AxesLabel(record.axes)));
  }
  return collectives;
}

}  // namespace vkspmd
