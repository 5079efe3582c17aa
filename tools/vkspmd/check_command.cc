// `vkspmd check FILE.hlo`: parses and verifies an HLO module and prints it back in the canonical
// printed form, or prints the errors (FILE:LINE:COLUMN: message) and exits 1 (2 when the file
// cannot be used at all: missing, not a regular file, too large).
#include <cctype>
#include <cstdio>
#include <string>

#include "fmt/format.h"
#include "src/ir/parser.h"
#include "src/ir/printer.h"
#include "src/ir/structural_hash.h"
#include "tools/vkspmd/command.h"
#include "tools/vkspmd/program_io.h"

namespace vkspmd::cli {
namespace {

struct CheckOptions {
  std::string path;
  bool print_hash = false;
};

int RunCheck(const CheckOptions& options) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ReadModuleFile(options.path);
  if (!module.ok()) {
    fmt::print(stderr, "{}\n", std::string(module.status().message()));
    return IsUnusableFile(module.status()) ? kExitUsageError : kExitRuntimeError;
  }
  fmt::print("{}", ir::PrintModule(**module));
  if (options.print_hash)
    fmt::print(stderr, "structural hash {}\n", ir::StructuralHashHex(**module));
  return kExitOk;
}

}  // namespace

void RegisterCheckCommand(CLI::App& app) {
  auto options = std::make_shared<CheckOptions>();
  CLI::App* command = app.add_subcommand(
      "check", "Parse and verify an HLO module; print it back, or print the errors");
  command->add_option("file", options->path, "HLO text file")->required();
  command->add_flag("--hash", options->print_hash,
                    "Also print the module's structural hash (the compile-cache key) on stderr");
  command->callback([options] { CommandExitCode() = RunCheck(*options); });
}

}  // namespace vkspmd::cli
