// Planning each tensor's target shards, filling them from the step, then uploading them.
#include "src/checkpoint/restore.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/status_macros.h"
#include "src/debug/metrics.h"
#include "src/debug/trace_writer.h"
#include "src/lazy/distributed.h"
#include "src/lazy/engine.h"
#include "src/spmd/axis_sharding.h"

namespace vkspmd::checkpoint {
namespace {

// Where one tensor goes and, once read, its per-device shards (or whole host value).
struct TensorPlan {
  const NamedTensor* tensor = nullptr;
  const io::ManifestTensor* saved = nullptr;
  lazy::PlacementPtr placement;  // Null: host data.
  spmd::AxisSharding sharding;
  ir::Shape shape;
  std::vector<ir::Literal> shards;  // Per local device (or one: the host value).
};

std::string ShapeText(ir::DType dtype, const std::vector<int64_t>& dims) {
  return ir::Shape(dtype, dims).ToString();
}

// The target of a tensor: its mark_sharding annotation, else where its value lives now.
absl::Status PlanTarget(TensorPlan& plan) {
  const lazy::TensorState& state = *plan.tensor->state;
  if (state.annotation.has_value()) {
    plan.placement = state.annotation->placement;
    plan.sharding = state.annotation->sharding;
    return absl::OkStatus();
  }
  const lazy::NodePtr& node = state.node;
  if (node->device_value != nullptr && node->device_value->placement()->is_mesh) {
    plan.placement = node->device_value->placement();
    VKSPMD_ASSIGN_OR_RETURN(plan.sharding, node->device_value->WaitSharding());
  } else if (node->device_value != nullptr) {
    plan.placement = node->device_value->placement();
    plan.sharding = spmd::AxisSharding::Replicated(plan.shape.rank());
  }
  if (plan.sharding.manual) {
    return absl::FailedPreconditionError(
        absl::StrCat("tensor \"", plan.tensor->name,
                     "\" is inside a manual sharding region; restore it outside"));
  }
  return absl::OkStatus();
}

absl::Status ReadShards(const StepReader& reader, TensorPlan& plan) {
  if (plan.placement == nullptr) {
    VKSPMD_ASSIGN_OR_RETURN(ir::Literal whole, ReadWholeTensor(reader, *plan.saved));
    plan.shards.push_back(std::move(whole));
    return absl::OkStatus();
  }
  const spmd::Mesh& mesh = plan.placement->local_mesh;
  const ir::Shape shard_shape = plan.sharding.maximal_device.has_value()
                                    ? plan.shape
                                    : spmd::ShardShape(plan.shape, plan.sharding, mesh);
  // Devices with the same box (replicas) share one filled buffer, copied at the end.
  std::vector<Box> boxes;
  std::vector<size_t> unique_of_device;
  std::vector<ir::Literal> unique;
  // In a job of several processes only this process's devices are filled (the others' shards
  // are read there): a checkpoint saved by this process alone holds them.
  const lazy::DistributedState* job = lazy::Distributed();
  constexpr size_t kRemote = ~size_t{0};
  for (int64_t d = 0; d < mesh.device_count(); ++d) {
    if (job != nullptr && plan.placement->is_mesh && !job->IsLocal(plan.placement->devices[d])) {
      unique_of_device.push_back(kRemote);
      continue;
    }
    Box box;
    if (plan.sharding.maximal_device.has_value()) {
      box = Box::Whole(plan.shape.dimensions());
    } else {
      for (int64_t dim = 0; dim < plan.shape.rank(); ++dim) {
        const int64_t offset = spmd::ShardOffset(plan.shape, plan.sharding, dim, mesh, d);
        box.start.push_back(offset);
        box.stop.push_back(offset + spmd::ShardValidSize(plan.shape, plan.sharding, dim, mesh, d));
      }
    }
    auto known = std::find(boxes.begin(), boxes.end(), box);
    if (known == boxes.end()) {
      boxes.push_back(box);
      unique.emplace_back(shard_shape);
      known = boxes.end() - 1;
    }
    unique_of_device.push_back(static_cast<size_t>(known - boxes.begin()));
  }
  std::vector<StepReader::Target> targets;
  for (size_t u = 0; u < unique.size(); ++u) {
    targets.push_back({boxes[u], shard_shape.dimensions(), unique[u].bytes().data()});
  }
  VKSPMD_RETURN_IF_ERROR(reader.Fill(*plan.saved, targets));
  // The last device of each box takes its buffer; replicas before it take copies.
  std::vector<size_t> uses(unique.size(), 0);
  for (size_t index : unique_of_device) {
    if (index != kRemote) ++uses[index];
  }
  for (size_t index : unique_of_device) {
    if (index == kRemote) {
      plan.shards.emplace_back();  // Not uploaded here (FromHostShards skips null devices).
      continue;
    }
    plan.shards.push_back(--uses[index] == 0 ? std::move(unique[index]) : unique[index]);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ir::Literal> ReadWholeTensor(const StepReader& reader,
                                            const io::ManifestTensor& tensor) {
  ir::Literal whole(ir::Shape(tensor.dtype, tensor.shape));
  const Box box = Box::Whole(tensor.shape);
  VKSPMD_RETURN_IF_ERROR(reader.Fill(tensor, {{box, tensor.shape, whole.bytes().data()}}));
  return whole;
}

absl::Status RestoreTensors(const StepReader& reader, const std::vector<NamedTensor>& tensors) {
  debug::ScopedTraceSpan span("checkpoint restore", "checkpoint");
  span.AddArg("step", static_cast<double>(reader.step()));
  std::vector<TensorPlan> plans;
  for (const NamedTensor& tensor : tensors) {
    TensorPlan plan;
    plan.tensor = &tensor;
    plan.saved = reader.manifest().Find(tensor.name);
    if (plan.saved == nullptr) {
      std::vector<std::string> names;
      for (const io::ManifestTensor& saved : reader.manifest().tensors) {
        if (names.size() == 8) {
          names.push_back("...");
          break;
        }
        names.push_back(saved.name);
      }
      return absl::NotFoundError(absl::StrCat("checkpoint step ", reader.step(), " (",
                                              reader.path(), ") has no tensor \"", tensor.name,
                                              "\"; it has ", absl::StrJoin(names, ", ")));
    }
    if (tensor.state == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor \"", tensor.name, "\" to restore is undefined"));
    }
    plan.shape = tensor.state->node->shape();
    if (plan.shape.dtype() != plan.saved->dtype || plan.shape.dimensions() != plan.saved->shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor \"", tensor.name, "\" is ", plan.shape.ToString(), " but checkpoint step ",
          reader.step(), " saved it as ", ShapeText(plan.saved->dtype, plan.saved->shape)));
    }
    VKSPMD_RETURN_IF_ERROR(PlanTarget(plan));
    plans.push_back(std::move(plan));
  }
  for (TensorPlan& plan : plans) VKSPMD_RETURN_IF_ERROR(ReadShards(reader, plan));
  // Every shard is read and verified: now the new values go to the devices.
  std::vector<lazy::NodePtr> leaves(plans.size());
  VKSPMD_RETURN_IF_ERROR(lazy::Engine::Get().Call([&](lazy::DevicePool& pool) -> absl::Status {
    for (size_t i = 0; i < plans.size(); ++i) {
      TensorPlan& plan = plans[i];
      if (plan.placement == nullptr) {
        leaves[i] = lazy::MakeHostLeaf(std::move(plan.shards[0]));
        continue;
      }
      VKSPMD_ASSIGN_OR_RETURN(std::vector<runtime::MeshDevice*> devices,
                              pool.DevicesFor(*plan.placement));
      VKSPMD_ASSIGN_OR_RETURN(
          std::unique_ptr<exec::ShardedBuffer> buffer,
          exec::ShardedBuffer::FromHostShards(plan.shape, plan.sharding, plan.placement->local_mesh,
                                              devices, plan.shards));
      debug::RecordHostToDevice(spmd::ByteSize(buffer->shard_shape()) *
                                static_cast<int64_t>(buffer->shard_count()));
      auto value = std::make_shared<lazy::DeviceValue>(plan.placement, plan.shape, plan.sharding);
      value->SetBuffer(std::move(buffer));
      leaves[i] = lazy::MakeDeviceLeaf(std::move(value));
    }
    return absl::OkStatus();
  }));
  for (size_t i = 0; i < plans.size(); ++i) {
    lazy::TensorState& state = *plans[i].tensor->state;
    state.node = std::move(leaves[i]);
    // The old value is gone, not replaced by a computation: nothing to donate.
    state.replaced = nullptr;
  }
  return absl::OkStatus();
}

}  // namespace vkspmd::checkpoint
