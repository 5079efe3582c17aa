// `vkspmd eval FILE.hlo [--input NAME=FILE.npy ...] [--random-inputs SEED] [--output-dir D]`:
// evaluates a module on the CPU reference evaluator (every device of a multi-device module) and
// prints a summary of each output, writing outputs as .npy when an output directory is given.
#include <filesystem>
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

int Fail(int code, std::string_view message) {
  fmt::print(stderr, "vkspmd eval: {}\n", message);
  return code;
}

int RunEval(const EvalOptions& options) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ReadModuleFile(options.path);
  if (!module.ok()) {
    fmt::print(stderr, "{}\n", std::string(module.status().message()));
    return IsUnusableFile(module.status()) ? kExitUsageError : kExitRuntimeError;
  }
  absl::StatusOr<std::vector<ir::Literal>> arguments =
      BuildArguments(*(*module)->entry(), options.inputs, options.random_seed);
  if (!arguments.ok()) {
    return Fail(absl::IsInvalidArgument(arguments.status()) ? kExitUsageError : kExitRuntimeError,
                std::string(arguments.status().message()));
  }
  const std::vector<ir::Literal>& filled = *arguments;
  const int64_t devices = (*module)->replica_count() * (*module)->partition_count();
  absl::StatusOr<std::vector<ir::Literal>> results =
      interp::EvaluateOnDevices(**module, std::vector<std::vector<ir::Literal>>(devices, filled));
  if (!results.ok()) return Fail(kExitRuntimeError, std::string(results.status().message()));
  if (!options.output_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.output_dir, error);
    if (error) {
      return Fail(kExitRuntimeError, fmt::format("cannot create --output-dir {}: {}",
                                                 options.output_dir, error.message()));
    }
  }
  for (int64_t d = 0; d < devices; ++d) {
    const std::string stem = devices == 1 ? "output" : fmt::format("device{}.output", d);
    PrintSummary(stem, (*results)[d]);
    if (!options.output_dir.empty()) {
      absl::Status written = WriteOutputs(options.output_dir, stem, (*results)[d]);
      if (!written.ok()) return Fail(kExitRuntimeError, std::string(written.message()));
    }
  }
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
                      "deviceD.output.npy for multi-device modules)");
  command->callback([options] { CommandExitCode() = RunEval(*options); });
}

}  // namespace vkspmd::cli
