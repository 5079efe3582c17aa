// `vkspmd partition FILE.hlo [--mesh 2x2[:x,y]] [--spec NAME=SPEC ...] [--print
// propagated|partitioned] [--auto ...] [--cost]`: optionally auto-shards (spmd/auto_sharding.h,
// under the default, a measured (exec/cost_calibration.h) or a given cost model), propagates
// the module's shardings over a mesh and partitions it into the per-device program; prints the
// propagated or partitioned module, then the collectives (kind, mesh axes, elements, bytes sent per
// device), the total bytes per device and every fallback to replication.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "src/exec/cost_calibration.h"
#include "src/ir/printer.h"
#include "src/runtime/device_set.h"
#include "src/runtime/runtime_config.h"
#include "src/spmd/auto_sharding.h"
#include "src/spmd/mesh_search.h"
#include "src/spmd/partition_spec.h"
#include "src/spmd/partitioner.h"
#include "tools/vkspmd/command.h"
#include "tools/vkspmd/program_io.h"

namespace vkspmd::cli {
namespace {

struct PartitionOptions {
  std::string path;
  std::string mesh;
  std::vector<std::string> specs;
  std::string print = "partitioned";
  bool auto_shard = false;
  double memory_limit_mib = 0;  // 0: none
  double time_limit_s = 30;
  // "defaults", "measured" (on the mesh's devices, cached) or a file in CostModel::Serialize's
  // format.
  std::string cost_model = "defaults";
  bool recalibrate = false;  // measured: measure even when the cache holds a model
  bool cost = false;         // print the modelled cost of the module's own shardings
};

int Fail(int code, std::string_view message) {
  fmt::print(stderr, "vkspmd partition: {}\n", message);
  return code;
}

void PrintReport(const spmd::PartitionResult& result, const spmd::Mesh& mesh,
                 const ModuleRead& read) {
  const std::string note = MeshViewNote(mesh, read);
  fmt::print("\nmesh {}{}\n", mesh.ToString(), note.empty() ? "" : " (" + note + ")");
  fmt::print("{:<20} {:<12} {:>10} {:>14}  {}\n", "collective", "mesh axes", "elements",
             "bytes/device", "for");
  for (const spmd::CollectiveRecord& record : result.collectives) {
    fmt::print("{:<20} {:<12} {:>10} {:>14}  %{}\n", ir::OpcodeName(record.kind),
               mesh.AxesLabel(record.axes), record.elements, record.bytes_per_device,
               record.instruction);
  }
  fmt::print("total: {} collectives, {} bytes sent per device\n", result.collectives.size(),
             result.BytesPerDevice());
  fmt::print("fallbacks to replication: {}\n", result.fallbacks.size());
  for (const spmd::FallbackRecord& fallback : result.fallbacks) {
    fmt::print("  %{}: {}\n", fallback.instruction, fallback.description);
  }
}

// The cost model --cost-model names for `mesh`: the defaults, a file, or measured on the mesh's
// devices (from the cache when it holds one; the model goes to stderr).
absl::StatusOr<spmd::CostModel> ChosenCostModel(const spmd::Mesh& mesh,
                                                const PartitionOptions& options) {
  if (options.cost_model == "defaults") return spmd::CostModel::Default(mesh);
  if (options.cost_model != "measured") {
    absl::StatusOr<std::string> text = ReadInputFile(options.cost_model, 1 << 20);
    if (!text.ok()) return text.status();
    return spmd::CostModel::Parse(*text, mesh);
  }
  absl::StatusOr<runtime::RuntimeConfig> config = runtime::RuntimeConfig::FromEnvironment();
  if (!config.ok()) return config.status();
  config->mesh_device_count =
      std::max(config->mesh_device_count, static_cast<int>(mesh.device_count()));
  absl::StatusOr<std::unique_ptr<runtime::DeviceSet>> devices = runtime::DeviceSet::Create(*config);
  if (!devices.ok()) return devices.status();
  std::vector<runtime::MeshDevice*> mesh_devices;
  for (int64_t d = 0; d < mesh.device_count(); ++d) {
    mesh_devices.push_back(&(*devices)->device(static_cast<int>(d)));
  }
  exec::CalibrationOptions calibration_options;
  calibration_options.refresh = options.recalibrate;
  absl::StatusOr<exec::Calibration> calibration =
      exec::MeasuredCostModel(mesh, mesh_devices, calibration_options);
  if (!calibration.ok()) return calibration.status();
  fmt::print(stderr, "cost model of {} on {}: {}\n{}", mesh.ToString(),
             (*devices)->physical_devices().at(0).name,
             calibration->from_cache ? "from the cache " + calibration->cache_path
                                     : fmt::format("measured in {:.1f} s", calibration->seconds),
             calibration->model.Serialize(mesh));
  return calibration->model;
}

// Why a plan is not proven optimal: the time limit stopped the search (and how much of the plan
// was chosen greedily), or the program was solved in windows (or several ILPs that are not
// jointly optimal) well within it.
std::string PlanNote(const spmd::AutoShardingPlan& plan, double time_limit_s) {
  if (plan.stopped_at_time_limit) {
    if (plan.greedy_groups > 0) {
      return fmt::format(
          " (stopped at the {:g} s time limit before the ILP found a plan for {} of {} choice "
          "groups: those chosen greedily; raise --time-limit for a better plan)",
          time_limit_s, plan.greedy_groups, plan.choice_groups);
    }
    return fmt::format(" (stopped at the {:g} s time limit: best plan found)", time_limit_s);
  }
  if (plan.optimal) return "";
  if (plan.windows > 1) {
    return fmt::format(" (solved in {} windows: not proven optimal)", plan.windows);
  }
  return " (not proven optimal)";
}

// Chooses every instruction's sharding by auto-sharding's ILP, writes them as sharding= and
// prints the plan and its modelled cost on stderr.
absl::Status AutoShardModule(ir::Module& module, const spmd::Mesh& mesh,
                             const spmd::CostModel& model, const PartitionOptions& options) {
  spmd::AutoShardingOptions auto_options;
  auto_options.time_limit_seconds = options.time_limit_s;
  if (options.memory_limit_mib > 0) {
    auto_options.memory_limit_bytes = static_cast<int64_t>(options.memory_limit_mib * 1048576.0);
  }
  absl::StatusOr<spmd::AutoShardingPlan> plan = spmd::AutoShard(module, mesh, model, auto_options);
  if (!plan.ok()) return plan.status();
  spmd::AnnotateModule(module, plan->shardings, mesh);
  fmt::print(stderr,
             "auto-sharding on {}: {} instructions in {} choice groups, {} variables, {} "
             "rows, solved in {:.3f} s{}\n{}",
             mesh.ToString(), plan->instructions, plan->choice_groups, plan->variables, plan->rows,
             plan->solve_seconds, PlanNote(*plan, options.time_limit_s),
             plan->Report(module, mesh));
  fmt::print(stderr, "{}", plan->ComputeByKind());
  return absl::OkStatus();
}

// --cost: the modelled step of the shardings propagation gave the module (its annotations).
absl::Status PrintModelledCost(const ir::Module& module, const spmd::PartitionResult& result,
                               const spmd::CostModel& model, const PartitionOptions& options) {
  spmd::AutoShardingOptions cost_options;
  cost_options.time_limit_seconds = options.time_limit_s;
  absl::StatusOr<spmd::AutoShardingPlan> costed =
      spmd::CostOfShardings(module, result.mesh, model, result.propagation.shardings, cost_options);
  if (!costed.ok()) return costed.status();
  fmt::print(stderr,
             "modelled step of the propagated shardings: {:.3f} ms (compute {:.3f}, all-reduces "
             "{:.3f}, resharding {:.3f})\n",
             costed->cost() * 1e3, costed->compute * 1e3, costed->communication * 1e3,
             costed->resharding * 1e3);
  fmt::print(stderr, "{}", costed->ComputeByKind());
  return absl::OkStatus();
}

int RunPartition(const PartitionOptions& options) {
  if (options.print != "propagated" && options.print != "partitioned") {
    return Fail(kExitUsageError, "--print must be propagated or partitioned");
  }
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ReadModuleFile(options.path);
  if (!module.ok()) {
    return Fail(IsUnusableFile(module.status()) ? kExitUsageError : kExitRuntimeError,
                std::string(module.status().message()));
  }
  absl::StatusOr<ModuleRead> read =
      ReadModuleAs(**module, MeshChoice{.mesh = options.mesh, .has_specs = !options.specs.empty()});
  if (!read.ok()) return Fail(kExitUsageError, std::string(read.status().message()));
  if (!read->summary.empty()) fmt::print(stderr, "{}: {}\n", options.path, read->summary);
  if (read->reading == ModuleReading::kPerDevice) {
    return Fail(kExitRuntimeError, fmt::format("{} is already partitioned: there is nothing to "
                                               "partition (give --mesh to partition it anyway)",
                                               options.path));
  }
  const std::vector<spmd::Mesh> meshes =
      read->reading == ModuleReading::kGspmd ? read->meshes : spmd::CandidateMeshes(**module);
  absl::Status last = absl::OkStatus();
  for (const spmd::Mesh& mesh : meshes) {
    absl::Status applied = ApplySpecs(**module, options.specs, mesh);
    if (!applied.ok()) return Fail(kExitUsageError, std::string(applied.message()));
    std::optional<spmd::CostModel> model;
    if (options.auto_shard || options.cost) {
      absl::StatusOr<spmd::CostModel> chosen = ChosenCostModel(mesh, options);
      if (!chosen.ok()) return Fail(kExitRuntimeError, std::string(chosen.status().message()));
      model = *std::move(chosen);
    }
    if (options.auto_shard) {
      absl::Status planned = AutoShardModule(**module, mesh, *model, options);
      if (!planned.ok()) return Fail(kExitRuntimeError, std::string(planned.message()));
    }
    absl::StatusOr<spmd::PartitionResult> result = spmd::Partition(**module, mesh);
    if (!result.ok()) {
      last = result.status();
      continue;
    }
    if (options.cost) {
      // The shardings refer to the module as partitioned (while and conditional lowered).
      const ir::Module& costed =
          result->lowered_input != nullptr ? *result->lowered_input : **module;
      absl::Status printed = PrintModelledCost(costed, *result, *model, options);
      if (!printed.ok()) return Fail(kExitRuntimeError, std::string(printed.message()));
    }
    if (options.print == "propagated") {
      // While and conditional were lowered: the shardings refer to the lowered module.
      ir::Module& partitioned =
          result->lowered_input != nullptr ? *result->lowered_input : **module;
      spmd::AnnotateModule(partitioned, result->propagation.shardings, result->mesh);
      fmt::print("{}", ir::PrintModule(partitioned));
    } else {
      fmt::print("{}", ir::PrintModule(*result->module));
    }
    PrintReport(*result, result->mesh, *read);
    return kExitOk;
  }
  return Fail(kExitRuntimeError, LastMeshError(last, meshes.size()));
}

}  // namespace

void RegisterPartitionCommand(CLI::App& app) {
  auto options = std::make_shared<PartitionOptions>();
  CLI::App* command = app.add_subcommand(
      "partition",
      "Propagate shardings and partition an HLO module into one per-device program; report its "
      "collectives and bytes per device");
  command->add_option("file", options->path, "HLO text file")->required();
  command->add_option("--mesh", options->mesh,
                      "Mesh shape, optionally with axis names: 2x4 or 2x4:dp,tp (default: the "
                      "module's device count, num_partitions or the largest device id in its "
                      "shardings, as one axis, the shapes of its annotations, or its prime "
                      "factors; at most 24 meshes are tried)");
  command->add_option("--spec", options->specs,
                      "NAME=SPEC: shard instruction NAME by a partition spec, e.g. "
                      "x=\"(dp, None)\"");
  command->add_option("--print", options->print, "propagated or partitioned (default)");
  command->add_flag("--auto", options->auto_shard,
                    "choose every instruction's sharding by auto-sharding's ILP (GLPK) before "
                    "partitioning; the plan and its modelled cost go to stderr");
  command->add_option("--memory-limit-mib", options->memory_limit_mib,
                      "--auto: bytes per device the live values may hold, in MiB");
  command
      ->add_option("--time-limit", options->time_limit_s,
                   "--auto: time limit of the whole solve, s")
      ->capture_default_str()
      ->check([](const std::string& text) -> std::string {
        // Not CLI::PositiveNumber, which lets "nan" through.
        char* end = nullptr;
        const double seconds = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0' || !std::isfinite(seconds) || !(seconds > 0)) {
          return text + ": expected a positive number of seconds";
        }
        return "";
      });
  command
      ->add_option("--cost-model", options->cost_model,
                   "--auto, --cost: defaults (analytic, deterministic), measured (timed on the "
                   "mesh's devices at start-up, cached with the compile cache) or a file as "
                   "measured prints it")
      ->capture_default_str();
  command->add_flag("--recalibrate", options->recalibrate,
                    "--cost-model measured: measure even when the cache holds a model");
  command->add_flag("--cost", options->cost,
                    "print the modelled step time of the module's (propagated) shardings on "
                    "stderr");
  command->callback([options] { CommandExitCode() = RunPartition(*options); });
}

}  // namespace vkspmd::cli
