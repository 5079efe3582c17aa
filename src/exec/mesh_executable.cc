// Compiling and running a per-device program on a mesh.
#include "src/exec/mesh_executable.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/collectives/in_process_world.h"
#include "src/debug/trace_writer.h"

namespace vkspmd::exec {

absl::StatusOr<std::unique_ptr<MeshExecutable>> MeshExecutable::Compile(
    const ir::Module& module, const std::vector<runtime::MeshDevice*>& devices, bool timestamps,
    std::shared_ptr<collectives::World> world) {
  const int64_t replicas = module.replica_count(), partitions = module.partition_count();
  if (static_cast<int64_t>(devices.size()) != replicas * partitions) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the program runs on ", replicas, " replica(s) x ", partitions,
        " partition(s) = ", replicas * partitions, " devices; ", devices.size(), " were given"));
  }
  std::unique_ptr<MeshExecutable> mesh(new MeshExecutable());
  const int ranks = static_cast<int>(devices.size());
  // Device-side collectives replace only the world made here: an injected world (Gloo, a
  // recording or a user's transport) is asked to carry every collective.
  const bool own_world = world == nullptr;
  if (world == nullptr) {
    VKSPMD_ASSIGN_OR_RETURN(world, collectives::InProcessWorld::Create(ranks));
  }
  if (world->size() != ranks) {
    // Device d's communicator is rank d.
    return absl::InvalidArgumentError(
        absl::StrCat("the program's ", ranks, " devices need a collective world of ", ranks,
                     " ranks; the world has ", world->size(), " rank(s)"));
  }
  // This process runs the world's local ranks; the other devices are other processes'.
  std::vector<bool> local(ranks, false);
  for (int rank : world->local_ranks()) local[rank] = true;
  for (int d = 0; d < ranks; ++d) {
    if (local[d] && devices[d] == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("device ", d, " runs here but is null"));
    }
    if (local[d]) mesh->local_.push_back(d);
  }
  mesh->world_ = std::move(world);
  if (own_world && mesh->local_.size() == devices.size()) {
    VKSPMD_ASSIGN_OR_RETURN(mesh->device_collectives_, DeviceCollectives::FromEnvironment(devices));
  }
  mesh->executables_.resize(devices.size());
  mesh->communicators_.resize(devices.size());
  for (size_t d : mesh->local_) {
    VKSPMD_ASSIGN_OR_RETURN(mesh->communicators_[d], mesh->world_->Connect(static_cast<int>(d)));
    DeviceAssignment assignment;
    assignment.replica = static_cast<int64_t>(d) / partitions;
    assignment.partition = static_cast<int64_t>(d) % partitions;
    assignment.communicator = mesh->communicators_[d].get();
    assignment.device_collectives = mesh->device_collectives_.get();
    absl::StatusOr<std::unique_ptr<Executable>> executable =
        Executable::Compile(module, *devices[d], timestamps, assignment);
    if (!executable.ok()) {
      return absl::Status(executable.status().code(),
                          absl::StrCat("device ", d, ": ", executable.status().message()));
    }
    mesh->executables_[d] = std::move(*executable);
  }
  mesh->workers_ = std::make_unique<DeviceWorkers>(mesh->local_.size());
  return mesh;
}

absl::Status MeshExecutable::OnEveryDevice(const std::function<absl::Status(size_t)>& body) {
  const size_t n = executables_.size();
  if (debug::TracingOn()) {
    size_t segments = 0;
    for (size_t d : local_) segments = std::max(segments, executables_[d]->segment_count());
    const uint64_t flow_base = debug::NextFlowIds(segments * n);
    for (size_t d : local_) executables_[d]->set_trace_flow_base(flow_base);
  }
  std::vector<absl::Status> statuses(n);
  workers_->RunOnEach([&](size_t worker) {
    const size_t d = local_[worker];
    debug::ScopedTraceSpan span("device run");
    statuses[d] = body(d);
    // Peers waiting for this device at a collective fail now instead of at their timeout.
    if (!statuses[d].ok()) {
      const absl::Status failed(statuses[d].code(),
                                absl::StrCat("device ", d, " failed: ", statuses[d].message()));
      world_->Abort(failed);
      if (device_collectives_ != nullptr) device_collectives_->Abort(failed);
    }
  });
  world_->Reset();
  if (device_collectives_ != nullptr) device_collectives_->Reset();
  // Report the cause: a failing device's own error (its submit timeout is DEADLINE_EXCEEDED)
  // rather than its peers' collective timeouts, which are ABORTED.
  const absl::Status* first = nullptr;
  for (const absl::Status& status : statuses) {
    if (status.ok()) continue;
    if (first == nullptr || (absl::IsAborted(*first) && !absl::IsAborted(status))) {
      first = &status;
    }
  }
  return first == nullptr ? absl::OkStatus() : *first;
}

absl::StatusOr<std::vector<ir::Literal>> MeshExecutable::Run(
    const std::vector<std::vector<ir::Literal>>& arguments) {
  const size_t n = executables_.size();
  if (arguments.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("arguments for ", arguments.size(), " devices; the program runs on ", n));
  }
  std::vector<absl::StatusOr<ir::Literal>> results(n);
  VKSPMD_RETURN_IF_ERROR(OnEveryDevice([&](size_t d) {
    results[d] = executables_[d]->Run(arguments[d]);
    return results[d].status();
  }));
  std::vector<ir::Literal> values(n);
  for (size_t d : local_) values[d] = std::move(*results[d]);
  return values;
}

absl::StatusOr<std::vector<std::unique_ptr<ShardedBuffer>>> MeshExecutable::RunSharded(
    const std::vector<const ShardedBuffer*>& arguments, const std::vector<ir::Shape>& result_shapes,
    const std::vector<spmd::AxisSharding>& result_shardings, const spmd::Mesh& mesh) {
  std::vector<ShardedBuffer*> borrowed;
  for (const ShardedBuffer* argument : arguments) {
    borrowed.push_back(const_cast<ShardedBuffer*>(argument));  // Not donated, so not changed.
  }
  return RunSharded(borrowed, std::vector<bool>(arguments.size(), false), result_shapes,
                    result_shardings, mesh);
}

absl::StatusOr<std::vector<std::unique_ptr<ShardedBuffer>>> MeshExecutable::RunSharded(
    const std::vector<ShardedBuffer*>& arguments, const std::vector<bool>& donate,
    const std::vector<ir::Shape>& result_shapes,
    const std::vector<spmd::AxisSharding>& result_shardings, const spmd::Mesh& mesh) {
  const size_t n = executables_.size();
  if (donate.size() != arguments.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("donate has ", donate.size(), " flags for ", arguments.size(), " arguments"));
  }
  for (size_t k = 0; k < arguments.size(); ++k) {
    const ShardedBuffer* argument = arguments[k];
    if (argument == nullptr || argument->shard_count() != n) {
      return absl::InvalidArgumentError(
          absl::StrCat("every argument needs one shard per device (", n, ")"));
    }
    if (argument->donated()) {
      return absl::FailedPreconditionError(
          absl::StrCat("argument ", k, " was donated to an earlier run and no longer exists"));
    }
    for (size_t d : local_) {
      if (!argument->addressable(d)) {
        return absl::FailedPreconditionError(absl::StrCat("argument ", k, "'s shard for device ", d,
                                                          " is not addressable from this process"));
      }
    }
    for (size_t j = 0; j < k; ++j) {
      if (donate[k] && arguments[j] == argument) {
        return absl::InvalidArgumentError(
            absl::StrCat("argument ", k, " is donated and also passed as argument ", j));
      }
    }
  }
  if (result_shapes.size() != result_shardings.size()) {
    return absl::InvalidArgumentError("one sharding per result leaf");
  }
  for (size_t d : local_) {
    std::vector<const runtime::Buffer*> shards;
    for (const ShardedBuffer* argument : arguments) shards.push_back(&argument->shard(d));
    absl::Status usable = executables_[d]->CheckDeviceArguments(shards);
    if (!usable.ok()) {
      return absl::Status(usable.code(), absl::StrCat("device ", d, ": ", usable.message()));
    }
  }
  // Every check is done: from here on the donated shards belong to the run.
  std::vector<std::vector<Executable::DeviceArgument>> device_arguments(n);
  for (auto& per_device : device_arguments) per_device.resize(arguments.size());
  for (size_t k = 0; k < arguments.size(); ++k) {
    std::vector<std::unique_ptr<runtime::Buffer>> donated;
    if (donate[k]) donated = arguments[k]->Donate();
    for (size_t d : local_) {
      if (donate[k]) {
        device_arguments[d][k].owned = std::move(donated[d]);
      } else {
        device_arguments[d][k].borrowed = &arguments[k]->shard(d);
      }
    }
  }
  std::vector<absl::StatusOr<std::vector<std::unique_ptr<runtime::Buffer>>>> results(n);
  VKSPMD_RETURN_IF_ERROR(OnEveryDevice([&](size_t d) {
    results[d] = executables_[d]->RunOnDevice(std::move(device_arguments[d]));
    return results[d].status();
  }));
  for (size_t d : local_) {
    if (results[d]->size() != result_shapes.size()) {
      return absl::InvalidArgumentError(absl::StrCat("the program has ", results[d]->size(),
                                                     " results; ", result_shapes.size(),
                                                     " shapes were given"));
    }
  }
  std::vector<std::unique_ptr<ShardedBuffer>> values;
  for (size_t leaf = 0; leaf < result_shapes.size(); ++leaf) {
    std::vector<std::unique_ptr<runtime::Buffer>> shards;
    for (size_t d = 0; d < n; ++d) {
      // Other processes' shards stay null: not addressable here.
      shards.push_back(results[d].ok() ? std::move((*results[d])[leaf]) : nullptr);
    }
    VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<ShardedBuffer> value,
                            ShardedBuffer::FromShards(result_shapes[leaf], result_shardings[leaf],
                                                      mesh, std::move(shards)));
    values.push_back(std::move(value));
  }
  return values;
}

}  // namespace vkspmd::exec
