// `vkspmd eval FILE.hlo [--input NAME=FILE.npy ...] [--random-inputs SEED] [--output-dir D]`:
// evaluates a module on the CPU reference evaluator (once for a GSPMD module, every device of a
// per-device program, device d's random inputs from SEED + d) and prints a summary of each output,
// writing outputs as .npy when an output directory is given.
#include <string>

#include "fmt/format.h"
#include "src/interp/evaluator.h"
#include "tools/vkspmd/command.h"
#include "tools/vkspmd/program_io.h"

namespace vkspmd::cli {
namespace {

struct EvalOptions {
  std::string path;
  std::vector<std::string> inputs;
  std::optional<uint64_t> random_seed;
  std::string output_dir;
};

int Fail(int code, absl::string_view message) {
  fmt::print(stderr, "vkspmd eval: {}\n", message);
  return code;
}

int RunEval(const EvalOptions& options) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ReadModuleFile(options.path);
  if (!module.ok()) {
    fmt::print(stderr, "{}\n", std::string(module.status().message()));
    return IsUnusableFile(module.status()) ? kExitUsageError : kExitRuntimeError;
  }
  absl::StatusOr<ModuleRead> read = ReadModuleAs(**module, MeshChoice{});
  if (!read.ok()) return Fail(kExitUsageError, read.status().message());
  if (!read->summary.empty()) fmt::print(stderr, "{}: {}\n", options.path, read->summary);
  // A GSPMD module is one program over all its devices: evaluated once, as `run` assembles it.
  const int64_t devices = read->reading == ModuleReading::kPerDevice ? read->devices : 1;
  absl::StatusOr<std::vector<std::vector<ir::Literal>>> arguments =
      BuildDeviceArguments(*(*module)->entry(), options.inputs, options.random_seed, devices);
  if (!arguments.ok()) {
    return Fail(absl::IsInvalidArgument(arguments.status()) ? kExitUsageError : kExitRuntimeError,
                std::string(arguments.status().message()));
  }
  absl::StatusOr<std::vector<ir::Literal>> results =
      devices == 1 ? ReferenceResults(**module, arguments->front())
                   : interp::EvaluateOnDevices(**module, *arguments);
  if (!results.ok()) return Fail(kExitRuntimeError, std::string(results.status().message()));
  absl::Status reported = ReportOutputs(*results, options.output_dir);
  if (!reported.ok()) return Fail(kExitRuntimeError, reported.message());
  return kExitOk;
}

}  // namespace

void RegisterEvalCommand(CLI::App& app) {
  auto options = std::make_shared<EvalOptions>();
  CLI::App* command = app.add_subcommand(
      "eval", "Evaluate an HLO module on the CPU reference evaluator and summarise its outputs");
  command->add_option("file", options->path, "HLO text file")->required();
  command->add_option("--input", options->inputs,
                      "NAME=FILE.npy: value of the entry parameter NAME (or its number)");
  command->add_option("--random-inputs", options->random_seed,
                      "Fill parameters without --input with deterministic values from SEED");
  command->add_option("--output-dir", options->output_dir,
                      "Write each output as .npy here (output.npy, output.0.npy for tuples, "
                      "deviceD.output.npy for per-device programs)");
  command->callback([options] { CommandExitCode() = RunEval(*options); });
}

}  // namespace vkspmd::cli
