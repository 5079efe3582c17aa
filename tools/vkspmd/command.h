// The subcommand registry of the vkspmd tool: each subcommand file defines one Register function
// that adds its CLI11 subcommand and sets the callback that runs it.
#pragma once

#include <CLI/CLI.hpp>

#include "absl/status/status.h"
#include "src/base/formatting.h"

namespace vkspmd::cli {

// Exit codes shared by every subcommand (see docs/cli.md).
enum ExitCode : int {
  kExitOk = 0,
  kExitRuntimeError = 1,
  kExitUsageError = 2,
  kExitPeerFailure = 3,
  kExitDeviceLost = 4,
  kExitDiverged = 5,  // `vkspmd train`: the loss became NaN or infinite.
  kExitMismatch = 6,  // `vkspmd run --compare`: results beyond --rtol/--atol of the reference.
  // `vkspmd train`: SIGTERM arrived; a checkpoint of the step reached was committed. Restart
  // with --resume (vkspmd::kExitPreempted, EX_TEMPFAIL).
  kExitPreempted = 75,
  kExitNoDevice = 77,
};

// A subcommand's callback stores its exit code here; main returns it.
int& CommandExitCode();

// The exit code of an error the library reported with `code`: INVALID_ARGUMENT is a usage
// error, ABORTED a peer or collective failure, UNAVAILABLE and DEADLINE_EXCEEDED a lost or hung
// device (it is marked failed), NOT_FOUND from opening devices no device or driver; anything else
// a runtime error.
int ExitCodeFor(absl::StatusCode code, bool opening_devices = false);

// One per subcommand, each in its own <name>_command.cc.
void RegisterDevicesCommand(CLI::App& app);
void RegisterCheckCommand(CLI::App& app);
void RegisterEvalCommand(CLI::App& app);
void RegisterGradCommand(CLI::App& app);
void RegisterRunCommand(CLI::App& app);
void RegisterPartitionCommand(CLI::App& app);
void RegisterVizCommand(CLI::App& app);
void RegisterTrainCommand(CLI::App& app);
void RegisterCkptCommand(CLI::App& app);
void RegisterTraceCommand(CLI::App& app);
void RegisterLaunchCommand(CLI::App& app);

}  // namespace vkspmd::cli
