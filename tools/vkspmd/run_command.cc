// `vkspmd run FILE.hlo [--input NAME=FILE.npy ...] [--random-inputs SEED] [--device K]
// [--repeat N] [--compare [--rtol R] [--atol A]] [--output-dir D] [--dump-kernels DIR]
// [--mesh 2x2 | --devices N | --as-partitioned]`: compiles the module, runs it on one device, on
// the devices of the mesh it is partitioned over (GSPMD modules: --mesh, or the module's own
// device count) or as a per-device program, and prints the outputs, the kernel count, the compile
// time and the per-run time (median of N runs); --compare also runs the CPU reference, reports
// the largest error and exits 6 beyond the tolerance; --output-dir writes the outputs as .npy.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/exec/executable.h"
#include "src/exec/loop_program.h"
#include "src/exec/mesh_program.h"
#include "src/exec/program_dump.h"
#include "src/interp/evaluator.h"
#include "src/interp/result_comparison.h"
#include "src/runtime/device_set.h"
#include "tools/vkspmd/command.h"
#include "tools/vkspmd/program_io.h"

namespace vkspmd::cli {
namespace {

struct RunOptions {
  std::string path;
  std::vector<std::string> inputs;
  std::optional<uint64_t> random_seed;
  int device = 0;
  int repeat = 1;
  bool compare = false;
  double rtol = 1e-4;  // --compare's tolerance: |got - ref| <= atol + rtol * |ref|.
  double atol = 1e-5;
  std::string dump_kernels;        // Directory for the generated GLSL, one file per kernel.
  std::string mesh;                // "2x2[:x,y]": partition over this mesh and run on its devices.
  int devices = 0;                 // N: the same over a 1-D mesh of N devices.
  std::vector<std::string> specs;  // NAME=SPEC shardings to annotate before partitioning.
  bool as_partitioned = false;     // Run the module as a per-device program.
  std::string output_dir;          // Write the outputs here as .npy, as `eval` does.
};

int Fail(int code, absl::string_view message) {
  fmt::print(stderr, "vkspmd run: {}\n", message);
  return code;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

// Opens at least `count` mesh devices. On failure prints why and sets `exit_code`.
std::unique_ptr<runtime::DeviceSet> OpenDevices(int count, int& exit_code) {
  absl::StatusOr<runtime::RuntimeConfig> config = runtime::RuntimeConfig::FromEnvironment();
  if (!config.ok()) {
    exit_code = Fail(kExitUsageError, config.status().message());
    return nullptr;
  }
  config->mesh_device_count = std::max(config->mesh_device_count, count);
  absl::StatusOr<std::unique_ptr<runtime::DeviceSet>> devices = runtime::DeviceSet::Create(*config);
  if (!devices.ok()) {
    exit_code = Fail(absl::IsNotFound(devices.status()) ? kExitNoDevice : kExitRuntimeError,
                     devices.status().message());
    return nullptr;
  }
  return std::move(*devices);
}

// A mesh program compiled on the first mesh devices of `devices` and run `repeat` times through
// the host (each run uploads every device's arguments and downloads its results): the last
// run's per-device results and the timings.
struct MeshRun {
  std::vector<ir::Literal> results;
  double compile_seconds = 0;  // From `compile_start` (partitioning included when it is earlier).
  double median_wall_ms = 0;
};

absl::StatusOr<MeshRun> RunOnDevices(exec::MeshProgram& program, runtime::DeviceSet& devices,
                                     const std::vector<std::vector<ir::Literal>>& arguments,
                                     int repeat,
                                     std::chrono::steady_clock::time_point compile_start) {
  std::vector<runtime::MeshDevice*> mesh_devices;
  for (int64_t d = 0; d < program.mesh().device_count(); ++d) {
    mesh_devices.push_back(&devices.device(static_cast<int>(d)));
  }
  MeshRun run;
  VKSPMD_RETURN_IF_ERROR(program.Compile(mesh_devices));
  run.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - compile_start).count();
  std::vector<double> wall_ms;
  for (int k = 0; k < repeat; ++k) {
    auto start = std::chrono::steady_clock::now();
    VKSPMD_ASSIGN_OR_RETURN(run.results, program.RunShards(arguments));
    wall_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  run.median_wall_ms = Median(wall_ms);
  return run;
}

// Prints the largest errors of `results` against the CPU reference's values; the exit code:
// kExitMismatch when any element is outside --rtol/--atol, with a line per output beyond naming
// it (as --output-dir names its file), its largest errors and where they are.
int ReportComparison(const std::vector<ir::Literal>& results,
                     const absl::StatusOr<std::vector<ir::Literal>>& reference,
                     const RunOptions& options) {
  if (!reference.ok()) return Fail(kExitRuntimeError, reference.status().message());
  interp::Comparison all;
  std::vector<std::string> beyond;
  for (size_t k = 0; k < results.size(); ++k) {
    const std::string label = results.size() == 1 ? "output" : fmt::format("device{}.output", k);
    interp::Comparison one;
    interp::Compare(results[k], (*reference)[k], options.rtol, options.atol, label, one);
    all.elements += one.elements;
    all.beyond += one.beyond;
    all.max_absolute = std::max(all.max_absolute, one.max_absolute);
    all.max_relative = std::max(all.max_relative, one.max_relative);
    if (one.beyond == 0) continue;
    beyond.push_back(fmt::format(
        "{} differs from the CPU reference: max abs error {:.3g} (at {}), max rel error {:.3g}; "
        "{} of {} elements beyond rtol {:g}, atol {:g}, the first at {}",
        label, one.max_absolute, one.largest, one.max_relative, one.beyond, one.elements,
        options.rtol, options.atol, one.first_beyond));
  }
  fmt::print(
      "compare: max abs error {:.3g}, max rel error {:.3g} (against max(|ref|, 1e-3 max|ref|)) "
      "against the CPU reference; {}\n",
      all.max_absolute, all.max_relative,
      all.beyond == 0 ? fmt::format("all {} elements within rtol {:g}, atol {:g}", all.elements,
                                    options.rtol, options.atol)
                      : fmt::format("{} of {} elements beyond rtol {:g}, atol {:g}", all.beyond,
                                    all.elements, options.rtol, options.atol));
  for (const std::string& line : beyond) Fail(kExitMismatch, line);
  return beyond.empty() ? kExitOk : kExitMismatch;
}

// Prints (and with --output-dir writes) the results; then the comparison when asked for.
int Finish(const RunOptions& options, const std::vector<ir::Literal>& results,
           const std::function<absl::StatusOr<std::vector<ir::Literal>>()>& reference) {
  if (absl::Status reported = ReportOutputs(results, options.output_dir); !reported.ok()) {
    return Fail(kExitRuntimeError, reported.message());
  }
  if (!options.compare) return kExitOk;
  return ReportComparison(results, reference(), options);
}

// A per-device program with loops of unknown trip count: each piece as it is on every device,
// the host reading the conditions back (every device must agree on them).
int RunPerDeviceLoops(const RunOptions& options, const ir::Module& module, const spmd::Mesh& mesh,
                      runtime::DeviceSet& devices,
                      const std::vector<std::vector<ir::Literal>>& arguments) {
  auto compile_start = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<exec::LoopProgram>> program =
      exec::LoopProgram::FromPerDeviceModule(module, mesh);
  if (!program.ok()) return Fail(kExitRuntimeError, program.status().message());
  std::vector<runtime::MeshDevice*> mesh_devices;
  for (int64_t d = 0; d < mesh.device_count(); ++d) {
    mesh_devices.push_back(&devices.device(static_cast<int>(d)));
  }
  if (absl::Status compiled = (*program)->Compile(mesh_devices); !compiled.ok()) {
    return Fail(ExitCodeFor(compiled.code()), compiled.message());
  }
  const double compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - compile_start).count();
  std::vector<double> wall_ms;
  absl::StatusOr<std::vector<ir::Literal>> results = absl::InternalError("not run");
  for (int k = 0; k < options.repeat; ++k) {
    auto start = std::chrono::steady_clock::now();
    results = (*program)->RunPerDevice(arguments);
    if (!results.ok())
      return Fail(ExitCodeFor(results.status().code()), results.status().message());
    wall_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  fmt::print(stderr,
             "{}: per-device program on {} devices; {} loop(s){} driven from the host; {} "
             "program(s); {} iteration(s) in the last run; compiled in {:.3f} s; run (median of "
             "{}): {:.3f} ms wall\n",
             options.path, mesh.device_count(), (*program)->loop_count(),
             (*program)->conditional_count() == 0
                 ? ""
                 : fmt::format(" and {} conditional(s)", (*program)->conditional_count()),
             (*program)->program_count(), (*program)->last_iterations(), compile_seconds,
             options.repeat, Median(wall_ms));
  return Finish(options, *results, [&] { return interp::EvaluateOnDevices(module, arguments); });
}

// A per-device program (num_partitions or replica_count above 1 and no tiled sharding, as the
// partitioner or JAX writes them) runs as it is on that many devices, each with its own arguments
// (--random-inputs draws device d's from SEED + d; --input files go to every device).
int RunPerDeviceProgram(const RunOptions& options, std::unique_ptr<ir::Module> owned, int64_t n) {
  const ir::Module& module = *owned;
  absl::StatusOr<std::vector<std::vector<ir::Literal>>> arguments =
      BuildDeviceArguments(*module.entry(), options.inputs, options.random_seed, n);
  if (!arguments.ok()) {
    return Fail(absl::IsInvalidArgument(arguments.status()) ? kExitUsageError : kExitRuntimeError,
                arguments.status().message());
  }
  int exit_code = kExitOk;
  std::unique_ptr<runtime::DeviceSet> devices = OpenDevices(static_cast<int>(n), exit_code);
  if (devices == nullptr) return exit_code;
  absl::StatusOr<spmd::Mesh> mesh = spmd::Mesh::Create({n});
  if (!mesh.ok()) return Fail(kExitUsageError, mesh.status().message());
  absl::StatusOr<bool> host_loops = exec::LoopProgram::NeedsHostLoop(module);
  if (!host_loops.ok()) return Fail(kExitRuntimeError, host_loops.status().message());
  if (*host_loops) return RunPerDeviceLoops(options, module, *mesh, *devices, *arguments);
  std::unique_ptr<exec::MeshProgram> program =
      exec::MeshProgram::FromPerDeviceModule(std::move(owned), *mesh);
  absl::StatusOr<MeshRun> run = RunOnDevices(*program, *devices, *arguments, options.repeat,
                                             std::chrono::steady_clock::now());
  if (!run.ok()) return Fail(ExitCodeFor(run.status().code()), run.status().message());
  fmt::print(stderr,
             "{}: per-device program on {} devices; {} kernel(s) per device; compiled in {:.3f} "
             "s; run (median of {}): {:.3f} ms wall\n",
             options.path, n, program->executable().executable(0).kernel_count(),
             run->compile_seconds, options.repeat, run->median_wall_ms);
  return Finish(options, run->results,
                [&] { return interp::EvaluateOnDevices(module, *arguments); });
}

// The module partitioned (GSPMD) over the first of `meshes` it can be partitioned over, its
// per-device program on each mesh device with host-staged collectives, the arguments sharded and
// the results assembled; `read` (how the module was read) names the mesh in the report.
int RunOnMesh(const RunOptions& options, ir::Module& module, const ModuleRead& read,
              const std::vector<spmd::Mesh>& meshes, const std::vector<ir::Literal>& arguments) {
  // Declared before the program, so the program's executables are destroyed before their devices.
  std::unique_ptr<runtime::DeviceSet> devices;
  auto compile_start = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<exec::MeshProgram>> program = absl::InternalError("no mesh");
  for (const spmd::Mesh& mesh : meshes) {
    if (absl::Status applied = ApplySpecs(module, options.specs, mesh); !applied.ok()) {
      return Fail(kExitUsageError, applied.message());
    }
    program = exec::MeshProgram::Partition(module, mesh);
    if (program.ok()) break;
  }
  if (!program.ok()) {
    return Fail(kExitRuntimeError, LastMeshError(program.status(), meshes.size()));
  }
  const spmd::Mesh& mesh = (*program)->mesh();
  absl::StatusOr<std::vector<std::vector<ir::Literal>>> per_device =
      (*program)->ShardArguments(arguments);
  if (!per_device.ok()) return Fail(kExitRuntimeError, per_device.status().message());
  const int64_t n = mesh.device_count();
  int exit_code = kExitOk;
  devices = OpenDevices(static_cast<int>(n), exit_code);
  if (devices == nullptr) return exit_code;
  absl::StatusOr<MeshRun> run =
      RunOnDevices(**program, *devices, *per_device, options.repeat, compile_start);
  if (!run.ok()) return Fail(ExitCodeFor(run.status().code()), run.status().message());
  absl::StatusOr<ir::Literal> output = (*program)->Assemble(run->results);
  if (!output.ok()) return Fail(kExitRuntimeError, output.status().message());
  const std::string note = MeshViewNote(mesh, read);
  fmt::print(stderr,
             "{}: partitioned over mesh {} ({}{} collective(s), {} bytes sent per device); {} "
             "kernel(s) per device; compiled in {:.3f} s; run (median of {}): {:.3f} ms wall\n",
             options.path, mesh.ToString(), note.empty() ? "" : note + "; ",
             (*program)->collective_count(), (*program)->bytes_per_device(),
             (*program)->executable().executable(0).kernel_count(), run->compile_seconds,
             options.repeat, run->median_wall_ms);
  std::vector<ir::Literal> results;
  results.push_back(std::move(*output));
  return Finish(options, results, [&] { return ReferenceResults(module, arguments); });
}

// A module with loops of unknown trip count (exec::LoopProgram): every piece around and inside
// the loops partitioned over the first of `meshes` that takes them all (one device: a mesh of
// one, the device --device names), the host reading each condition back.
int RunHostLoops(const RunOptions& options, ir::Module& module, const ModuleRead& read,
                 const std::vector<spmd::Mesh>& meshes, const std::vector<ir::Literal>& arguments) {
  std::unique_ptr<runtime::DeviceSet> devices;  // Outlives the program's executables.
  auto compile_start = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<exec::LoopProgram>> program = absl::InternalError("no mesh");
  for (const spmd::Mesh& mesh : meshes) {
    if (absl::Status applied = ApplySpecs(module, options.specs, mesh); !applied.ok()) {
      return Fail(kExitUsageError, applied.message());
    }
    program = exec::LoopProgram::Partition(module, mesh);
    if (program.ok()) break;
  }
  if (!program.ok()) return Fail(kExitRuntimeError, LastMeshError(program.status(), meshes.size()));
  const int64_t n = (*program)->mesh().device_count();
  const bool one_device = n == 1;
  int exit_code = kExitOk;
  devices = OpenDevices(one_device ? options.device + 1 : static_cast<int>(n), exit_code);
  if (devices == nullptr) return exit_code;
  std::vector<runtime::MeshDevice*> mesh_devices;
  for (int64_t d = 0; d < n; ++d) {
    mesh_devices.push_back(&devices->device(one_device ? options.device : static_cast<int>(d)));
  }
  if (absl::Status compiled = (*program)->Compile(mesh_devices); !compiled.ok()) {
    return Fail(ExitCodeFor(compiled.code()), compiled.message());
  }
  const double compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - compile_start).count();
  std::vector<double> wall_ms;
  absl::StatusOr<ir::Literal> result = absl::InternalError("not run");
  for (int k = 0; k < options.repeat; ++k) {
    auto start = std::chrono::steady_clock::now();
    result = (*program)->Run(arguments);
    if (!result.ok()) return Fail(ExitCodeFor(result.status().code()), result.status().message());
    wall_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  const int64_t conditionals = (*program)->conditional_count();
  const std::string note = one_device ? "" : MeshViewNote((*program)->mesh(), read);
  fmt::print(stderr,
             "{}: {} loop(s){} driven from the host over {}; {} program(s), {} collective(s); {} "
             "iteration(s) in the last run; compiled in {:.3f} s; run (median of {}): {:.3f} ms "
             "wall\n",
             options.path, (*program)->loop_count(),
             conditionals == 0 ? "" : fmt::format(" and {} conditional(s)", conditionals),
             one_device ? "one device"
                        : fmt::format("mesh {}{}", (*program)->mesh().ToString(),
                                      note.empty() ? "" : " (" + note + ")"),
             (*program)->program_count(), (*program)->collective_count(),
             (*program)->last_iterations(), compile_seconds, options.repeat, Median(wall_ms));
  std::vector<ir::Literal> results;
  results.push_back(std::move(*result));
  return Finish(options, results, [&] { return ReferenceResults(module, arguments); });
}

int RunRun(const RunOptions& options) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ReadModuleFile(options.path);
  if (!module.ok()) {
    return Fail(IsUnusableFile(module.status()) ? kExitUsageError : kExitRuntimeError,
                module.status().message());
  }
  absl::StatusOr<ModuleRead> read =
      ReadModuleAs(**module, MeshChoice{.mesh = options.mesh,
                                        .devices = options.devices,
                                        .as_partitioned = options.as_partitioned,
                                        .has_specs = !options.specs.empty()});
  if (!read.ok()) return Fail(kExitUsageError, read.status().message());
  if (!read->summary.empty()) fmt::print(stderr, "{}: {}\n", options.path, read->summary);
  if (read->reading == ModuleReading::kPerDevice) {
    if (!options.specs.empty()) {
      return Fail(kExitUsageError,
                  "--spec shards a module to partition; --as-partitioned says "
                  "there is nothing to partition");
    }
    return RunPerDeviceProgram(options, std::move(*module), read->devices);
  }
  absl::StatusOr<std::vector<ir::Literal>> arguments =
      BuildArguments(*(*module)->entry(), options.inputs, options.random_seed);
  if (!arguments.ok()) {
    return Fail(absl::IsInvalidArgument(arguments.status()) ? kExitUsageError : kExitRuntimeError,
                arguments.status().message());
  }
  absl::StatusOr<bool> host_loops = exec::LoopProgram::NeedsHostLoop(**module);
  if (!host_loops.ok()) return Fail(kExitRuntimeError, host_loops.status().message());
  if (*host_loops) {
    std::vector<spmd::Mesh> meshes = read->meshes;
    if (read->reading != ModuleReading::kGspmd) meshes = {*spmd::Mesh::Create({1})};
    return RunHostLoops(options, **module, *read, meshes, *arguments);
  }
  if (read->reading == ModuleReading::kGspmd) {
    return RunOnMesh(options, **module, *read, read->meshes, *arguments);
  }
  int exit_code = kExitOk;
  std::unique_ptr<runtime::DeviceSet> devices = OpenDevices(options.device + 1, exit_code);
  if (devices == nullptr) return exit_code;
  runtime::MeshDevice& device = devices->device(options.device);

  auto compile_start = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<exec::Executable>> executable =
      exec::Executable::Compile(**module, device, /*timestamps=*/true);
  if (!executable.ok()) return Fail(kExitRuntimeError, executable.status().message());
  double compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - compile_start).count();
  if (!options.dump_kernels.empty()) {
    absl::Status dumped = exec::DumpKernels((*executable)->plan(), options.dump_kernels);
    if (!dumped.ok()) return Fail(kExitRuntimeError, dumped.message());
  }

  std::vector<double> wall_ms, gpu_ms;
  absl::StatusOr<ir::Literal> result = absl::InternalError("not run");
  for (int run = 0; run < options.repeat; ++run) {
    auto start = std::chrono::steady_clock::now();
    result = (*executable)->Run(*arguments);
    if (!result.ok()) return Fail(ExitCodeFor(result.status().code()), result.status().message());
    wall_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    absl::StatusOr<std::vector<runtime::StepTiming>> timings = (*executable)->Timings();
    if (timings.ok()) {
      double total = 0;
      for (const runtime::StepTiming& timing : *timings) total += timing.gpu_nanoseconds;
      gpu_ms.push_back(total / 1e6);
    }
  }
  fmt::print(stderr,
             "{}: {} kernel(s) on {}; compiled in {:.3f} s; run (median of {}): {:.3f} ms "
             "wall, {:.3f} ms GPU\n",
             options.path, (*executable)->kernel_count(), device.label(), compile_seconds,
             options.repeat, Median(wall_ms), Median(gpu_ms));
  std::vector<ir::Literal> results;
  results.push_back(std::move(*result));
  return Finish(options, results, [&] { return ReferenceResults(**module, *arguments); });
}

}  // namespace

void RegisterRunCommand(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* command = app.add_subcommand(
      "run", "Compile an HLO module, run it on one device or a mesh, and time it");
  command->add_option("file", options->path, "HLO text file")->required();
  command->add_option("--input", options->inputs,
                      "NAME=FILE.npy: value of the entry parameter NAME (or its number)");
  command->add_option("--random-inputs", options->random_seed,
                      "Fill parameters without --input with deterministic values from SEED");
  command->add_option("--device", options->device, "Mesh device to run on")
      ->check(CLI::Range(0, 255));
  command->add_option("--repeat", options->repeat, "Runs to time (the median is printed)")
      ->check(CLI::Range(1, 1000000));
  command->add_option("--dump-kernels", options->dump_kernels,
                      "Write each generated kernel's GLSL into this directory");
  command->add_option("--mesh", options->mesh,
                      "Partition over this mesh (2x2, or 2x4:dp,tp with axis names) and run the "
                      "per-device program on its devices");
  command
      ->add_option("--devices", options->devices,
                   "Partition over a 1-D mesh of N devices and run on them")
      ->check(CLI::Range(1, 256));
  command->add_option("--spec", options->specs,
                      "NAME=SPEC: shard the instruction NAME with a partition spec over the mesh, "
                      "e.g. x='(0, None)' (repeatable)");
  command->add_flag("--as-partitioned", options->as_partitioned,
                    "Run the module as a per-device program on num_partitions x replica_count "
                    "devices, even if it carries tiled shardings");
  command->add_option("--output-dir", options->output_dir,
                      "Write each output as .npy here, as eval does (output.npy, output.0.npy for "
                      "tuples, deviceD.output.npy for per-device programs)");
  command->add_flag("--compare", options->compare,
                    "Also run the CPU reference, print the largest error, and exit 6 when an "
                    "element is beyond --rtol/--atol (a NaN or Inf mismatch always is)");
  command->add_option("--rtol", options->rtol, "--compare's relative tolerance")
      ->check(CLI::Range(0.0, 1e300))
      ->capture_default_str();
  command->add_option("--atol", options->atol, "--compare's absolute tolerance")
      ->check(CLI::Range(0.0, 1e300))
      ->capture_default_str();
  command->callback([options] { CommandExitCode() = RunRun(*options); });
}

}  // namespace vkspmd::cli
