// `vkspmd run FILE.hlo [--input NAME=FILE.npy ...] [--random-inputs SEED] [--device K]
// [--repeat N] [--compare] [--dump-kernels DIR]`: compiles the module for one mesh device, runs it,
// and prints the outputs, the kernel count, the compile time and the per-run time (median of N
// runs, wall clock and GPU timestamps); --compare also runs the CPU reference and reports the
// largest error.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "fmt/format.h"
#include "src/exec/executable.h"
#include "src/interp/evaluator.h"
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
  std::string dump_kernels;  // Directory for the generated GLSL, one file per kernel.
};

int Fail(int code, absl::string_view message) {
  fmt::print(stderr, "vkspmd run: {}\n", message);
  return code;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

// Largest absolute and relative difference over every array of two equally shaped literals.
void MaxError(const ir::Literal& got, const ir::Literal& want, double& absolute, double& relative) {
  if (got.shape().IsTuple()) {
    for (size_t k = 0; k < got.tuple_elements().size(); ++k) {
      MaxError(got.tuple_elements()[k], want.tuple_elements()[k], absolute, relative);
    }
    return;
  }
  for (int64_t i = 0; i < got.ElementCount(); ++i) {
    double a = got.GetAsDouble(i), b = want.GetAsDouble(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    double difference = a == b ? 0 : std::fabs(a - b);
    absolute = std::max(absolute, difference);
    relative = std::max(relative, difference / std::max(std::fabs(b), 1e-30));
  }
}

// Writes each kernel's GLSL to DIR/NN-NAME.comp, numbered in execution order.
absl::Status DumpKernels(const codegen::ProgramPlan& plan, const std::string& directory) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error)
    return absl::InternalError(fmt::format("cannot create {}: {}", directory, error.message()));
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    std::string name = plan.kernels[k].name;
    std::replace_if(
        name.begin(), name.end(), [](char c) { return !std::isalnum(c) && c != '.' && c != '_'; },
        '_');
    std::string path = fmt::format("{}/{:02}-{}.comp", directory, k, name);
    std::ofstream file(path);
    file << plan.kernels[k].glsl;
    if (!file.good()) return absl::InternalError(fmt::format("cannot write {}", path));
  }
  return absl::OkStatus();
}

int RunRun(const RunOptions& options) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ReadModuleFile(options.path);
  if (!module.ok()) return Fail(kExitRuntimeError, module.status().message());
  absl::StatusOr<std::vector<ir::Literal>> arguments =
      BuildArguments(*(*module)->entry(), options.inputs, options.random_seed);
  if (!arguments.ok()) {
    return Fail(absl::IsInvalidArgument(arguments.status()) ? kExitUsageError : kExitRuntimeError,
                arguments.status().message());
  }
  absl::StatusOr<runtime::RuntimeConfig> config = runtime::RuntimeConfig::FromEnvironment();
  if (!config.ok()) return Fail(kExitUsageError, config.status().message());
  config->mesh_device_count = std::max(config->mesh_device_count, options.device + 1);
  absl::StatusOr<std::unique_ptr<runtime::DeviceSet>> devices = runtime::DeviceSet::Create(*config);
  if (!devices.ok()) {
    return Fail(absl::IsNotFound(devices.status()) ? kExitNoDevice : kExitRuntimeError,
                devices.status().message());
  }
  runtime::MeshDevice& device = (*devices)->device(options.device);

  auto compile_start = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<exec::Executable>> executable =
      exec::Executable::Compile(**module, device, /*timestamps=*/true);
  if (!executable.ok()) return Fail(kExitRuntimeError, executable.status().message());
  double compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - compile_start).count();
  if (!options.dump_kernels.empty()) {
    absl::Status dumped = DumpKernels((*executable)->plan(), options.dump_kernels);
    if (!dumped.ok()) return Fail(kExitRuntimeError, dumped.message());
  }

  std::vector<double> wall_ms, gpu_ms;
  absl::StatusOr<ir::Literal> result = absl::InternalError("not run");
  for (int run = 0; run < options.repeat; ++run) {
    auto start = std::chrono::steady_clock::now();
    result = (*executable)->Run(*arguments);
    if (!result.ok()) return Fail(kExitRuntimeError, result.status().message());
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
  if (options.compare) {
    absl::StatusOr<ir::Literal> reference = interp::Evaluate(**module, *arguments);
    if (!reference.ok()) return Fail(kExitRuntimeError, reference.status().message());
    double absolute = 0, relative = 0;
    MaxError(*result, *reference, absolute, relative);
    fmt::print("compare: max abs error {:.3g}, max rel error {:.3g} against the CPU reference\n",
               absolute, relative);
  }
  return kExitOk;
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
  command->add_flag("--compare", options->compare,
                    "Also run the CPU reference and print the largest error");
  command->callback([options] { CommandExitCode() = RunRun(*options); });
}

}  // namespace vkspmd::cli
