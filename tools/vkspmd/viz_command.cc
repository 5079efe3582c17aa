// `vkspmd viz SHARDING [--shape 8,32] [--mesh 2x4] [--no-color] [--format text|svg]
// [--output FILE]`: draws which devices hold which tile of a tensor. SHARDING is an HLO sharding
// ("{devices=[2,1,4]<=[8] last_tile_dim_replicate}") or, with --mesh, a partition spec
// ("(1, None)").
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "fmt/format.h"
#include "src/debug/sharding_view.h"
#include "src/ir/parser.h"
#include "src/spmd/partition_spec.h"
#include "tools/vkspmd/command.h"

namespace vkspmd::cli {
namespace {

struct VizOptions {
  std::string sharding;
  std::string shape;
  std::string mesh;
  bool no_color = false;
  std::string format = "text";
  std::string output;
};

int Fail(int code, std::string_view message) {
  fmt::print(stderr, "vkspmd viz: {}\n", message);
  return code;
}

absl::StatusOr<std::vector<int64_t>> ParseShape(const std::string& text) {
  std::vector<int64_t> shape;
  if (text.empty()) return shape;
  for (const std::string& part : std::vector<std::string>(absl::StrSplit(text, ','))) {
    int64_t size = 0;
    if (!absl::SimpleAtoi(part, &size) || size < 0) {
      return absl::InvalidArgumentError(
          fmt::format("--shape '{}': '{}' is not a dimension size", text, part));
    }
    shape.push_back(size);
  }
  return shape;
}

int RunViz(const VizOptions& options) {
  if (options.format != "text" && options.format != "svg") {
    return Fail(kExitUsageError, "--format must be text or svg");
  }
  absl::StatusOr<std::vector<int64_t>> shape = ParseShape(options.shape);
  if (!shape.ok()) return Fail(kExitUsageError, std::string(shape.status().message()));
  debug::ShardingViewOptions view;
  std::optional<spmd::Mesh> mesh;
  if (!options.mesh.empty()) {
    absl::StatusOr<spmd::Mesh> parsed = spmd::Mesh::Parse(options.mesh);
    if (!parsed.ok()) return Fail(kExitUsageError, std::string(parsed.status().message()));
    mesh = *parsed;
    view.devices = mesh->device_ids();
  }
  ir::Sharding sharding;
  if (!options.sharding.empty() && options.sharding[0] == '{') {
    absl::StatusOr<ir::Sharding> parsed = ir::ParseSharding(options.sharding);
    if (!parsed.ok()) return Fail(kExitUsageError, std::string(parsed.status().message()));
    sharding = *parsed;
  } else {
    if (!mesh.has_value()) {
      return Fail(kExitUsageError, "a partition spec needs --mesh (or give an HLO sharding)");
    }
    absl::StatusOr<spmd::PartitionSpec> spec = spmd::PartitionSpec::Parse(options.sharding);
    if (!spec.ok()) return Fail(kExitUsageError, std::string(spec.status().message()));
    absl::StatusOr<ir::Sharding> converted =
        spmd::PartitionSpecToSharding(*spec, *mesh, spec->rank());
    if (!converted.ok()) return Fail(kExitUsageError, std::string(converted.status().message()));
    sharding = *converted;
  }
  std::vector<int64_t> dims = *shape;
  if (dims.empty() && sharding.kind() == ir::Sharding::Kind::kTiled) {
    // Without a shape, one element per tile shows the layout.
    dims.assign(sharding.tile_assignment().dimensions.begin(),
                sharding.tile_assignment().dimensions.begin() + sharding.TiledDataRank());
  }
  view.color = options.format == "text" && !options.no_color && options.output.empty() &&
               isatty(fileno(stdout));
  absl::StatusOr<std::string> picture = options.format == "svg"
                                            ? debug::ShardingSvg(sharding, dims, view)
                                            : debug::VisualizeSharding(sharding, dims, view);
  if (!picture.ok()) return Fail(kExitUsageError, std::string(picture.status().message()));
  if (options.output.empty()) {
    fmt::print("{}", *picture);
    return kExitOk;
  }
  std::ofstream file(options.output);
  file << *picture;
  if (!file) return Fail(kExitRuntimeError, fmt::format("cannot write {}", options.output));
  return kExitOk;
}

}  // namespace

void RegisterVizCommand(CLI::App& app) {
  auto options = std::make_shared<VizOptions>();
  CLI::App* command =
      app.add_subcommand("viz", "Draw which devices hold which tile of a tensor under a sharding");
  command
      ->add_option("sharding", options->sharding,
                   "HLO sharding, or a partition spec such as \"(1, None)\" with --mesh")
      ->required();
  command->add_option("--shape", options->shape, "Tensor dims, e.g. 8,32 (adds index ranges)");
  command->add_option("--mesh", options->mesh, "Mesh for a partition spec: 2x4 or 2x4:dp,tp");
  command->add_flag("--no-color", options->no_color, "No colours even on a terminal");
  command->add_option("--format", options->format, "text (default) or svg");
  command->add_option("--output", options->output, "Write the picture to FILE");
  command->callback([options] { CommandExitCode() = RunViz(*options); });
}

}  // namespace vkspmd::cli
