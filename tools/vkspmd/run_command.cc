// `vkspmd run FILE.hlo [--input NAME=FILE.npy ...] [--random-inputs SEED] [--device K]
// [--repeat N] [--compare] [--dump-kernels DIR] [--mesh 2x2 | --devices N]`: compiles the module
// for one mesh device, runs it, and prints the outputs, the kernel count, the compile time and the
// per-run time (median of N runs, wall clock and GPU timestamps); --compare also runs the CPU
// reference and reports the largest error.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/exec/executable.h"
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

// Prints the largest errors of `results` against the CPU reference's values; the exit code: 1
// when any element is outside --rtol/--atol.
int ReportComparison(const std::vector<const ir::Literal*>& results,
                     const absl::StatusOr<std::vector<ir::Literal>>& reference,
                     const RunOptions& options) {
  if (!reference.ok()) return Fail(kExitRuntimeError, reference.status().message());
  interp::Comparison comparison;
  for (size_t k = 0; k < results.size(); ++k) {
    interp::Compare(*results[k], (*reference)[k], options.rtol, options.atol,
                    results.size() == 1 ? "output" : fmt::format("output {}", k), comparison);
  }
  fmt::print(
      "compare: max abs error {:.3g}, max rel error {:.3g} (against max(|ref|, 1e-3 max|ref|)) "
      "against the CPU reference; {}\n",
      comparison.max_absolute, comparison.max_relative,
      comparison.beyond == 0
          ? fmt::format("all {} elements within rtol {:g}, atol {:g}", comparison.elements,
                        options.rtol, options.atol)
          : fmt::format("{} of {} elements beyond rtol {:g}, atol {:g}", comparison.beyond,
                        comparison.elements, options.rtol, options.atol));
  if (comparison.beyond == 0) return kExitOk;
  return Fail(kExitRuntimeError,
              fmt::format("the results differ from the CPU reference: {} of {} elements beyond "
                          "rtol {:g}, atol {:g}; first at {}",
                          comparison.beyond, comparison.elements, options.rtol, options.atol,
                          comparison.first_beyond));
}

// The reference's single result as a one-element list, for ReportComparison.
absl::StatusOr<std::vector<ir::Literal>> AsList(absl::StatusOr<ir::Literal> value) {
  if (!value.ok()) return value.status();
  std::vector<ir::Literal> list;
  list.push_back(std::move(*value));
  return list;
}

// A per-device program (num_partitions or replica_count above 1, as the partitioner or JAX
// writes them) runs as it is on that many devices, each with its own arguments (--random-inputs
// draws device d's from SEED + d; --input files go to every device).
int RunPerDeviceProgram(const RunOptions& options, std::unique_ptr<ir::Module> owned) {
  const ir::Module& module = *owned;
  const int64_t n = module.replica_count() * module.partition_count();
  if ((options.devices > 0 && options.devices != n) || !options.mesh.empty()) {
    return Fail(kExitUsageError,
                fmt::format("{} is already a per-device program for {} devices; run it without "
                            "--mesh (or with --devices {})",
                            options.path, n, n));
  }
  std::vector<std::vector<ir::Literal>> arguments;
  for (int64_t d = 0; d < n; ++d) {
    std::optional<uint64_t> seed = options.random_seed;
    if (seed) *seed += static_cast<uint64_t>(d);
    absl::StatusOr<std::vector<ir::Literal>> built =
        BuildArguments(*module.entry(), options.inputs, seed);
    if (!built.ok()) {
      return Fail(absl::IsInvalidArgument(built.status()) ? kExitUsageError : kExitRuntimeError,
                  built.status().message());
    }
    arguments.push_back(std::move(*built));
  }
  int exit_code = kExitOk;
  std::unique_ptr<runtime::DeviceSet> devices = OpenDevices(static_cast<int>(n), exit_code);
  if (devices == nullptr) return exit_code;
  absl::StatusOr<spmd::Mesh> mesh = spmd::Mesh::Create({n});
  if (!mesh.ok()) return Fail(kExitUsageError, mesh.status().message());
  std::unique_ptr<exec::MeshProgram> program =
      exec::MeshProgram::FromPerDeviceModule(std::move(owned), *mesh);
  absl::StatusOr<MeshRun> run =
      RunOnDevices(*program, *devices, arguments, options.repeat, std::chrono::steady_clock::now());
  if (!run.ok()) return Fail(ExitCodeFor(run.status().code()), run.status().message());
  for (int64_t d = 0; d < n; ++d) PrintSummary(fmt::format("device {}", d), run->results[d]);
  fmt::print(stderr,
             "{}: per-device program on {} devices; {} kernel(s) per device; compiled in {:.3f} "
             "s; run (median of {}): {:.3f} ms wall\n",
             options.path, n, program->executable().executable(0).kernel_count(),
             run->compile_seconds, options.repeat, run->median_wall_ms);
  if (!options.compare) return kExitOk;
  std::vector<const ir::Literal*> results;
  for (const ir::Literal& result : run->results) results.push_back(&result);
  return ReportComparison(results, interp::EvaluateOnDevices(module, arguments), options);
}

// The module partitioned over the mesh (GSPMD), its per-device program on each mesh device with
// host-staged collectives, the arguments sharded and the results assembled.
int RunOnMesh(const RunOptions& options, ir::Module& module,
              const std::vector<ir::Literal>& arguments) {
  absl::StatusOr<spmd::Mesh> mesh = options.mesh.empty() ? spmd::Mesh::Create({options.devices})
                                                         : spmd::Mesh::Parse(options.mesh);
  if (!mesh.ok()) return Fail(kExitUsageError, mesh.status().message());
  if (absl::Status applied = ApplySpecs(module, options.specs, *mesh); !applied.ok()) {
    return Fail(kExitUsageError, applied.message());
  }
  // Declared before the program, so the program's executables are destroyed before their devices.
  std::unique_ptr<runtime::DeviceSet> devices;
  auto compile_start = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<exec::MeshProgram>> program =
      exec::MeshProgram::Partition(module, *mesh);
  if (!program.ok()) return Fail(kExitRuntimeError, program.status().message());
  absl::StatusOr<std::vector<std::vector<ir::Literal>>> per_device =
      (*program)->ShardArguments(arguments);
  if (!per_device.ok()) return Fail(kExitRuntimeError, per_device.status().message());
  const int64_t n = mesh->device_count();
  int exit_code = kExitOk;
  devices = OpenDevices(static_cast<int>(n), exit_code);
  if (devices == nullptr) return exit_code;
  absl::StatusOr<MeshRun> run =
      RunOnDevices(**program, *devices, *per_device, options.repeat, compile_start);
  if (!run.ok()) return Fail(ExitCodeFor(run.status().code()), run.status().message());
  absl::StatusOr<ir::Literal> output = (*program)->Assemble(run->results);
  if (!output.ok()) return Fail(kExitRuntimeError, output.status().message());
  PrintSummary("output", *output);
  fmt::print(stderr,
             "{}: partitioned over mesh {} ({} collective(s), {} bytes sent per device); {} "
             "kernel(s) per device; compiled in {:.3f} s; run (median of {}): {:.3f} ms wall\n",
             options.path, mesh->ToString(), (*program)->collective_count(),
             (*program)->bytes_per_device(), (*program)->executable().executable(0).kernel_count(),
             run->compile_seconds, options.repeat, run->median_wall_ms);
  if (!options.compare) return kExitOk;
  return ReportComparison({&*output}, AsList(interp::Evaluate(module, arguments)), options);
}

int RunRun(const RunOptions& options) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ReadModuleFile(options.path);
  if (!module.ok()) {
    return Fail(IsUnusableFile(module.status()) ? kExitUsageError : kExitRuntimeError,
                module.status().message());
  }
  if ((*module)->replica_count() * (*module)->partition_count() > 1) {
    return RunPerDeviceProgram(options, std::move(*module));
  }
  absl::StatusOr<std::vector<ir::Literal>> arguments =
      BuildArguments(*(*module)->entry(), options.inputs, options.random_seed);
  if (!arguments.ok()) {
    return Fail(absl::IsInvalidArgument(arguments.status()) ? kExitUsageError : kExitRuntimeError,
                arguments.status().message());
  }
  if (!options.mesh.empty() || options.devices > 0) {
    return RunOnMesh(options, **module, *arguments);
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
  PrintSummary("output", *result);
  fmt::print(stderr,
             "{}: {} kernel(s) on {}; compiled in {:.3f} s; run (median of {}): {:.3f} ms "
             "wall, {:.3f} ms GPU\n",
             options.path, (*executable)->kernel_count(), device.label(), compile_seconds,
             options.repeat, Median(wall_ms), Median(gpu_ms));
  if (!options.compare) return kExitOk;
  return ReportComparison({&*result}, AsList(interp::Evaluate(**module, *arguments)), options);
}

}  // namespace

void RegisterRunCommand(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* command =
      app.add_subcommand("run", "Compile an HLO module for one device, run it, and time it");
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
  command->add_flag("--compare", options->compare,
                    "Also run the CPU reference, print the largest error, and exit 1 when an "
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
