// The checkpoint API (vkspmd/checkpoint.h) over src/checkpoint: the public state becomes named
// tensor states plus integer lists (the caller's, the data position, the generator's state).
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/api/api_support.h"
#include "src/checkpoint/checkpoint_manager.h"
#include "src/checkpoint/restore.h"
#include "src/checkpoint/safetensors_export.h"
#include "src/checkpoint/snapshot.h"
#include "src/checkpoint/step_directory.h"
#include "src/checkpoint/step_reader.h"
#include "src/checkpoint/step_writer.h"
#include "src/spmd/mesh.h"
#include "vkspmd/checkpoint.h"

namespace vkspmd {
namespace {

using lazy::ThrowIfError;
using lazy::Unwrap;

// Names of the values the library saves itself, beside the caller's integer lists.
constexpr char kDataPosition[] = "vkspmd.data_position";
constexpr char kRngState[] = "vkspmd.rng";

std::vector<checkpoint::NamedTensor> NamedTensors(const CheckpointState& state) {
  std::vector<checkpoint::NamedTensor> tensors;
  for (const auto& [name, tensor] : state.tensors) {
    if (!tensor.defined()) {
      throw Error(ErrorCode::kInvalidArgument,
                  absl::StrCat("checkpoint: tensor \"", name, "\" is undefined"));
    }
    tensors.push_back({name, tensor.state()});
  }
  return tensors;
}

std::vector<uint64_t> Unsigned(const std::string& name, const std::vector<int64_t>& values) {
  std::vector<uint64_t> result;
  for (int64_t value : values) {
    if (value < 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  absl::StrCat("checkpoint: integer list \"", name, "\" holds ", value,
                               "; only values >= 0 can be saved"));
    }
    result.push_back(static_cast<uint64_t>(value));
  }
  return result;
}

// Stages the tensors and reads every saved value now (what the state is at this call).
absl::StatusOr<checkpoint::Snapshot> Stage(const CheckpointState& state) {
  std::map<std::string, std::vector<uint64_t>> integers;
  for (const CheckpointState::Integers& entry : state.integers) {
    if (entry.name.rfind("vkspmd.", 0) == 0 || integers.contains(entry.name)) {
      return absl::InvalidArgumentError(absl::StrCat("checkpoint: integer list name \"", entry.name,
                                                     "\" is taken (used twice, or vkspmd.*)"));
    }
    integers[entry.name] = Unsigned(entry.name, entry.get());
  }
  integers[kDataPosition] = Unsigned("data_position", {state.data_position});
  if (state.rng) {
    const RngState rng = get_rng_state();
    integers[kRngState] = {rng.seed, rng.offset};
  }
  absl::StatusOr<checkpoint::Snapshot> snapshot = checkpoint::TakeSnapshot(NamedTensors(state));
  if (!snapshot.ok()) return snapshot.status();
  snapshot->integers = std::move(integers);
  snapshot->metadata = state.metadata;
  return snapshot;
}

int64_t ToSigned(const std::string& name, uint64_t value) {
  if (value > uint64_t{INT64_MAX}) {
    throw Error(ErrorCode::kDataLoss, absl::StrCat("checkpoint: integer list \"", name, "\" holds ",
                                                   value, ", beyond int64"));
  }
  return static_cast<int64_t>(value);
}

void Restore(const std::string& step_path, CheckpointState& state) {
  std::unique_ptr<checkpoint::StepReader> reader = Unwrap(checkpoint::StepReader::Open(step_path));
  const io::Manifest& manifest = reader->manifest();
  // Everything the state asks for must be there before anything changes.
  for (const CheckpointState::Integers& entry : state.integers) {
    if (!manifest.integers.contains(entry.name)) {
      throw Error(ErrorCode::kNotFound,
                  absl::StrCat("checkpoint step ", manifest.step, " (", step_path,
                               ") has no integer list \"", entry.name, "\""));
    }
  }
  auto rng = manifest.integers.find(kRngState);
  if (state.rng && rng != manifest.integers.end() && rng->second.size() != 2) {
    throw Error(ErrorCode::kDataLoss, absl::StrCat(step_path, ": the generator state is damaged"));
  }
  ThrowIfError(checkpoint::RestoreTensors(*reader, NamedTensors(state)));
  for (const CheckpointState::Integers& entry : state.integers) {
    std::vector<int64_t> values;
    for (uint64_t value : manifest.integers.at(entry.name)) {
      values.push_back(ToSigned(entry.name, value));
    }
    entry.set(values);
  }
  auto position = manifest.integers.find(kDataPosition);
  if (position != manifest.integers.end() && position->second.size() == 1) {
    state.data_position = ToSigned("data_position", position->second[0]);
  }
  if (state.rng && rng != manifest.integers.end()) {
    set_rng_state(RngState{rng->second[0], rng->second[1]});
  }
  state.metadata = manifest.metadata;
}

std::string MeshText(const io::ManifestTensor& tensor) {
  if (tensor.mesh_shape.empty()) return "";
  absl::StatusOr<spmd::Mesh> mesh =
      spmd::Mesh::Create(tensor.mesh_shape, tensor.mesh_devices, tensor.mesh_axes);
  if (!mesh.ok()) return absl::StrCat("[", absl::StrJoin(tensor.mesh_shape, "x"), "] (invalid)");
  return mesh->ToString();
}

checkpoint::ManagerOptions ToManagerOptions(const CheckpointOptions& options) {
  checkpoint::ManagerOptions result;
  result.save_interval = options.save_interval;
  result.max_to_keep = options.max_to_keep;
  result.keep_period = options.keep_period;
  result.read_only = options.read_only;
  result.save_on_preemption = options.save_on_preemption;
  return result;
}

}  // namespace

void save_checkpoint(const std::string& directory, int64_t step, const CheckpointState& state) {
  checkpoint::Snapshot snapshot = Unwrap(Stage(state));
  ThrowIfError(checkpoint::WriteStep(directory, step, snapshot));
}

void restore_checkpoint(const std::string& step_path, CheckpointState& state) {
  Restore(step_path, state);
}

CheckpointInfo checkpoint_info(const std::string& step_path) {
  std::unique_ptr<checkpoint::StepReader> reader = Unwrap(checkpoint::StepReader::Open(step_path));
  const io::Manifest& manifest = reader->manifest();
  CheckpointInfo info;
  info.step = manifest.step;
  info.path = reader->path();
  info.created = manifest.created;
  info.library_version = manifest.library_version;
  info.metadata = manifest.metadata;
  for (const io::ManifestTensor& tensor : manifest.tensors) {
    CheckpointTensorInfo entry;
    entry.name = tensor.name;
    entry.dtype = lazy::FromIrType(tensor.dtype);
    entry.shape = tensor.shape;
    entry.mesh = MeshText(tensor);
    entry.sharding = tensor.sharding;
    entry.sharding_axes = tensor.sharding_axes;
    entry.shard_count = static_cast<int64_t>(tensor.shards.size());
    for (const io::ManifestShard& shard : tensor.shards) {
      entry.bytes += static_cast<int64_t>(shard.length);
    }
    info.bytes += entry.bytes;
    info.tensors.push_back(std::move(entry));
  }
  return info;
}

std::vector<std::string> verify_checkpoint(const std::string& step_path) {
  return Unwrap(checkpoint::StepReader::Open(step_path))->Verify();
}

void export_safetensors(const std::string& step_path, const std::string& output_path) {
  std::unique_ptr<checkpoint::StepReader> reader = Unwrap(checkpoint::StepReader::Open(step_path));
  ThrowIfError(checkpoint::ExportSafetensors(*reader, output_path));
}

CheckpointManager::CheckpointManager(std::string directory, CheckpointOptions options)
    : manager_(Unwrap(checkpoint::Manager::Open(directory, ToManagerOptions(options)))) {}

CheckpointManager::~CheckpointManager() = default;

bool CheckpointManager::should_save(int64_t step) const { return manager_->ShouldSave(step); }

bool CheckpointManager::save(int64_t step, const CheckpointState& state, bool force) {
  return Unwrap(manager_->Save(
      step, [&] { return Stage(state); }, force, /*async=*/false));
}

bool CheckpointManager::save_async(int64_t step, const CheckpointState& state, bool force) {
  return Unwrap(manager_->Save(
      step, [&] { return Stage(state); }, force, /*async=*/true));
}

void CheckpointManager::wait_until_finished() { ThrowIfError(manager_->WaitUntilFinished()); }

std::vector<int64_t> CheckpointManager::all_steps() const { return Unwrap(manager_->AllSteps()); }

std::optional<int64_t> CheckpointManager::latest_step() const {
  std::vector<int64_t> steps = all_steps();
  if (steps.empty()) return std::nullopt;
  return steps.back();
}

void CheckpointManager::restore(int64_t step, CheckpointState& state) const {
  Restore(step_path(step), state);
}

std::string CheckpointManager::step_path(int64_t step) const {
  return checkpoint::StepPath(manager_->directory(), step);
}

const std::string& CheckpointManager::directory() const { return manager_->directory(); }

bool CheckpointManager::preemption_requested() {
  return checkpoint::Manager::PreemptionRequested();
}

}  // namespace vkspmd
