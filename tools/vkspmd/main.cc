// The vkspmd command-line tool: parses the command line and runs one subcommand.
#include <cstdio>

#include "tools/vkspmd/command.h"

namespace vkspmd::cli {

int& CommandExitCode() {
  static int exit_code = kExitOk;
  return exit_code;
}

}  // namespace vkspmd::cli

int main(int argc, char** argv) {
  using namespace vkspmd::cli;
  CLI::App app{"vkspmd: GSPMD-style sharding of tensor programs over Vulkan devices"};
  app.set_version_flag("--version", std::string("vkspmd ") + VKSPMD_VERSION);
  app.require_subcommand(1);
  RegisterDevicesCommand(app);
  RegisterCheckCommand(app);
  RegisterEvalCommand(app);
  RegisterGradCommand(app);
  RegisterRunCommand(app);
  RegisterPartitionCommand(app);
  RegisterVizCommand(app);
  RegisterTrainCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
    app.exit(error);
    return kExitUsageError;
  }
  return CommandExitCode();
}
