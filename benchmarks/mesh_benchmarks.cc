// A data-parallel training step of a 2-layer MLP on a mesh of devices: the forward module, its
// gradients from autodiff, the batch split over the devices with a partition spec, partitioned by
// the GSPMD partitioner and run as an exec::MeshProgram. Reports the step's wall time split into
// the kernels' GPU time, the collectives (waiting and moving data through the host) and the rest
// (uploads, downloads, submission), as seen from device 0.
#include <benchmark/benchmark.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "src/autodiff/gradients.h"
#include "src/exec/mesh_program.h"
#include "src/ir/parser.h"
#include "src/runtime/device_set.h"
#include "src/spmd/partition_spec.h"

namespace vkspmd {
namespace {

std::string MlpLoss(int64_t batch, int64_t in, int64_t hidden, int64_t out) {
  auto shape = [](int64_t a, int64_t b) { return absl::StrCat("f32[", a, ",", b, "]"); };
  return absl::StrCat(
      "HloModule mlp\n%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n",
      "  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(%a, %b)\n}\n",
      "ENTRY %main (x: ", shape(batch, in), ", w1: ", shape(in, hidden),
      ", w2: ", shape(hidden, out), ") -> f32[] {\n", "  %x = ", shape(batch, in),
      " parameter(0)\n  %w1 = ", shape(in, hidden), " parameter(1)\n  %w2 = ", shape(hidden, out),
      " parameter(2)\n", "  %h = ", shape(batch, hidden),
      " dot(%x, %w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  %zero = f32[] "
      "constant(0)\n  %zeros = ",
      shape(batch, hidden), " broadcast(%zero), dimensions={}\n  %r = ", shape(batch, hidden),
      " maximum(%h, %zeros)\n  %y = ", shape(batch, out),
      " dot(%r, %w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  %sq = ",
      shape(batch, out), " multiply(%y, %y)\n",
      "  ROOT %loss = f32[] reduce(%sq, %zero), dimensions={0,1}, to_apply=%add\n}\n");
}

void BM_DataParallelMlpStep(benchmark::State& state) {
  const int devices = static_cast<int>(state.range(0));
  absl::StatusOr<std::unique_ptr<ir::Module>> forward =
      ir::ParseAndVerifyModule(MlpLoss(256, 512, 1024, 256));
  if (!forward.ok()) return state.SkipWithError(std::string(forward.status().message()).c_str());
  absl::StatusOr<std::unique_ptr<ir::Module>> step =
      autodiff::Gradients(**forward, std::nullopt, {1, 2});
  if (!step.ok()) return state.SkipWithError(std::string(step.status().message()).c_str());
  absl::StatusOr<spmd::Mesh> mesh = spmd::Mesh::Create({devices});
  ir::Instruction* x = (*step)->entry()->parameter(0);
  absl::StatusOr<ir::Sharding> batch_split =
      spmd::PartitionSpecToSharding(*spmd::PartitionSpec::Parse("(0, None)"), *mesh, 2);
  if (!batch_split.ok()) return state.SkipWithError("cannot build the batch sharding");
  x->set_sharding(*batch_split);
  absl::StatusOr<runtime::RuntimeConfig> config = runtime::RuntimeConfig::FromEnvironment();
  if (!config.ok()) return state.SkipWithError("bad environment");
  config->mesh_device_count = devices;
  config->validation = false;
  absl::StatusOr<std::unique_ptr<runtime::DeviceSet>> set = runtime::DeviceSet::Create(*config);
  if (!set.ok()) return state.SkipWithError(std::string(set.status().message()).c_str());
  std::vector<runtime::MeshDevice*> mesh_devices;
  for (int d = 0; d < devices; ++d) mesh_devices.push_back(&(*set)->device(d));
  // After the devices, so its executables are destroyed before them.
  absl::StatusOr<std::unique_ptr<exec::MeshProgram>> program =
      exec::MeshProgram::Partition(**step, *mesh);
  if (!program.ok()) return state.SkipWithError(std::string(program.status().message()).c_str());
  if (absl::Status compiled = (*program)->Compile(mesh_devices, {.timestamps = true});
      !compiled.ok()) {
    return state.SkipWithError(std::string(compiled.message()).c_str());
  }
  std::vector<ir::Literal> full_arguments;
  for (int64_t p = 0; p < (*step)->entry()->parameter_count(); ++p) {
    ir::Literal full((*step)->entry()->parameter(p)->shape());
    for (int64_t i = 0; i < full.ElementCount(); ++i) full.Set<float>(i, 0.001f * (i % 97));
    full_arguments.push_back(std::move(full));
  }
  absl::StatusOr<std::vector<std::vector<ir::Literal>>> arguments =
      (*program)->ShardArguments(full_arguments);
  if (!arguments.ok()) {
    return state.SkipWithError(std::string(arguments.status().message()).c_str());
  }
  exec::MeshExecutable& executable = (*program)->executable();
  double kernels = 0, collectives = 0, total = 0;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<ir::Literal>> results = (*program)->RunShards(*arguments);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!results.ok()) return state.SkipWithError(std::string(results.status().message()).c_str());
    state.SetIterationTime(seconds);
    total += seconds;
    collectives += executable.executable(0).last_collective_seconds();
    absl::StatusOr<std::vector<runtime::StepTiming>> timings = executable.executable(0).Timings();
    if (!timings.ok()) return state.SkipWithError(std::string(timings.status().message()).c_str());
    for (const runtime::StepTiming& timing : *timings) kernels += timing.gpu_nanoseconds / 1e9;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["kernels_ms"] = 1e3 * kernels / n;
  state.counters["collectives_ms"] = 1e3 * collectives / n;
  state.counters["other_ms"] = 1e3 * (total - kernels - collectives) / n;
  state.counters["collectives"] = static_cast<double>((*program)->collective_count());
  state.counters["bytes_per_device"] = static_cast<double>((*program)->bytes_per_device());
}

BENCHMARK(BM_DataParallelMlpStep)
    ->Arg(1)
    ->Arg(2)
    ->Arg(4)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace vkspmd

BENCHMARK_MAIN();
