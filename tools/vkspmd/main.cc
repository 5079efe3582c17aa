// The vkspmd command-line tool: parses the command line and runs one subcommand.
#include <cstdio>
#include <exception>
#include <new>

#include "tools/vkspmd/command.h"

namespace vkspmd::cli {

int& CommandExitCode() {
  static int exit_code = kExitOk;
  return exit_code;
}

int ExitCodeFor(absl::StatusCode code, bool opening_devices) {
  switch (code) {
    case absl::StatusCode::kOk:
      return kExitOk;
    case absl::StatusCode::kInvalidArgument:
      return kExitUsageError;
    case absl::StatusCode::kAborted:
      return kExitPeerFailure;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return kExitDeviceLost;
    case absl::StatusCode::kNotFound:
      return opening_devices ? kExitNoDevice : kExitRuntimeError;
    default:
      return kExitRuntimeError;
  }
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
  RegisterCkptCommand(app);
  RegisterTraceCommand(app);
  RegisterLaunchCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
    app.exit(error);
    return kExitUsageError;
  } catch (const std::bad_alloc&) {
    // A subcommand asked for more host memory than there is (a huge shape or batch): no
    // exception escapes main, every failure is a message and an exit code.
    std::fprintf(stderr, "vkspmd: out of host memory\n");
    return kExitRuntimeError;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "vkspmd: internal error: %s\n", error.what());
    return kExitRuntimeError;
  }
  return CommandExitCode();
}
