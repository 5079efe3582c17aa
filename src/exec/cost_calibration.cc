// Timing the calibration programs on the mesh devices and fitting auto-sharding's cost model to
// them: every program is a per-device module that all devices run at once, as a step does.
#include "src/exec/cost_calibration.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <utility>

#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/debug/graph_analysis.h"
#include "src/exec/mesh_program.h"
#include "src/ir/parser.h"

namespace vkspmd::exec {
namespace {

using spmd::CollectiveKind;

constexpr int64_t kBaseElements = 8;
constexpr int64_t kTinyDotSize = 8;

// f32 elements of a collective's input of about `bytes`, a multiple of the group size (the
// reduce-scatter and all-to-all split it).
int64_t Elements(int64_t bytes, int64_t group) {
  return std::max<int64_t>(group, bytes / 4 / group * group);
}

// `name` says what the program times (VKSPMD_DEBUG=1 prints it with the time). The result
// aliases parameter 0 (every program's result has its shape): run after run, the result comes back
// in the donated argument's buffer, as a training step's parameters do, so no run allocates (and
// first touches) a new result buffer.
std::string Header(int64_t devices, const std::string& name) {
  return fmt::format(
      "HloModule {}, num_partitions={}, input_output_alias={{ {{}}: (0, {{}}, may-alias) }}\n\n"
      "%add (a: f32[], b: f32[]) -> f32[] {{\n  %a = f32[] parameter(0)\n"
      "  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(%a, %b)\n}}\n\n",
      name, devices);
}

std::string NegateProgram(int64_t devices, int64_t elements) {
  return Header(devices, fmt::format("negate_{}", elements)) +
         fmt::format(
             "ENTRY %main (p: f32[{0}]) -> f32[{0}] {{\n"
             "  %p = f32[{0}] parameter(0)\n"
             "  ROOT %n = f32[{0}] negate(%p)\n}}\n",
             elements);
}

// kChainOps elementwise ops chained on one value (x·0.5 + 0.5, its square root, 0.5 over it; four
// times): they fuse into one kernel reading and writing `elements` once, so against the negate of
// as many elements they time an elementwise op's work apart from its bytes.
std::string ChainProgram(int64_t devices, int64_t elements) {
  std::string text = Header(devices, fmt::format("chain_{}x{}", kChainOps, elements)) +
                     fmt::format(
                         "ENTRY %main (p: f32[{0}]) -> f32[{0}] {{\n  %x0 = f32[{0}] parameter(0)\n"
                         "  %half = f32[] constant(0.5)\n"
                         "  %h = f32[{0}] broadcast(%half), dimensions={{}}\n",
                         elements);
  for (int k = 0; k < kChainOps / 4; ++k) {
    const std::string root = k + 1 == kChainOps / 4 ? "ROOT " : "";
    text += fmt::format(
        "  %m{0} = f32[{1}] multiply(%x{0}, %h)\n  %a{0} = f32[{1}] add(%m{0}, %h)\n"
        "  %s{0} = f32[{1}] sqrt(%a{0})\n  {2}%x{3} = f32[{1}] divide(%h, %s{0})\n",
        k, elements, root, k + 1);
  }
  return text + "}\n";
}

// `count` dots chained x·w·w·…, each M×M by M×M: none can fuse with the next.
std::string DotsProgram(int64_t devices, int64_t m, int count) {
  std::string text = Header(devices, fmt::format("dots_{}x{}", count, m)) +
                     fmt::format(
                         "ENTRY %main (x: f32[{0},{0}], w: f32[{0},{0}]) -> "
                         "f32[{0},{0}] {{\n  %d0 = f32[{0},{0}] parameter(0)\n"
                         "  %w = f32[{0},{0}] parameter(1)\n",
                         m);
  for (int k = 1; k <= count; ++k) {
    text += fmt::format(
        "  {}%d{} = f32[{},{}] dot(%d{}, %w), lhs_contracting_dims={{1}}, "
        "rhs_contracting_dims={{0}}\n",
        k == count ? "ROOT " : "", k, m, m, k - 1);
  }
  return text + "}\n";
}

std::string GroupsText(const std::vector<std::vector<int64_t>>& groups) {
  std::vector<std::string> parts;
  for (const std::vector<int64_t>& group : groups) {
    parts.push_back(fmt::format("{{{}}}", fmt::join(group, ",")));
  }
  return fmt::format("{{{}}}", fmt::join(parts, ","));
}

// `chain` collectives of `kind` along `axis`, each followed by the kernel that brings its result
// back to the input's shape: x(k) = restore(collective(x(k-1))).
std::string CollectiveProgram(const spmd::Mesh& mesh, int64_t axis, CollectiveKind kind,
                              int64_t elements, int chain) {
  const std::vector<std::vector<int64_t>> groups = mesh.GroupsAlong({axis});
  const int64_t n = mesh.axis_size(axis);
  const std::string replica_groups = GroupsText(groups);
  std::vector<std::string> pairs;
  for (const std::vector<int64_t>& group : groups) {
    for (size_t i = 0; i < group.size(); ++i) {
      pairs.push_back(fmt::format("{{{},{}}}", group[i], group[(i + 1) % group.size()]));
    }
  }
  std::string text =
      Header(mesh.device_count(),
             fmt::format("{}_axis{}_{}x{}_elements", std::string(spmd::CollectiveKindName(kind)),
                         axis, chain, elements)) +
      fmt::format(
          "ENTRY %main (p: f32[{0}]) -> f32[{0}] {{\n  %x0 = f32[{0}] parameter(0)\n"
          "  %half = f32[] constant(0.5)\n"
          "  %h = f32[{0}] broadcast(%half), dimensions={{}}\n",
          elements);
  for (int k = 1; k <= chain; ++k) {
    const std::string root = k == chain ? "ROOT " : "";
    const std::string common = fmt::format("channel_id={}, replica_groups={}", k, replica_groups);
    // The collective's result shape and attributes; then the kernel restoring the input's shape
    // (a multiply where the shape stays).
    int64_t result = elements;
    std::string attributes;
    std::string restore = fmt::format("{}%x{} = f32[{}] multiply(%c{}, %h)", root, k, elements, k);
    switch (kind) {
      case CollectiveKind::kAllReduce:
        attributes = common + ", use_global_device_ids=true, to_apply=%add";
        break;
      case CollectiveKind::kAllGather:
        result = elements * n;
        attributes = common + ", dimensions={0}, use_global_device_ids=true";
        restore =
            fmt::format("{0}%x{1} = f32[{2}] slice(%c{1}), slice={{[0:{2}]}}", root, k, elements);
        break;
      case CollectiveKind::kReduceScatter:
        result = elements / n;
        attributes = common + ", use_global_device_ids=true, dimensions={0}, to_apply=%add";
        restore = fmt::format(
            "%b{0} = f32[{1},{2}] broadcast(%c{0}), dimensions={{1}}\n"
            "  {3}%x{0} = f32[{4}] reshape(%b{0})",
            k, n, result, root, elements);
        break;
      case CollectiveKind::kAllToAll:
        attributes = common + ", dimensions={0}";
        break;
      case CollectiveKind::kCollectivePermute:
        attributes =
            fmt::format("channel_id={}, source_target_pairs={{{}}}", k, fmt::join(pairs, ","));
        break;
    }
    text += fmt::format("  %c{} = f32[{}] {}(%x{}), {}\n  {}\n", k, result,
                        std::string(spmd::CollectiveKindName(kind)), k - 1, attributes, restore);
  }
  return text + "}\n";
}

// Median wall seconds of one run of `text` on every device at once (arguments on the devices,
// results left there), after a warm-up run.
absl::StatusOr<double> TimeProgram(const std::string& text, const spmd::Mesh& mesh,
                                   const std::vector<runtime::MeshDevice*>& devices, int repeats) {
  VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<ir::Module> module, ir::ParseAndVerifyModule(text));
  std::vector<ir::Shape> parameters;
  for (const ir::Instruction* parameter : module->entry()->parameters()) {
    parameters.push_back(parameter->shape());
  }
  std::unique_ptr<MeshProgram> program = MeshProgram::FromPerDeviceModule(std::move(module), mesh);
  VKSPMD_RETURN_IF_ERROR(program->Compile(devices));
  std::vector<std::unique_ptr<ShardedBuffer>> owned;
  for (size_t k = 0; k < parameters.size(); ++k) {
    VKSPMD_ASSIGN_OR_RETURN(owned.emplace_back(), program->Scatter(ir::Literal(parameters[k]), k));
  }
  std::vector<bool> donate(parameters.size(), false);
  donate[0] = program->aliased_parameters().count(0) > 0;
  std::vector<double> seconds;
  for (int r = 0; r <= repeats; ++r) {
    std::vector<ShardedBuffer*> arguments;
    for (const std::unique_ptr<ShardedBuffer>& argument : owned)
      arguments.push_back(argument.get());
    const auto start = std::chrono::steady_clock::now();
    VKSPMD_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<ShardedBuffer>> results,
                            program->Run(arguments, donate));
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r > 0) seconds.push_back(elapsed);  // the first run warms caches and allocators
    if (donate[0]) owned[0] = std::move(results.at(0));  // the next run's argument
  }
  std::sort(seconds.begin(), seconds.end());
  if (debug::DebugEnabled()) {
    std::fprintf(stderr, "vkspmd: calibration: %.3f ms (%.3f..%.3f) for %s\n",
                 seconds[seconds.size() / 2] * 1e3, seconds.front() * 1e3, seconds.back() * 1e3,
                 text.substr(0, text.find(',')).c_str());
  }
  return seconds[seconds.size() / 2];
}

// The unknowns of the kernel fit: seconds per dispatch, flop, byte and element op.
constexpr int kUnits = 4;
using Units = std::array<double, kUnits>;

double Charge(const ProgramLoad& load, const Units& unit) {
  return load.kernels * unit[0] + load.flops * unit[1] + load.bytes * unit[2] +
         load.element_ops * unit[3];
}

// Solves a·u = b by Gaussian elimination with partial pivoting; nullopt when singular.
std::optional<Units> Solve(std::array<Units, kUnits> a, Units b) {
  for (int c = 0; c < kUnits; ++c) {
    int pivot = c;
    for (int r = c + 1; r < kUnits; ++r) {
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    }
    if (a[pivot][c] == 0) return std::nullopt;
    std::swap(a[c], a[pivot]);
    std::swap(b[c], b[pivot]);
    for (int r = 0; r < kUnits; ++r) {
      if (r == c) continue;
      const double factor = a[r][c] / a[c][c];
      for (int k = 0; k < kUnits; ++k) a[r][k] -= factor * a[c][k];
      b[r] -= factor * b[c];
    }
  }
  Units u;
  for (int r = 0; r < kUnits; ++r) u[r] = b[r] / a[r][r];
  return u;
}

}  // namespace

// Element ops as the model counts them (every instruction's iteration space, at the element
// rate): the parameter's elements, and the negate's or each chained op's, and the broadcast's.
ProgramLoad BaseLoad() { return {1, 0, 8.0 * kBaseElements, 2.0 * kBaseElements}; }

ProgramLoad TinyDotsLoad() {
  const double m = kTinyDotSize;
  return {kTinyDots, kTinyDots * 2 * m * m * m, kTinyDots * 3 * 4 * m * m, 0};
}

ProgramLoad BigDotsLoad(int64_t dot_size) {
  const double m = static_cast<double>(dot_size);
  return {kBigDots, kBigDots * 2 * m * m * m, kBigDots * 3 * 4 * m * m, 0};
}

ProgramLoad ElementwiseLoad(int64_t elements) {
  const double e = static_cast<double>(elements);
  return {1, 0, 8 * e, 2 * e};
}

ProgramLoad ElementwiseChainLoad(int64_t elements) {
  const double e = static_cast<double>(elements);
  return {1, 0, 8 * e, (kChainOps + 2) * e};
}

ProgramLoad CollectiveProgramLoad(CollectiveKind kind, int64_t bytes, int64_t group,
                                  const CalibrationOptions& options) {
  const double e = static_cast<double>(Elements(bytes, group));
  // Each restoring kernel writes the input's elements and reads as many (a reduce-scatter's
  // broadcast reads 1/n of them).
  const double read = kind == CollectiveKind::kReduceScatter ? 4 * e / group : 4 * e;
  return {static_cast<double>(options.chain), 0, options.chain * (4 * e + read), options.chain * e};
}

int64_t ModelBytes(CollectiveKind kind, int64_t bytes, int64_t group) {
  const int64_t input = 4 * Elements(bytes, group);
  return kind == CollectiveKind::kAllGather ? input * group : input;
}

absl::StatusOr<spmd::CostModel> FitCostModel(const CalibrationTimings& timings,
                                             const spmd::Mesh& mesh,
                                             const CalibrationOptions& options) {
  const ProgramLoad base = BaseLoad();
  const std::array<ProgramLoad, kUnits> loads = {
      TinyDotsLoad(), BigDotsLoad(timings.dot_size), ElementwiseLoad(timings.elementwise_elements),
      ElementwiseChainLoad(timings.elementwise_elements)};
  const Units measured = {timings.tiny_dots, timings.big_dots, timings.elementwise,
                          timings.elementwise_chain};
  std::array<Units, kUnits> a;
  Units b;
  for (int r = 0; r < kUnits; ++r) {
    a[r] = {loads[r].kernels - base.kernels, loads[r].flops - base.flops,
            loads[r].bytes - base.bytes, loads[r].element_ops - base.element_ops};
    b[r] = measured[r] - timings.base;
  }
  // Every program does more than the base one, so a difference of 0 or less is noise.
  const bool ordered = std::all_of(b.begin(), b.end(), [](double d) { return d > 0; });
  std::optional<Units> unit = Solve(a, b);
  double fixed = 0;  // a run's cost beyond its kernels
  if (ordered && unit.has_value() && (*unit)[1] > 0 && (*unit)[3] > 0) {
    // Noise can make the small terms come out negative: a kernel never costs less than nothing.
    (*unit)[0] = std::max(0.0, (*unit)[0]);
    (*unit)[2] = std::max(0.0, (*unit)[2]);
    fixed = std::max(0.0, timings.base - Charge(base, *unit));
  } else {
    // On a busy machine the differences between the programs can drown in noise (a CI run
    // measured 8 tiny dots faster than one negation). Each program is then charged its whole run,
    // as swamped collectives are below: an overestimate of every cost, never a free flop.
    if (!(timings.base > 0 && timings.big_dots > 0 && timings.elementwise > 0 &&
          timings.elementwise_chain > 0)) {
      return absl::InternalError(fmt::format(
          "calibration: the programs did not take time (base {:.3g} s, {}^3 dots {:.3g} s, "
          "elementwise {:.3g} s, chain {:.3g} s): the device did not time as a device does",
          timings.base, timings.dot_size, timings.big_dots, timings.elementwise,
          timings.elementwise_chain));
    }
    const ProgramLoad big = loads[1], elementwise = loads[2], chain = loads[3];
    unit =
        Units{timings.base, timings.big_dots / big.flops, timings.elementwise / elementwise.bytes,
              timings.elementwise_chain / chain.element_ops};
    std::fprintf(stderr,
                 "vkspmd: calibration: the kernel timings drowned in noise (base %.3g s, %d tiny "
                 "dots %.3g s, %d %lld^3 dots %.3g s, %d-op chain %.3g s); each program is charged "
                 "its whole run\n",
                 timings.base, static_cast<int>(kTinyDots), timings.tiny_dots,
                 static_cast<int>(kBigDots), static_cast<long long>(timings.dot_size),
                 timings.big_dots, static_cast<int>(kChainOps), timings.elementwise_chain);
  }
  spmd::CostModel model = spmd::CostModel::Default(mesh);
  model.kernel_seconds = (*unit)[0];
  model.flops_per_second = 1 / (*unit)[1];
  model.bytes_per_second = (*unit)[2] > 0 ? 1 / (*unit)[2] : 0;
  model.element_ops_per_second = 1 / (*unit)[3];
  model.run_seconds = fixed;

  if (timings.collectives.size() != static_cast<size_t>(mesh.axis_count())) {
    return absl::InvalidArgumentError("calibration: collective timings for another mesh");
  }
  for (int64_t axis = 0; axis < mesh.axis_count(); ++axis) {
    const int64_t n = mesh.axis_size(axis);
    // The volume CostModel::Collective charges β for: its own formula at α 0, β 1.
    spmd::CostModel unit_beta = model;
    unit_beta.axes[axis].fill(spmd::AlphaBeta{0, 1});
    for (int kind = 0; kind < spmd::kCollectiveKinds; ++kind) {
      const auto k = static_cast<CollectiveKind>(kind);
      if (n <= 1) {
        model.axes[axis][kind] = {0, 0};
        continue;
      }
      const std::vector<double>& seconds = timings.collectives[axis].at(kind);
      std::vector<std::pair<double, double>> samples, whole_runs;
      bool swamped = false;
      for (size_t s = 0; s < options.collective_bytes.size(); ++s) {
        const int64_t bytes = options.collective_bytes[s];
        const double kernels = Charge(CollectiveProgramLoad(k, bytes, n, options), *unit);
        const double volume = unit_beta.Collective(k, axis, ModelBytes(k, bytes, n), mesh);
        const double net = (seconds.at(s) - fixed - kernels) / options.chain;
        swamped |= !(net > 0);
        samples.emplace_back(volume, net);
        whole_runs.emplace_back(volume, seconds.at(s) / options.chain);
      }
      // On a busy machine the run's fixed cost and kernels can measure more than the whole run;
      // a collective still takes time, so it is charged its share of the whole run instead (an
      // overestimate, never a free collective).
      model.axes[axis][kind] = spmd::FitAlphaBeta(swamped ? whole_runs : samples);
    }
  }
  return model;
}

absl::StatusOr<CalibrationTimings> TimeCalibrationPrograms(
    const spmd::Mesh& mesh, const std::vector<runtime::MeshDevice*>& devices,
    const CalibrationOptions& options) {
  if (devices.size() != static_cast<size_t>(mesh.device_count())) {
    return absl::InvalidArgumentError(
        fmt::format("calibration: {} devices for the mesh {}", devices.size(), mesh.ToString()));
  }
  if (options.collective_bytes.empty() || options.chain < 1 || options.repeats < 1) {
    return absl::InvalidArgumentError("calibration: no sizes, chain or repeats to time");
  }
  const int64_t n = mesh.device_count();
  const int repeats = options.repeats;
  CalibrationTimings timings;
  VKSPMD_ASSIGN_OR_RETURN(timings.base,
                          TimeProgram(NegateProgram(n, kBaseElements), mesh, devices, repeats));
  VKSPMD_ASSIGN_OR_RETURN(timings.tiny_dots, TimeProgram(DotsProgram(n, kTinyDotSize, kTinyDots),
                                                         mesh, devices, repeats));
  // The big programs must stand out of a few dispatches' time (and its noise), else the flop and
  // byte rates are lost in it: grown until they do (a GPU does a 256³ dot in microseconds).
  const double dispatches = 4 * std::max(0.0, timings.tiny_dots - timings.base) / (kTinyDots - 1);
  timings.dot_size = options.dot_size;
  for (;;) {
    VKSPMD_ASSIGN_OR_RETURN(
        timings.big_dots,
        TimeProgram(DotsProgram(n, timings.dot_size, kBigDots), mesh, devices, repeats));
    if (timings.big_dots - timings.base > dispatches || timings.dot_size >= 4096) break;
    timings.dot_size *= 2;
  }
  timings.elementwise_elements = options.elementwise_elements;
  for (;;) {
    VKSPMD_ASSIGN_OR_RETURN(
        timings.elementwise,
        TimeProgram(NegateProgram(n, timings.elementwise_elements), mesh, devices, repeats));
    if (timings.elementwise - timings.base > dispatches ||
        timings.elementwise_elements >= (int64_t{1} << 26)) {
      break;
    }
    timings.elementwise_elements *= 4;
  }
  VKSPMD_ASSIGN_OR_RETURN(
      timings.elementwise_chain,
      TimeProgram(ChainProgram(n, timings.elementwise_elements), mesh, devices, repeats));
  timings.collectives.resize(mesh.axis_count());
  for (int64_t axis = 0; axis < mesh.axis_count(); ++axis) {
    timings.collectives[axis].resize(spmd::kCollectiveKinds);
    if (mesh.axis_size(axis) <= 1) continue;
    for (int kind = 0; kind < spmd::kCollectiveKinds; ++kind) {
      for (int64_t bytes : options.collective_bytes) {
        const std::string text =
            CollectiveProgram(mesh, axis, static_cast<CollectiveKind>(kind),
                              Elements(bytes, mesh.axis_size(axis)), options.chain);
        VKSPMD_ASSIGN_OR_RETURN(double seconds, TimeProgram(text, mesh, devices, repeats));
        timings.collectives[axis][kind].push_back(seconds);
      }
    }
  }
  return timings;
}

}  // namespace vkspmd::exec
