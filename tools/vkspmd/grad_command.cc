// `vkspmd grad FILE.hlo [--loss INDEX] [--wrt p0,p1]`: prints the module that computes the loss
// and its gradients with respect to the chosen parameters (reverse-mode autodiff on the IR).
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "fmt/format.h"
#include "src/autodiff/gradients.h"
#include "src/ir/parser.h"
#include "src/ir/printer.h"
#include "tools/vkspmd/command.h"
#include "tools/vkspmd/program_io.h"

namespace vkspmd::cli {
namespace {

struct GradOptions {
  std::string path;
  int64_t loss_index = -1;
  std::vector<std::string> wrt;
};

// A parameter named by its number or its name.
absl::StatusOr<int64_t> FindParameter(const ir::Computation& entry, const std::string& token) {
  int64_t number = 0;
  if (absl::SimpleAtoi(token, &number)) {
    if (number >= 0 && number < entry.parameter_count()) return number;
    return absl::InvalidArgumentError(
        fmt::format("--wrt {}: the entry has {} parameters", token, entry.parameter_count()));
  }
  for (const ir::Instruction* parameter : entry.parameters()) {
    if (parameter != nullptr && parameter->name() == token) {
      return parameter->attributes().parameter_number;
    }
  }
  std::vector<std::string> names;
  for (const ir::Instruction* parameter : entry.parameters()) {
    if (parameter != nullptr) names.push_back(parameter->name());
  }
  return absl::InvalidArgumentError(fmt::format(
      "--wrt {}: no parameter of that name (the entry has {})", token, fmt::join(names, ", ")));
}

int RunGrad(const GradOptions& options) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ReadModuleFile(options.path);
  if (!module.ok()) {
    fmt::print(stderr, "vkspmd grad: {}\n", module.status().message());
    return IsUnusableFile(module.status()) ? kExitUsageError : kExitRuntimeError;
  }
  const ir::Computation& entry = *(*module)->entry();
  std::vector<int64_t> wrt;
  for (const std::string& token : options.wrt) {
    absl::StatusOr<int64_t> number = FindParameter(entry, token);
    if (!number.ok()) {
      fmt::print(stderr, "vkspmd grad: {}\n", number.status().message());
      return kExitUsageError;
    }
    wrt.push_back(*number);
  }
  if (options.wrt.empty()) {
    for (const ir::Instruction* parameter : entry.parameters()) {
      if (parameter != nullptr && parameter->shape().IsArray() &&
          ir::IsFloat(parameter->shape().dtype())) {
        wrt.push_back(parameter->attributes().parameter_number);
      }
    }
  }
  std::optional<int64_t> loss_index;
  if (options.loss_index >= 0) loss_index = options.loss_index;
  absl::StatusOr<std::unique_ptr<ir::Module>> gradients =
      autodiff::Gradients(**module, loss_index, wrt);
  if (!gradients.ok()) {
    fmt::print(stderr, "vkspmd grad: {}: {}\n", options.path, gradients.status().message());
    return kExitRuntimeError;
  }
  fmt::print("{}", ir::PrintModule(**gradients));
  return kExitOk;
}

}  // namespace

void RegisterGradCommand(CLI::App& app) {
  auto options = std::make_shared<GradOptions>();
  CLI::App* command = app.add_subcommand(
      "grad", "Print the module computing a loss and its gradients (reverse-mode autodiff)");
  command->add_option("file", options->path, "HLO text file")->required();
  command
      ->add_option("--loss", options->loss_index,
                   "Index of the loss in the root tuple (default: the root is the loss)")
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--wrt", options->wrt,
                   "Parameters to differentiate, by name or number (default: every "
                   "floating-point parameter)")
      ->delimiter(',');
  command->callback([options] { CommandExitCode() = RunGrad(*options); });
}

}  // namespace vkspmd::cli
