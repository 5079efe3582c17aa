// `vkspmd ckpt ls|verify|export`: looking at checkpoint directories. ls lists the committed steps
// (sizes, tensors, meshes and shardings), verify re-reads every shard against its checksum and
// exits 1 on any problem, export writes a step's tensors whole as a safetensors file.
#include <cstdio>
#include <filesystem>
#include <optional>

#include "fmt/format.h"
#include "tools/vkspmd/command.h"
#include "vkspmd/checkpoint.h"
#include "vkspmd/dtype.h"

namespace vkspmd::cli {
namespace {

struct CkptOptions {
  std::string path;
  std::optional<int64_t> step;
  std::string safetensors;
  bool tensors = false;
};

std::string SizeText(int64_t bytes) {
  if (bytes >= (int64_t{1} << 30)) return fmt::format("{:.2f} GiB", bytes / 1073741824.0);
  if (bytes >= (int64_t{1} << 20)) return fmt::format("{:.1f} MiB", bytes / 1048576.0);
  if (bytes >= 1024) return fmt::format("{:.1f} KiB", bytes / 1024.0);
  return fmt::format("{} B", bytes);
}

std::string ShapeText(DType dtype, const std::vector<int64_t>& shape) {
  return fmt::format("{}[{}]", dtype_name(dtype), fmt::join(shape, ","));
}

// The step directories a path names: itself when it is a step, else the committed steps in it
// (only --step when given).
std::vector<std::string> StepPaths(const CkptOptions& options) {
  const std::filesystem::path path(options.path);
  if (std::filesystem::exists(path / "manifest.json") ||
      std::filesystem::exists(path / "COMMITTED")) {
    return {options.path};
  }
  if (!std::filesystem::is_directory(path)) {
    throw Error(ErrorCode::kNotFound,
                fmt::format("{}: no such checkpoint directory", options.path));
  }
  CheckpointManager manager(options.path, {.read_only = true});
  std::vector<std::string> paths;
  for (int64_t step : manager.all_steps()) {
    if (!options.step.has_value() || *options.step == step)
      paths.push_back(manager.step_path(step));
  }
  if (options.step.has_value() && paths.empty()) {
    throw Error(ErrorCode::kNotFound,
                fmt::format("{} has no committed step {}", options.path, *options.step));
  }
  return paths;
}

int List(const CkptOptions& options) {
  const std::vector<std::string> paths = StepPaths(options);
  if (paths.empty()) fmt::print("{}: no committed steps\n", options.path);
  for (const std::string& path : paths) {
    const CheckpointInfo info = checkpoint_info(path);
    std::set<std::string> meshes;
    for (const CheckpointTensorInfo& tensor : info.tensors) {
      meshes.insert(tensor.mesh.empty() ? "host" : tensor.mesh);
    }
    fmt::print("step {:>8}  {:>10}  {:>4} tensors  {}  vkspmd {}  {}\n", info.step,
               SizeText(info.bytes), info.tensors.size(), info.created, info.library_version,
               fmt::join(meshes, "; "));
    if (!options.tensors) continue;
    for (const CheckpointTensorInfo& tensor : info.tensors) {
      fmt::print("    {:<40} {:<16} {:>10}  {} shard{}  {}\n", tensor.name,
                 ShapeText(tensor.dtype, tensor.shape), SizeText(tensor.bytes), tensor.shard_count,
                 tensor.shard_count == 1 ? "" : "s",
                 tensor.mesh.empty() ? "host data" : tensor.sharding_axes + " " + tensor.sharding);
    }
  }
  return kExitOk;
}

int Verify(const CkptOptions& options) {
  const std::vector<std::string> paths = StepPaths(options);
  int problems = 0;
  for (const std::string& path : paths) {
    std::vector<std::string> found;
    int64_t bytes = 0;
    try {
      bytes = checkpoint_info(path).bytes;
      found = verify_checkpoint(path);
    } catch (const Error& error) {
      found = {error.what()};
    }
    if (found.empty()) {
      fmt::print("{}: ok ({})\n", path, SizeText(bytes));
      continue;
    }
    problems += static_cast<int>(found.size());
    for (const std::string& problem : found) fmt::print("{}: {}\n", path, problem);
  }
  if (paths.empty()) fmt::print("{}: no committed steps\n", options.path);
  if (problems > 0) {
    fmt::print(stderr, "vkspmd ckpt verify: {} problem{} found\n", problems,
               problems == 1 ? "" : "s");
    return kExitRuntimeError;
  }
  return kExitOk;
}

int Export(const CkptOptions& options) {
  if (options.safetensors.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "ckpt export: --safetensors OUT is required");
  }
  const std::vector<std::string> paths = StepPaths(options);
  if (paths.size() != 1) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("ckpt export: {} holds {} steps; name one step directory or --step N",
                            options.path, paths.size()));
  }
  export_safetensors(paths[0], options.safetensors);
  const CheckpointInfo info = checkpoint_info(paths[0]);
  fmt::print("wrote {} ({} tensors of step {}, {})\n", options.safetensors, info.tensors.size(),
             info.step, SizeText(info.bytes));
  return kExitOk;
}

void AddCallback(CLI::App* command, const std::shared_ptr<CkptOptions>& options,
                 int (*run)(const CkptOptions&)) {
  command->callback([options, run, command] {
    try {
      CommandExitCode() = run(*options);
    } catch (const Error& error) {
      fmt::print(stderr, "vkspmd ckpt {}: {}\n", command->get_name(), error.what());
      CommandExitCode() = ExitCodeFor(static_cast<absl::StatusCode>(error.code()));
    }
  });
}

}  // namespace

void RegisterCkptCommand(CLI::App& app) {
  CLI::App* ckpt = app.add_subcommand("ckpt", "List, verify and export checkpoints");
  ckpt->require_subcommand(1);

  auto ls = std::make_shared<CkptOptions>();
  CLI::App* list = ckpt->add_subcommand("ls", "List the committed steps of a checkpoint directory");
  list->add_option("path", ls->path, "checkpoint directory (or one step directory)")->required();
  list->add_option("--step", ls->step, "only this step");
  list->add_flag("--tensors", ls->tensors, "also list every tensor: shape, size, sharding");
  AddCallback(list, ls, List);

  auto verify = std::make_shared<CkptOptions>();
  CLI::App* check = ckpt->add_subcommand(
      "verify", "Re-read every shard against its checksum; exit 1 on any problem");
  check->add_option("path", verify->path, "checkpoint directory (or one step directory)")
      ->required();
  check->add_option("--step", verify->step, "only this step");
  AddCallback(check, verify, Verify);

  auto out = std::make_shared<CkptOptions>();
  CLI::App* exporter = ckpt->add_subcommand(
      "export", "Write a step's tensors whole (unsharded) as a safetensors file");
  exporter->add_option("path", out->path, "a step directory (or a checkpoint directory and --step)")
      ->required();
  exporter->add_option("--step", out->step, "the step, when path is a checkpoint directory");
  exporter->add_option("--safetensors", out->safetensors, "output .safetensors file")->required();
  AddCallback(exporter, out, Export);
}

}  // namespace vkspmd::cli
