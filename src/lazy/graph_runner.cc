// Compiling (through the cache), feeding and running lazy graphs.
#include "src/lazy/graph_runner.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/debug/metrics.h"
#include "src/debug/trace_writer.h"
#include "src/ir/parser.h"
#include "src/lazy/distributed.h"
#include "src/lazy/value_transfer.h"

namespace vkspmd::lazy {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

void GraphRunner::Run(GraphTask& task, DevicePool& pool) {
  absl::Status status = task.compile_status.ok() ? RunOrFail(task, pool) : task.compile_status;
  if (status.ok()) return;
  absl::Status failure(status.code(),
                       absl::StrCat("the graph ", task.hash, " (", task.placement->key,
                                    ") failed: ", status.message()));
  for (const std::shared_ptr<DeviceValue>& output : task.outputs) output->SetError(failure);
  for (GraphInput& input : task.inputs) {
    if (input.host.has_value()) input.value->SetError(failure);
  }
}

absl::StatusOr<GraphRunner::Compiled> GraphRunner::Compile(GraphTask& task, DevicePool& pool) {
  // Opening the devices first: a reopen changes the generation the executable belongs to.
  VKSPMD_ASSIGN_OR_RETURN(std::vector<runtime::MeshDevice*> devices,
                          pool.DevicesFor(*task.placement));
  if (task.module == nullptr) {
    // The executable was dropped since (devices reopened): parse the lowering kept as text.
    if (task.module_text == nullptr) return absl::InternalError("a graph without its module");
    VKSPMD_ASSIGN_OR_RETURN(task.module, ir::ParseModule(*task.module_text));
  }
  Compiled compiled;
  compiled.generation = pool.generation();
  const spmd::Mesh& mesh = task.placement->local_mesh;
  if (task.placement->is_mesh) {
    VKSPMD_ASSIGN_OR_RETURN(compiled.program, exec::MeshProgram::Partition(*task.module, mesh));
    compiled.collective_bytes = compiled.program->bytes_per_device() * mesh.device_count();
  } else {
    compiled.program = exec::MeshProgram::FromPerDeviceModule(std::move(task.module), mesh);
  }
  exec::MeshProgram::Options options;
  if (const DistributedState* job = Distributed(); job != nullptr && task.placement->is_mesh) {
    // The job's world numbers global devices 0..G-1, as the placement's local mesh then does.
    if (static_cast<int64_t>(task.placement->devices.size()) != job->global_devices) {
      return absl::InvalidArgumentError(
          absl::StrCat("in a job of ", job->process_count, " processes a mesh must span all ",
                       job->global_devices, " devices of the job; mesh ",
                       task.placement->mesh.ToString(), " has ", task.placement->devices.size()));
    }
    options.world = job->world;
  }
  VKSPMD_RETURN_IF_ERROR(compiled.program->Compile(std::move(devices), std::move(options)));
  return compiled;
}

absl::Status GraphRunner::Prepare(GraphTask& task, DevicePool& pool) {
  return FindOrCompile(task, pool, /*ahead=*/true).status();
}

absl::StatusOr<GraphRunner::Compiled*> GraphRunner::FindOrCompile(GraphTask& task, DevicePool& pool,
                                                                  bool ahead) {
  // The executable depends on input_output_alias (the structural hash covers it too).
  std::string aliases;
  for (const ir::InputOutputAlias& alias : task.aliases) {
    absl::StrAppend(&aliases, " alias ", absl::StrJoin(alias.output_index, ","), "<-",
                    alias.parameter_number);
  }
  const std::string key = absl::StrCat(task.hash, aliases, " on ", task.placement->key);
  // Executables of devices that were closed since (to open more) are useless.
  if (auto found = cache_.find(key);
      found != cache_.end() && found->second.generation == pool.generation()) {
    if (!ahead && !task.compiled_ahead) debug::RecordCacheHit();
    return &found->second;
  }
  debug::ScopedTraceSpan span("compile graph");
  span.AddArg("graph", task.hash);
  auto start = std::chrono::steady_clock::now();
  VKSPMD_ASSIGN_OR_RETURN(Compiled compiled, Compile(task, pool));
  const double seconds = SecondsSince(start);
  debug::RecordCompile(seconds);
  debug::GraphAnalysis analysis = task.analysis;
  analysis.event = "compilation";
  analysis.detail = fmt::format("compiled in {:.3f} s (not in the graph cache)", seconds);
  debug::EmitGraphAnalysis(analysis);
  Compiled& stored = cache_[key];
  stored = std::move(compiled);
  task.compiled_ahead = ahead;
  return &stored;
}

absl::Status GraphRunner::RunOrFail(GraphTask& task, DevicePool& pool) {
  debug::ScopedTraceSpan span("launch graph");
  span.AddArg("graph", task.hash);
  VKSPMD_ASSIGN_OR_RETURN(Compiled * compiled, FindOrCompile(task, pool));
  exec::MeshProgram& program = *compiled->program;
  for (size_t k = 0; k < task.outputs.size(); ++k) {
    task.outputs[k]->SetSharding(program.result_shardings()[k]);
  }
  const Placement& placement = *task.placement;
  // A donated argument is passed with its own buffer (or the resharded copy made for the run);
  // the others are only read by the run.
  std::vector<exec::ShardedBuffer*> arguments;
  std::vector<bool> donate;
  std::vector<std::unique_ptr<exec::ShardedBuffer>> copies;
  int64_t donated_bytes = 0;
  for (size_t p = 0; p < task.inputs.size(); ++p) {
    GraphInput& input = task.inputs[p];
    const spmd::AxisSharding& sharding = program.parameter_shardings()[p];
    exec::ShardedBuffer* argument = nullptr;
    if (input.host.has_value()) {
      VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<exec::ShardedBuffer> buffer,
                              UploadValue(*input.host, placement, sharding, pool));
      argument = buffer.get();
      input.value->SetBuffer(std::move(buffer));
    } else {
      VKSPMD_ASSIGN_OR_RETURN(const exec::ShardedBuffer* buffer,
                              BufferAs(*input.value, placement, sharding, pool, copies));
      if (input.donate && buffer != nullptr && (copies.empty() || copies.back().get() != buffer)) {
        VKSPMD_ASSIGN_OR_RETURN(argument, input.value->WaitBufferToDonate());
      } else {
        argument = const_cast<exec::ShardedBuffer*>(buffer);  // Not donated: only read.
      }
    }
    const bool aliased =
        input.donate && program.aliased_parameters().count(static_cast<int64_t>(p)) > 0;
    if (aliased) {
      donated_bytes +=
          spmd::ByteSize(argument->shard_shape()) * static_cast<int64_t>(argument->shard_count());
    }
    arguments.push_back(argument);
    donate.push_back(aliased);
  }
  auto start = std::chrono::steady_clock::now();
  debug::ScopedTraceSpan run_span("run on devices");
  VKSPMD_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<exec::ShardedBuffer>> results,
                          program.Run(arguments, donate));
  debug::RecordDonation(std::count(donate.begin(), donate.end(), true), donated_bytes);
  const double seconds = SecondsSince(start);
  double collective_seconds = 0;
  exec::MeshExecutable& executable = program.executable();
  // This process's devices (in a job of several, the others run elsewhere).
  for (size_t d : executable.local_devices()) {
    collective_seconds += executable.executable(d).last_collective_seconds();
  }
  collective_seconds /= std::max<size_t>(executable.local_devices().size(), 1);
  debug::RecordExecute(seconds, compiled->collective_bytes, collective_seconds);
  for (size_t k = 0; k < results.size(); ++k) task.outputs[k]->SetBuffer(std::move(results[k]));
  debug::GraphAnalysis analysis = task.analysis;
  analysis.event = "execution";
  analysis.detail = fmt::format("ran in {:.3f} ms", seconds * 1e3);
  debug::EmitGraphAnalysis(analysis);
  return absl::OkStatus();
}

}  // namespace vkspmd::lazy
