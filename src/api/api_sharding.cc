// mark_sharding, clear_sharding and the ShardedTensor queries.
#include "absl/strings/str_cat.h"
#include "src/api/api_support.h"
#include "src/base/status_macros.h"
#include "src/debug/sharding_view.h"
#include "src/lazy/context.h"
#include "src/lazy/engine.h"
#include "src/lazy/lowering.h"
#include "src/lazy/trace_manual.h"
#include "src/lazy/trace_ops.h"
#include "src/lazy/value_transfer.h"
#include "src/spmd/partition_spec.h"
#include "src/spmd/propagation.h"
#include "vkspmd/sharded_tensor.h"

namespace vkspmd {
namespace {

using lazy::NodePtr;
using lazy::ToSpmdSpec;
using lazy::Unwrap;

// Moves a leaf's value (host data or device data anywhere) onto `placement` with `sharding`:
// queued on the engine, not waited for, so a step's batch need not wait for the step running now.
// A value already there with that sharding stays as it is.
NodePtr Reshard(const NodePtr& leaf, const lazy::PlacementPtr& placement,
                const spmd::AxisSharding& sharding) {
  if (!leaf->host_value.has_value() && leaf->device_value->placement()->key == placement->key &&
      leaf->device_value->KnownSharding() == sharding) {
    return leaf;
  }
  auto value = std::make_shared<lazy::DeviceValue>(placement, leaf->shape(), sharding);
  std::shared_ptr<const ir::Literal> host;
  if (leaf->host_value.has_value()) host = std::make_shared<ir::Literal>(*leaf->host_value);
  lazy::Engine::Get().Place(std::move(host), leaf->device_value, value);
  return lazy::MakeDeviceLeaf(std::move(value));
}

// The HLO sharding of a tensor over its placement's local mesh: a device value's, or for a value
// still to be computed the one propagation gives it. Nullopt without a mesh.
std::optional<std::pair<ir::Sharding, lazy::PlacementPtr>> CurrentSharding(const Tensor& tensor) {
  NodePtr node = lazy::NodeOf(tensor, "sharding_spec");
  if (node->device_value != nullptr) {
    const lazy::PlacementPtr& placement = node->device_value->placement();
    if (!placement->is_mesh) return std::nullopt;
    spmd::AxisSharding sharding = Unwrap(node->device_value->WaitSharding());
    return std::make_pair(spmd::ToHloSharding(sharding, placement->mesh), placement);
  }
  if (node->is_leaf() || node->placement == nullptr) return std::nullopt;
  std::lock_guard<std::mutex> lock(lazy::Context::Get().mutex());
  lazy::LoweredGraph graph = Unwrap(lazy::Lower({node}, node->placement));
  spmd::PropagationResult propagation =
      Unwrap(spmd::PropagateShardings(*graph.module, node->placement->local_mesh));
  const spmd::AxisSharding& sharding =
      propagation.shardings.at(graph.instructions.at(node.get())).at(0);
  return std::make_pair(spmd::ToHloSharding(sharding, node->placement->mesh), node->placement);
}

// The first `valid` elements of each dim of `padded`.
ir::Literal Unpad(const ir::Literal& padded, const std::vector<int64_t>& valid) {
  ir::Literal result(ir::Shape(padded.dtype(), valid));
  const std::vector<int64_t> strides = ir::RowMajorStrides(padded.shape().dimensions());
  const int64_t element_bytes = ir::DTypeByteSize(padded.dtype());
  std::vector<int64_t> index(valid.size(), 0);
  int64_t out = 0;
  if (result.ElementCount() == 0) return result;
  do {
    int64_t in = 0;
    for (size_t d = 0; d < index.size(); ++d) in += index[d] * strides[d];
    std::memcpy(result.bytes().data() + out * element_bytes,
                padded.bytes().data() + in * element_bytes, element_bytes);
    ++out;
  } while (ir::NextIndex(valid, index));
  return result;
}

// Marks `tensor` with `sharding` over `mesh` (the work of mark_sharding once the spec is resolved).
ShardedTensor MarkSharding(const Tensor& tensor, const Mesh& mesh,
                           const lazy::PlacementPtr& placement,
                           const spmd::AxisSharding& sharding) {
  NodePtr node = lazy::NodeOf(tensor, "mark_sharding");
  lazy::TensorState& state = *tensor.state();
  if (state.annotation.has_value() && !state.annotation->sharding.IsReplicated() &&
      (state.annotation->placement->key != placement->key ||
       state.annotation->sharding != sharding)) {
    throw Error(ErrorCode::kFailedPrecondition,
                absl::StrCat("mark_sharding: the tensor is already sharded as ",
                             state.annotation->sharding.ToString(state.annotation->placement->mesh),
                             " on ", state.annotation->placement->mesh.ToString(),
                             "; call clear_sharding before sharding it as ",
                             sharding.ToString(placement->mesh)));
  }
  if (node->is_leaf()) {
    state.node = Reshard(node, placement, sharding);
  } else if (node->manual) {
    // Inside a manual region with auto axes: the sharding over those axes (manual subgroup).
    state.node = Unwrap(lazy::trace::ConstrainInRegion(node, sharding, placement));
  } else {
    state.node = Unwrap(lazy::trace::ShardingConstraint(
        node, spmd::ToHloSharding(sharding, placement->local_mesh), placement));
  }
  state.annotation = lazy::ShardingAnnotation{mesh, placement, sharding};
  return ShardedTensor(tensor);
}

}  // namespace

ShardedTensor mark_sharding(const Tensor& tensor, const Mesh& mesh, const PartitionSpec& spec) {
  NodePtr node = lazy::NodeOf(tensor, "mark_sharding");
  lazy::PlacementPtr placement = lazy::PlacementOf(mesh);
  spmd::AxisSharding sharding =
      Unwrap(spmd::ResolvePartitionSpec(ToSpmdSpec(spec), placement->mesh, node->shape().rank()));
  return MarkSharding(tensor, mesh, placement, sharding);
}

ShardedTensor mark_sharding_like(const Tensor& tensor, const Tensor& reference) {
  NodePtr node = lazy::NodeOf(tensor, "mark_sharding_like");
  NodePtr reference_node = lazy::NodeOf(reference, "mark_sharding_like");
  if (node->shape().dimensions() != reference_node->shape().dimensions()) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("mark_sharding_like: the tensor is ", node->shape().ToString(),
                             " but the reference is ", reference_node->shape().ToString()));
  }
  const std::optional<lazy::ShardingAnnotation>& annotation = reference.state()->annotation;
  if (!annotation.has_value()) return ShardedTensor(tensor);
  return MarkSharding(tensor, annotation->mesh, annotation->placement, annotation->sharding);
}

ShardedTensor mark_sharding(const Tensor& tensor, const PartitionSpec& spec) {
  return mark_sharding(tensor, get_global_mesh(), spec);
}

void clear_sharding(const Tensor& tensor) {
  lazy::TensorState& state = *tensor.state();
  state.annotation.reset();
  const NodePtr& node = state.node;
  if (!node->is_leaf() && node->proto->opcode() == ir::Opcode::kCustomCall) {
    state.node = node->operands[0];
  }
}

std::string sharding_spec(const Tensor& tensor) {
  auto sharding = CurrentSharding(tensor);
  return sharding.has_value() ? sharding->first.ToString() : "";
}

namespace {

// The sharding picture's inputs: the tensor's sharding (device 0 holds a tensor without a mesh),
// its shape and the devices of its mesh.
std::pair<ir::Sharding, debug::ShardingViewOptions> ViewOf(const Tensor& tensor, bool color) {
  auto sharding = CurrentSharding(tensor);
  debug::ShardingViewOptions options;
  options.color = color;
  if (!sharding.has_value()) return {ir::Sharding::Maximal(0), options};
  options.devices = sharding->second->devices;
  return {sharding->first, options};
}

}  // namespace

std::string visualize_tensor_sharding(const Tensor& tensor, bool color) {
  auto [sharding, options] = ViewOf(tensor, color);
  return Unwrap(debug::VisualizeSharding(sharding, tensor.shape(), options));
}

std::string sharding_svg(const Tensor& tensor) {
  auto [sharding, options] = ViewOf(tensor, false);
  return Unwrap(debug::ShardingSvg(sharding, tensor.shape(), options));
}

std::string ShardedTensor::sharding_spec() const { return vkspmd::sharding_spec(*this); }

ShardingType ShardedTensor::sharding_type() const {
  auto sharding = CurrentSharding(*this);
  if (!sharding.has_value()) return ShardingType::kReplicated;
  switch (sharding->first.kind()) {
    case ir::Sharding::Kind::kReplicated:
      return ShardingType::kReplicated;
    case ir::Sharding::Kind::kMaximal:
      return ShardingType::kMaximal;
    case ir::Sharding::Kind::kManual:
      return ShardingType::kManual;
    default:
      return sharding->first.HasPartialReplication() ? ShardingType::kPartial
                                                     : ShardingType::kTiled;
  }
}

const Mesh& ShardedTensor::mesh() const {
  const std::optional<lazy::ShardingAnnotation>& annotation = state()->annotation;
  if (!annotation.has_value()) {
    throw Error(ErrorCode::kFailedPrecondition, "the tensor's sharding was cleared");
  }
  return annotation->mesh;
}

std::vector<LocalShard> ShardedTensor::local_shards(std::source_location where) const {
  NodePtr node = lazy::NodeOf(*this, "local_shards");
  if (!node->is_leaf()) {
    lazy::ThrowIfError(lazy::Context::Get().Sync({state()}, lazy::SyncCause::kValueRead, where));
    node = state()->node;
  }
  if (node->device_value == nullptr) {
    throw Error(ErrorCode::kFailedPrecondition,
                "local_shards: the tensor is host data that no mesh holds yet");
  }
  const lazy::Placement& placement = *node->device_value->placement();
  // Shards are downloaded on the worker (which owns the devices) and converted here.
  struct Downloaded {
    int64_t device = 0;
    std::vector<IndexRange> indices;
    ir::Literal padded, unpadded;
  };
  std::vector<Downloaded> downloads;
  lazy::ThrowIfError(lazy::Engine::Get().Call([&](lazy::DevicePool&) -> absl::Status {
    VKSPMD_ASSIGN_OR_RETURN(const exec::ShardedBuffer* buffer, node->device_value->WaitBuffer());
    for (size_t d = 0; d < buffer->shard_count(); ++d) {
      if (!buffer->donated() && !buffer->addressable(d)) continue;  // Another process's device.
      Downloaded shard;
      shard.device = placement.devices[d];
      std::vector<int64_t> valid;
      for (int64_t dim = 0; dim < buffer->shape().rank(); ++dim) {
        const int64_t device = static_cast<int64_t>(d);
        const int64_t offset = spmd::ShardOffset(buffer->shape(), buffer->sharding(), dim,
                                                 placement.local_mesh, device);
        valid.push_back(spmd::ShardValidSize(buffer->shape(), buffer->sharding(), dim,
                                             placement.local_mesh, device));
        shard.indices.push_back({offset, offset + valid.back()});
      }
      VKSPMD_ASSIGN_OR_RETURN(shard.padded, buffer->DownloadShard(d));
      shard.unpadded = Unpad(shard.padded, valid);
      downloads.push_back(std::move(shard));
    }
    return absl::OkStatus();
  }));
  std::vector<LocalShard> shards;
  for (size_t d = 0; d < downloads.size(); ++d) {
    shards.push_back({downloads[d].device, downloads[d].indices,
                      lazy::ToHostTensor(downloads[d].padded),
                      lazy::ToHostTensor(downloads[d].unpadded)});
  }
  return shards;
}

std::string sharding_type_name(ShardingType type) {
  switch (type) {
    case ShardingType::kReplicated:
      return "REPLICATED";
    case ShardingType::kMaximal:
      return "MAXIMAL";
    case ShardingType::kTiled:
      return "TILED";
    case ShardingType::kPartial:
      return "PARTIAL";
    case ShardingType::kManual:
      return "MANUAL";
  }
  return "UNKNOWN";
}

}  // namespace vkspmd
