// `vkspmd train`: sharded training of a small model on the mesh devices, the library's main job.
// The model is built with vkspmd::nn, sharded by a strategy (only annotations), and trained with
// AdamW (or SGD); each step (forward, backward, update) is traced into one graph that compiles
// once for the whole run, its parameters and optimizer state updated in place on the devices.
// A progress bar (or log lines), a summary, and the loss curve as CSV and SVG.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <memory>
#include <optional>

#include "fmt/format.h"
#include "src/checkpoint/step_directory.h"
#include "src/debug/metrics.h"
#include "src/spmd/mesh.h"
#include "tools/train/loss_curve.h"
#include "tools/train/progress.h"
#include "tools/train/text_corpus.h"
#include "tools/vkspmd/command.h"
#include "vkspmd/auto_sharding.h"
#include "vkspmd/autograd.h"
#include "vkspmd/checkpoint.h"
#include "vkspmd/lazy.h"
#include "vkspmd/nn.h"
#include "vkspmd/optim.h"
#include "vkspmd/parallel.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::cli {
namespace {

struct TrainOptions {
  std::string model = "transformer";
  std::string mesh = "2x2";
  std::string strategy = "dp+tp";
  int64_t steps = 300;
  int64_t batch = 8;
  int64_t seq = 32;
  double lr = 3e-3;
  uint64_t seed = 0;
  std::string data = train::kDefaultCorpus;
  std::string optimizer = "adamw";
  int64_t d_model = 64;
  int64_t heads = 4;
  int64_t layers = 2;
  int64_t hidden = 64;  // MLP hidden width.
  int64_t features = 16;
  std::string out = "vkspmd-train";
  int64_t log_every = 10;
  std::string checkpoint_dir;  // Empty: no checkpoints.
  int64_t save_every = 0;      // 0: only at the end (and on preemption).
  int64_t keep = 0;            // 0: keep every step.
  bool async_save = false;
  bool resume = false;
  bool parameter_digest = false;
  std::string trace;                // Empty: no profiler trace.
  std::string trace_steps = "1:4";  // A:B, steps A to B-1 (0-based) in the trace.
  std::string precision = "f32";    // f32, bf16 or f16 (mixed precision, f32 master weights).
  // --strategy auto: auto-sharding's ILP (vkspmd/auto_sharding.h).
  double memory_limit_mib = 0;  // 0: no limit
  double time_limit_s = 30;
  // defaults, measured or a file; empty: measured (on the devices this run trains on) in a job of
  // one process, else the defaults (every process must choose the same plan).
  std::string cost_model;
};

// The compute dtype of --precision (nn::Module::set_compute_dtype).
DType PrecisionDType(const std::string& precision) {
  if (precision == "f32") return float32;
  if (precision == "bf16") return bfloat16;
  if (precision == "f16") return float16;
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("--precision {}: expected f32, bf16 or f16", precision));
}

// How a run's summary names its precision.
std::string PrecisionText(const std::string& precision) {
  if (precision == "bf16") return "bf16 mixed precision (f32 master weights)";
  if (precision == "f16") return "f16 mixed precision with loss scaling (f32 master weights)";
  return "f32";
}

// Where a float16 run's loss scaler is kept in a checkpoint's metadata: "<scale> <tracker>".
constexpr char kLossScaleKey[] = "vkspmd.train.loss_scale";

// --trace-steps A:B as the first step traced and the one after the last.
std::pair<int64_t, int64_t> ParseTraceSteps(const std::string& text) {
  int64_t first = 0, end = 0;
  char separator = 0, extra = 0;
  if (std::sscanf(text.c_str(), "%ld%c%ld%c", &first, &separator, &end, &extra) != 3 ||
      separator != ':' || first < 0 || end <= first) {
    throw Error(
        ErrorCode::kInvalidArgument,
        fmt::format("--trace-steps {}: expected A:B with 0 <= A < B (steps A to B-1)", text));
  }
  return {first, end};
}

// The shape of --mesh; the strategy names the axes (nn::strategy_mesh).
std::vector<int64_t> ParseMeshShape(const std::string& text) {
  absl::StatusOr<spmd::Mesh> mesh = spmd::Mesh::Parse(text);
  if (!mesh.ok() || !mesh->axis_names().empty()) {
    throw Error(
        ErrorCode::kInvalidArgument,
        fmt::format("--mesh {}: {}", text,
                    mesh.ok() ? "give only the shape (e.g. 2x2); the strategy names the axes"
                              : std::string(mesh.status().message())));
  }
  return mesh->shape();
}

std::string MemoryText(uint64_t bytes) {
  if (bytes >= (1u << 20)) return fmt::format("{:.1f} MiB", bytes / 1048576.0);
  return fmt::format("{:.1f} KiB", bytes / 1024.0);
}

// --strategy auto's mesh: the --mesh shape as it is, its axes named x, y, z, ...
Mesh AutoMesh(const std::vector<int64_t>& shape) {
  std::vector<std::string> names;
  for (size_t axis = 0; axis < shape.size(); ++axis) names.push_back(std::string(1, 'x' + axis));
  return Mesh(shape, {}, names);
}

// The options of auto_shard from --memory-limit-mib, --time-limit and --cost-model (errors for
// them with another strategy, which would ignore them).
std::optional<AutoShardOptions> AutoOptions(const TrainOptions& options) {
  if (options.strategy != "auto") {
    if (options.memory_limit_mib != 0 || options.time_limit_s != 30 ||
        !options.cost_model.empty()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "--memory-limit-mib, --time-limit and --cost-model need --strategy auto");
    }
    return std::nullopt;
  }
  if (!(options.memory_limit_mib >= 0) || !(options.time_limit_s > 0)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--memory-limit-mib {} and --time-limit {}: expected a limit >= 0 "
                            "(0: none) and a time > 0",
                            options.memory_limit_mib, options.time_limit_s));
  }
  AutoShardOptions auto_options;
  if (options.memory_limit_mib > 0) {
    auto_options.memory_limit_bytes =
        std::max<int64_t>(1, static_cast<int64_t>(options.memory_limit_mib * 1048576.0));
  }
  auto_options.time_limit_seconds = options.time_limit_s;
  const std::string cost_model = !options.cost_model.empty()        ? options.cost_model
                                 : distributed::process_count() > 1 ? "defaults"
                                                                    : "measured";
  if (cost_model == "measured") {
    auto_options.measure_cost_model = true;
  } else if (cost_model != "defaults") {
    std::error_code error;
    if (!std::filesystem::is_regular_file(cost_model, error)) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("--cost-model {}: expected defaults, measured or a cost model file "
                              "(no such file)",
                              cost_model));
    }
    auto_options.cost_model_file = cost_model;
  }
  return auto_options;
}

// The plan auto_shard chose: its modelled cost and solve, then each parameter's sharding (the
// optimizer state's only counted).
void PrintAutoPlan(const AutoShardPlan& plan, const nn::Module& model, size_t state_tensors) {
  const auto named = model.named_parameters();
  size_t sharded_state = 0;
  for (size_t i = named.size(); i < plan.shardings.size(); ++i) {
    sharded_state += plan.shardings[i] != "{replicated}" ? 1 : 0;
  }
  fmt::print(
      "  auto-sharding plan: modelled {:.3f} ms/step (compute {:.3f}, all-reduces {:.3f}, "
      "resharding {:.3f}), peak {} per device; {} instructions, {} variables, solved in {:.2f} s "
      "({})\n",
      1e3 * plan.modelled_seconds(), 1e3 * plan.compute_seconds, 1e3 * plan.communication_seconds,
      1e3 * plan.resharding_seconds, MemoryText(plan.peak_memory_bytes), plan.instructions,
      plan.variables, plan.solve_seconds,
      plan.optimal                 ? "optimal"
      : plan.stopped_at_time_limit ? "stopped at the time limit: best plan found"
                                   : "not proven optimal");
  fmt::print("    cost model: {}\n", plan.cost_model);
  for (size_t i = 0; i < named.size() && i < plan.shardings.size(); ++i) {
    fmt::print("    {} {} {}\n", named[i].first, plan.shardings[i], plan.axes[i]);
  }
  fmt::print("    optimizer state: {} of {} tensors sharded\n", sharded_state, state_tensors);
  std::fflush(stdout);
}

// One model and its data, behind one interface for the loop.
class Task {
 public:
  virtual ~Task() = default;
  virtual nn::Module& model() = 0;
  // The loss of batch `step` (pending).
  virtual Tensor Loss(int64_t step) = 0;
  // Tokens (or samples) per step, for the throughput.
  virtual int64_t ItemsPerStep() const = 0;
  virtual const char* ItemName() const = 0;
};

class LanguageModelTask : public Task {
 public:
  LanguageModelTask(const TrainOptions& options, train::TextCorpus corpus)
      : options_(options), corpus_(std::move(corpus)) {
    nn::TransformerConfig config;
    config.vocab = corpus_.vocabulary_size();
    config.d_model = options.d_model;
    config.heads = options.heads;
    config.layers = options.layers;
    config.max_seq = options.seq;
    model_ = std::make_unique<nn::TransformerLM>(config);
  }
  nn::Module& model() override { return *model_; }
  Tensor Loss(int64_t step) override {
    absl::StatusOr<train::TextCorpus::Batch> batch =
        corpus_.Sample(options_.seed, step, options_.batch, options_.seq);
    if (!batch.ok())
      throw Error(ErrorCode::kInvalidArgument, std::string(batch.status().message()));
    const std::vector<int64_t> shape = {options_.batch, options_.seq};
    Tensor tokens = model_->shard_input(tensor(std::span<const int32_t>(batch->inputs), shape));
    Tensor targets = model_->shard_input(tensor(std::span<const int32_t>(batch->targets), shape));
    return model_->loss(tokens, targets);
  }
  int64_t ItemsPerStep() const override { return options_.batch * options_.seq; }
  const char* ItemName() const override { return "tokens"; }

 private:
  const TrainOptions& options_;
  train::TextCorpus corpus_;
  std::unique_ptr<nn::TransformerLM> model_;
};

class RegressionTask : public Task {
 public:
  explicit RegressionTask(const TrainOptions& options)
      : options_(options),
        model_(std::make_unique<nn::MlpRegressor>(options.features, options.hidden, 1)) {}
  nn::Module& model() override { return *model_; }
  Tensor Loss(int64_t step) override {
    train::RegressionBatch batch =
        train::SampleRegression(options_.seed, step, options_.batch, options_.features, 1);
    Tensor x = model_->shard_input(
        tensor(std::span<const float>(batch.x), {options_.batch, options_.features}));
    Tensor y = model_->shard_input(tensor(std::span<const float>(batch.y), {options_.batch, 1}));
    return model_->loss(x, y);
  }
  int64_t ItemsPerStep() const override { return options_.batch; }
  const char* ItemName() const override { return "samples"; }

 private:
  const TrainOptions& options_;
  std::unique_ptr<nn::MlpRegressor> model_;
};

// Graphs run on the lazy runtime's worker thread after mark_step returns. Leaving main while one
// still runs (an error thrown after the initial mark_step) would tear down the drivers' and
// the validation layer's statics under it, so every way out of Train waits for them first.
struct WaitForDevicesOnReturn {
  ~WaitForDevicesOnReturn() {
    try {
      wait_device_ops();
    } catch (...) {  // The error that got us here is the one to report.
    }
  }
};

// The loss became NaN or infinite: training stops there (exit kExitDiverged).
struct Diverged {
  int64_t step;
  double loss;
};

// SIGTERM arrived and the step reached was saved: training stops there (exit kExitPreempted).
struct Preempted {
  int64_t step;
};

// The training configuration a checkpoint records (and a resumed run prints beside its own).
std::string ConfigText(const TrainOptions& options) {
  return fmt::format(
      "model {} d_model {} heads {} layers {} hidden {} features {} optimizer {} "
      "lr {} seed {} batch {} seq {}{}",
      options.model, options.d_model, options.heads, options.layers, options.hidden,
      options.features, options.optimizer, options.lr, options.seed, options.batch, options.seq,
      options.precision == "f32" ? "" : " precision " + options.precision);
}

// Refuses options no run could use, before any work: non-finite or negative learning rates, and
// sizes that are not positive or beyond what one step could hold in memory.
void CheckOptions(const TrainOptions& options) {
  if (!std::isfinite(options.lr) || options.lr < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--lr {}: expected a finite, non-negative learning rate", options.lr));
  }
  constexpr int64_t kMaxSize = int64_t{1} << 20;
  const std::pair<const char*, int64_t> sizes[] = {{"--steps", options.steps},
                                                   {"--batch", options.batch},
                                                   {"--seq", options.seq},
                                                   {"--d-model", options.d_model},
                                                   {"--heads", options.heads},
                                                   {"--layers", options.layers},
                                                   {"--hidden", options.hidden},
                                                   {"--features", options.features},
                                                   {"--log-every", options.log_every}};
  if (options.save_every < 0 || options.keep < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--save-every {} and --keep {}: expected 0 or more", options.save_every,
                            options.keep));
  }
  (void)ParseTraceSteps(options.trace_steps);
  if (options.checkpoint_dir.empty() &&
      (options.resume || options.async_save || options.save_every > 0 || options.keep > 0)) {
    throw Error(ErrorCode::kInvalidArgument,
                "--resume, --save-every, --keep and --async-save need --checkpoint-dir");
  }
  for (const auto& [flag, value] : sizes) {
    if (value < 1 || (value > kMaxSize && std::string(flag) != "--steps")) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("{} {}: expected 1 to {}", flag, value, kMaxSize));
    }
  }
  // The transformer's activations are at least batch x seq x d_model floats per step; the MLP's
  // batch x max(hidden, features). Past 2^28 elements (1 GiB) a step is not a "small model".
  constexpr int64_t kMaxActivation = int64_t{1} << 28;
  const bool transformer = options.model == "transformer";
  const int64_t width = transformer ? options.d_model : std::max(options.hidden, options.features);
  const int64_t rows = transformer ? options.batch * options.seq : options.batch;
  if (rows > kMaxActivation / width) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--batch {}{} with width {}: one activation would hold more than 2^28 "
                            "values; use a smaller batch",
                            options.batch,
                            transformer ? fmt::format(" x --seq {}", options.seq) : "", width));
  }
}

// The latest step that every process of the job committed in its --checkpoint-dir/process-<p>
// (a process that died mid-save leaves the others a step ahead). Reading the other processes'
// directories needs a filesystem all of them see (one host, or a shared one).
std::optional<int64_t> CommonStep(const std::string& directory, int processes) {
  std::optional<std::vector<int64_t>> common;
  for (int process = 0; process < processes; ++process) {
    const std::string path = fmt::format("{}/process-{}", directory, process);
    absl::StatusOr<std::vector<int64_t>> steps = checkpoint::ListCommittedSteps(path);
    if (!steps.ok()) {
      throw Error(static_cast<ErrorCode>(steps.status().code()),
                  std::string(steps.status().message()));
    }
    if (!common.has_value()) {
      common = *steps;
      continue;
    }
    std::vector<int64_t> both;
    std::set_intersection(common->begin(), common->end(), steps->begin(), steps->end(),
                          std::back_inserter(both));
    common = std::move(both);
  }
  if (!common.has_value() || common->empty()) return std::nullopt;
  return common->back();
}

int Train(const TrainOptions& options) {
  const WaitForDevicesOnReturn wait_for_devices;
  if (options.model != "transformer" && options.model != "mlp") {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--model {}: expected mlp or transformer", options.model));
  }
  if (options.optimizer != "adamw" && options.optimizer != "sgd") {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--optimizer {}: expected adamw or sgd", options.optimizer));
  }
  CheckOptions(options);
  // Started by torchrun, mpirun or `vkspmd launch`: one job whose mesh spans every process's
  // devices (a job of this process alone otherwise).
  distributed::initialize();
  const int processes = distributed::process_count();
  // In a job of several processes each saves the shards of its own devices in its own
  // directory, --checkpoint-dir/process-<p>.
  const std::string checkpoint_dir =
      processes > 1 && !options.checkpoint_dir.empty()
          ? fmt::format("{}/process-{}", options.checkpoint_dir, distributed::process_index())
          : options.checkpoint_dir;
  const DType compute_dtype = PrecisionDType(options.precision);
  // Opening the checkpoint directory removes what a killed run left there; with --resume the
  // latest committed step is where this run starts.
  std::unique_ptr<CheckpointManager> checkpoints;
  std::optional<int64_t> resume_step;
  if (!options.checkpoint_dir.empty()) {
    checkpoints = std::make_unique<CheckpointManager>(
        checkpoint_dir, CheckpointOptions{.max_to_keep = options.keep, .save_on_preemption = true});
    if (options.resume) {
      resume_step = processes > 1 ? CommonStep(options.checkpoint_dir, processes)
                                  : checkpoints->latest_step();
    } else if (std::optional<int64_t> latest = checkpoints->latest_step()) {
      // Steps are never overwritten: a fresh run would fail at its first save.
      throw Error(ErrorCode::kAlreadyExists,
                  fmt::format("--checkpoint-dir {} already holds step {}; add --resume to "
                              "continue from it, or choose another directory",
                              options.checkpoint_dir, *latest));
    }
  }
  // Before any work: an unwritable --out is reported now, not after the last step.
  std::vector<double> losses;
  // Every process computes the same losses; each keeps its own curve (process 0's is --out).
  const std::string out =
      distributed::process_index() == 0
          ? options.out
          : fmt::format("{}/process-{}", options.out, distributed::process_index());
  absl::StatusOr<train::LossLog> loss_log = resume_step.has_value()
                                                ? train::LossLog::Resume(out, *resume_step, losses)
                                                : train::LossLog::Open(out);
  if (!loss_log.ok()) {
    throw Error(static_cast<ErrorCode>(loss_log.status().code()),
                fmt::format("--out: {}", loss_log.status().message()));
  }
  const std::optional<AutoShardOptions> auto_options = AutoOptions(options);
  const Mesh mesh = auto_options.has_value()
                        ? AutoMesh(ParseMeshShape(options.mesh))
                        : nn::strategy_mesh(options.strategy, ParseMeshShape(options.mesh));
  manual_seed(options.seed);
  std::unique_ptr<Task> task;
  if (options.model == "transformer") {
    absl::StatusOr<train::TextCorpus> corpus = train::TextCorpus::Load(options.data);
    if (!corpus.ok())
      throw Error(ErrorCode::kInvalidArgument, std::string(corpus.status().message()));
    task = std::make_unique<LanguageModelTask>(options, std::move(*corpus));
  } else {
    task = std::make_unique<RegressionTask>(options);
  }
  // Auto-sharding annotates nothing: auto_shard plans the first step's graph.
  if (!auto_options.has_value()) nn::apply_strategy(task->model(), mesh, options.strategy);
  task->model().set_compute_dtype(compute_dtype);
  // float16's range needs the loss scaled (bfloat16 has float32's exponent range).
  std::unique_ptr<optim::GradScaler> scaler;
  if (compute_dtype == float16) scaler = std::make_unique<optim::GradScaler>();
  std::vector<Tensor> parameters = task->model().parameters();
  set_memory_kind(parameters, MemoryKind::kParameter);
  std::unique_ptr<optim::Optimizer> optimizer;
  std::vector<Tensor> state;
  if (options.optimizer == "adamw") {
    auto adamw = std::make_unique<optim::AdamW>(parameters, options.lr);
    for (size_t i = 0; i < parameters.size(); ++i) {
      state.push_back(adamw->exp_avg(i));
      state.push_back(adamw->exp_avg_sq(i));
    }
    optimizer = std::move(adamw);
  } else {
    auto sgd = std::make_unique<optim::SGD>(parameters, options.lr, 0.9);
    for (size_t i = 0; i < parameters.size(); ++i) state.push_back(sgd->momentum_buffer(i));
    optimizer = std::move(sgd);
  }
  set_memory_kind(state, MemoryKind::kOptimizerState);
  CheckpointState checkpoint_state;
  checkpoint_state.add_module(task->model()).add_optimizer(*optimizer);
  checkpoint_state.metadata["vkspmd.train.config"] = ConfigText(options);
  int64_t first_step = 0;
  if (resume_step.has_value()) {
    checkpoints->restore(*resume_step, checkpoint_state);
    first_step = checkpoint_state.data_position;
    const std::string saved = checkpoint_state.metadata["vkspmd.train.config"];
    fmt::print("vkspmd train: resuming after step {} from {}\n", first_step,
               checkpoints->step_path(*resume_step));
    if (saved != ConfigText(options)) {
      fmt::print(stderr,
                 "vkspmd train: warning: the checkpoint was trained with {}; this run "
                 "uses {}\n",
                 saved, ConfigText(options));
    }
    checkpoint_state.metadata["vkspmd.train.config"] = ConfigText(options);
    double scale = 0;
    int64_t tracker = 0;
    if (scaler != nullptr && std::sscanf(checkpoint_state.metadata[kLossScaleKey].c_str(),
                                         "%lf %ld", &scale, &tracker) == 2) {
      scaler->load_state(scale, tracker);
    }
  } else if (options.resume) {
    fmt::print("vkspmd train: no committed step in {} to resume from; starting at step 0\n",
               options.checkpoint_dir);
  }
  mark_step();  // The initial parameters and the optimizer state, before the first step.
  const auto [trace_first, trace_end] = ParseTraceSteps(options.trace_steps);
  Metrics trace_metrics;     // At the start of the traced steps.
  std::string trace_report;  // Printed with the summary.
  auto stop_trace = [&](int64_t end) {
    profiler::stop_trace();  // Waits for the traced steps' work.
    const Metrics now = vkspmd::metrics();
    const double steps = static_cast<double>(end - std::max(trace_first, first_step));
    const double execute = now.execute_seconds - trace_metrics.execute_seconds;
    const double collectives = now.collective_seconds - trace_metrics.collective_seconds;
    trace_report = fmt::format(
        "  trace: steps {}-{} in {}: compute {:.2f} ms, collectives {:.2f} ms per step (vkspmd "
        "trace summarize {})\n",
        std::max(trace_first, first_step), end - 1, options.trace,
        1e3 * (execute - collectives) / steps, 1e3 * collectives / steps, options.trace);
  };
  fmt::print("vkspmd train: {} ({} parameters), {} on {}, {} steps of batch {}{}, {}, {}\n",
             options.model, task->model().parameter_count(), options.strategy, mesh.to_string(),
             options.steps, options.batch,
             options.model == "transformer" ? fmt::format(" x {} tokens", options.seq) : "",
             options.optimizer, PrecisionText(options.precision));
  std::fflush(stdout);

  train::Progress progress(stdout, options.steps, isatty(STDOUT_FILENO) != 0, options.log_every,
                           task->ItemName());
  // Steps done so far (the checkpoint's data position) and the saves of this run.
  auto save = [&](int64_t done, bool force) {
    checkpoint_state.data_position = done;
    if (scaler != nullptr) {
      checkpoint_state.metadata[kLossScaleKey] =
          fmt::format("{} {}", scaler->get_scale(), scaler->growth_tracker());
    }
    if (processes > 1) {
      // This process committed the step in an attempt that then failed before every process
      // had: it holds the same values (the runs are deterministic), so it is kept as it is.
      const std::vector<int64_t> saved = checkpoints->all_steps();
      if (std::find(saved.begin(), saved.end(), done) != saved.end()) return;
    }
    if (options.async_save) {
      checkpoints->save_async(done, checkpoint_state, force);
    } else {
      checkpoints->save(done, checkpoint_state, force);
    }
  };
  const auto start = std::chrono::steady_clock::now();
  // The first step compiles, and a later one may compile again (the second step's graph can
  // differ from the first's: state that was fresh becomes the previous step's output). The rates
  // shown are those of the steps after the last compilation: the steady window starts at
  // `window_start` (a count of reported steps), with the metrics and time of that moment.
  std::chrono::steady_clock::time_point first_done;
  double first_step_seconds = 0;
  Metrics first_metrics;
  int64_t window_start = 1;
  // The loss of step k is read after step k+1 is launched, so tracing and launching the next
  // step overlaps the devices' work on this one.
  Tensor pending_loss;
  int64_t reported = 0;  // Losses reported by this run.
  const std::string title = fmt::format("{} on {} ({}), lr {}", options.model, options.mesh,
                                        options.strategy, options.lr);
  auto report = [&](const Tensor& loss) {
    losses.push_back(loss.item());
    const int64_t step = first_step + ++reported;
    if (absl::Status appended = loss_log->Append(step, losses.back()); !appended.ok()) {
      throw Error(static_cast<ErrorCode>(appended.code()), std::string(appended.message()));
    }
    if (!std::isfinite(losses.back())) {
      progress.Finish();
      // The curve up to the step that diverged, for looking at what happened.
      (void)train::WriteLossSvg(out + "/loss.svg", losses, title);
      throw Diverged{step, losses.back()};
    }
    const auto now = std::chrono::steady_clock::now();
    const int64_t done = reported;
    double step_seconds = 0;
    if (done == 1) {
      first_done = now;
      first_step_seconds = std::chrono::duration<double>(now - start).count();
      first_metrics = vkspmd::metrics();
      step_seconds = first_step_seconds;
    } else if (debug::ReadMetrics().compile_count != first_metrics.compile_count) {
      // A step compiled (read without waiting, so the next step stays in flight): the window
      // restarts, once, with a waiting read so its counters are complete. That read also waits
      // for the step in flight, so the window starts after it.
      first_metrics = vkspmd::metrics();
      first_done = std::chrono::steady_clock::now();
      window_start = done + 1;
      step_seconds = std::chrono::duration<double>(now - start).count() / done;
    } else if (done > window_start) {
      step_seconds =
          std::chrono::duration<double>(now - first_done).count() / (done - window_start);
    } else {
      step_seconds = std::chrono::duration<double>(now - start).count() / done;
    }
    progress.Update({step, losses.back(), task->ItemsPerStep() / std::max(step_seconds, 1e-9),
                     1e3 * step_seconds});
  };
  for (int64_t step = first_step; step < options.steps; ++step) {
    if (!options.trace.empty() && step == std::max(trace_first, first_step) && step < trace_end) {
      trace_metrics = vkspmd::metrics();  // Waits: the trace starts with this step's work.
      profiler::start_trace(options.trace);
    }
    Tensor loss;
    auto trace_step = [&] {
      loss = task->Loss(step);
      if (scaler != nullptr) {
        scaler->step(*optimizer, grad(scaler->scale(loss), parameters));
        scaler->update();
      } else {
        optimizer->step(grad(loss, parameters));
      }
    };
    if (auto_options.has_value() && step == first_step) {
      // The first step of the run is planned by the ILP (and run); the state stays where it
      // puts it.
      std::vector<Tensor> auto_state = parameters;
      auto_state.insert(auto_state.end(), state.begin(), state.end());
      PrintAutoPlan(auto_shard(trace_step, mesh, auto_state, *auto_options), task->model(),
                    state.size());
    } else {
      trace_step();
      mark_step();
    }
    if (profiler::tracing() && !options.trace.empty() && step + 1 == trace_end) {
      stop_trace(trace_end);
    }
    if (pending_loss.defined()) report(pending_loss);
    pending_loss = loss;
    if (reported == 0) {
      // The first (compiling) step is reported before the next one is launched, so the steady
      // state's metrics start at a step boundary: metrics() waits for every launched graph, and
      // a step in flight would fall out of the window (a 2-step run had none left: it printed
      // "0 kernel dispatches per step").
      report(pending_loss);
      pending_loss = Tensor();
    }
    const int64_t done = step + 1;
    if (checkpoints == nullptr || done == options.steps) continue;
    if (CheckpointManager::preemption_requested()) {
      if (pending_loss.defined()) report(pending_loss);
      progress.Finish();
      checkpoints->wait_until_finished();
      save(done, /*force=*/true);
      checkpoints->wait_until_finished();
      throw Preempted{done};
    }
    if (options.save_every > 0 && done % options.save_every == 0) save(done, /*force=*/true);
  }
  if (pending_loss.defined()) report(pending_loss);
  if (profiler::tracing() && !options.trace.empty()) stop_trace(options.steps);
  progress.Finish();
  if (checkpoints != nullptr) {
    if (first_step < options.steps) save(options.steps, /*force=*/true);
    checkpoints->wait_until_finished();
    fmt::print("  checkpoint: {}\n", checkpoints->step_path(options.steps));
  }
  const auto end = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(end - start).count();

  const Metrics metrics = vkspmd::metrics();
  const int64_t run_steps = options.steps - first_step;
  if (reported == 0) {
    fmt::print("summary: nothing to do: the checkpoint is already at step {}\n", first_step);
    return kExitOk;
  }
  const size_t n = losses.size(), window = std::min<size_t>(10, n);
  double first = 0, last = 0;
  for (size_t i = 0; i < window; ++i) {
    first += losses[i] / window;
    last += losses[n - window + i] / window;
  }
  fmt::print(
      "summary: final loss {:.4f}; mean of the last {} steps {:.4f} = {:.2f} x the first {}\n",
      losses.back(), window, last, last / first, window);
  fmt::print("  precision: {}{}\n", PrecisionText(options.precision),
             scaler == nullptr ? ""
                               : fmt::format("; loss scale {}, {} step(s) skipped (inf/NaN)",
                                             scaler->get_scale(), scaler->skipped_steps()));
  fmt::print("  {} steps in {:.1f} s; the first {:.2f} s ({} compilation(s), {:.2f} s){}\n",
             run_steps, seconds, first_step_seconds, metrics.compile_count, metrics.compile_seconds,
             window_start > 1 && reported > window_start
                 ? fmt::format("; steady from step {}", first_step + window_start + 1)
                 : "");
  if (reported > window_start) {
    // Steady state: the steps after the last compilation, from the metrics they added.
    const double steps = static_cast<double>(reported - window_start);
    const double ms_per_step =
        1e3 * std::chrono::duration<double>(end - first_done).count() / steps;
    const double execute = metrics.execute_seconds - first_metrics.execute_seconds;
    const double collectives = metrics.collective_seconds - first_metrics.collective_seconds;
    fmt::print(
        "  then {:.1f} ms/step, {:.0f} {}/s: compute {:.1f} ms, collectives {:.1f} ms, "
        "host {:.1f} ms per step\n",
        ms_per_step, task->ItemsPerStep() * 1e3 / ms_per_step, task->ItemName(),
        1e3 * (execute - collectives) / steps, 1e3 * collectives / steps,
        std::max(0.0, ms_per_step - 1e3 * execute / steps));
    // The window holds exactly its steps (f16's steps are two graph runs).
    const double devices = std::max<double>(1, static_cast<double>(memory_stats().size()));
    fmt::print("  per step and device: {:.0f} kernel dispatches, {:.0f} collectives\n",
               static_cast<double>(metrics.kernel_dispatches - first_metrics.kernel_dispatches) /
                   steps / devices,
               static_cast<double>(metrics.collective_runs - first_metrics.collective_runs) /
                   steps / devices);
  }
  for (const DeviceMemory& device : memory_stats()) {
    fmt::print("  device {}: parameters {}, optimizer state {}, peak {}\n", device.device,
               MemoryText(device.parameter_bytes), MemoryText(device.optimizer_state_bytes),
               MemoryText(device.peak_bytes));
  }
  if (options.parameter_digest) {
    // Runs on other meshes, process counts or launchers compare their final parameters bit for
    // bit by this line (each read gathers the whole parameter, in every process alike).
    uint64_t digest = 14695981039346656037ull;  // FNV-1a, 64 bits.
    for (const Tensor& parameter : parameters) {
      for (float value : parameter.to_vector<float>()) {
        unsigned char bytes[sizeof(float)];
        std::memcpy(bytes, &value, sizeof(float));
        for (unsigned char byte : bytes) digest = (digest ^ byte) * 1099511628211ull;
      }
    }
    fmt::print("  parameter digest: {:016x} (FNV-1a of {} parameters' float32 values)\n", digest,
               parameters.size());
  }
  if (absl::Status written = train::WriteLossSvg(out + "/loss.svg", losses, title); !written.ok()) {
    throw Error(static_cast<ErrorCode>(written.code()), std::string(written.message()));
  }
  fmt::print("  loss curve: {0}/loss.csv, {0}/loss.svg\n", out);
  fmt::print("{}", trace_report);
  return kExitOk;
}

}  // namespace

void RegisterTrainCommand(CLI::App& app) {
  auto options = std::make_shared<TrainOptions>();
  CLI::App* command = app.add_subcommand(
      "train",
      "Train a small model sharded over the mesh devices (the default: a character-level "
      "transformer on a 2x2 mesh, data x tensor parallel)");
  command->add_option("--model", options->model, "mlp or transformer")->capture_default_str();
  command->add_option("--mesh", options->mesh, "mesh shape, e.g. 2x2, 4 or 1")
      ->capture_default_str();
  command
      ->add_option("--strategy", options->strategy,
                   "dp, tp, fsdp, dp+tp, or auto (auto-sharding's ILP chooses every sharding)")
      ->capture_default_str();
  command->add_option("--memory-limit-mib", options->memory_limit_mib,
                      "--strategy auto: bytes per device the step may hold, in MiB (0: none)");
  command->add_option("--time-limit", options->time_limit_s, "--strategy auto: solver limit, s")
      ->capture_default_str();
  command->add_option("--cost-model", options->cost_model,
                      "--strategy auto: defaults (analytic, deterministic), measured (timed on "
                      "the mesh's devices at start-up, cached with the compile cache) or a file "
                      "as `vkspmd partition --cost-model measured` prints it (default: measured; "
                      "defaults in a job of several processes)");
  command->add_option("--steps", options->steps)->capture_default_str();
  command->add_option("--batch", options->batch, "global batch (split over the data axis)")
      ->capture_default_str();
  command->add_option("--seq", options->seq, "transformer: tokens per sequence")
      ->capture_default_str();
  command->add_option("--lr", options->lr, "learning rate")->capture_default_str();
  command->add_option("--seed", options->seed)->capture_default_str();
  command
      ->add_option("--data", options->data,
                   "transformer: a text file or a directory of them (character-level)")
      ->capture_default_str();
  command->add_option("--optimizer", options->optimizer, "adamw or sgd (momentum 0.9)")
      ->capture_default_str();
  command->add_option("--d-model", options->d_model, "transformer width")->capture_default_str();
  command->add_option("--heads", options->heads)->capture_default_str();
  command->add_option("--layers", options->layers)->capture_default_str();
  command->add_option("--hidden", options->hidden, "mlp: hidden width")->capture_default_str();
  command->add_option("--features", options->features, "mlp: input features")
      ->capture_default_str();
  command->add_option("--out", options->out, "directory for loss.csv and loss.svg")
      ->capture_default_str();
  command->add_option("--log-every", options->log_every, "steps between log lines (no terminal)")
      ->capture_default_str();
  command->add_option("--checkpoint-dir", options->checkpoint_dir,
                      "save checkpoints here (at the end, every --save-every steps, and on "
                      "SIGTERM, after which the exit code is 75)");
  command
      ->add_option("--save-every", options->save_every, "steps between checkpoints (0: at the end)")
      ->capture_default_str();
  command->add_option("--keep", options->keep, "keep the newest K checkpoints (0: all)")
      ->capture_default_str();
  command->add_flag("--async-save", options->async_save,
                    "write checkpoints in the background while training goes on");
  command->add_option("--trace", options->trace,
                      "write a profiler trace (Chrome trace JSON, for ui.perfetto.dev) of the "
                      "--trace-steps steps here");
  command
      ->add_option("--trace-steps", options->trace_steps,
                   "A:B: trace steps A to B-1 (0-based; step 0 compiles)")
      ->capture_default_str();
  command
      ->add_option("--precision", options->precision,
                   "f32, or mixed precision: bf16, f16 (dynamic loss scaling); parameters and "
                   "optimizer state stay f32")
      ->capture_default_str();
  command->add_flag("--parameter-digest", options->parameter_digest,
                    "print a digest of the final parameters' values (to compare runs bit for bit)");
  command->add_flag("--resume", options->resume,
                    "continue from the latest committed checkpoint in --checkpoint-dir (same "
                    "data stream and random state)");
  command->callback([options] {
    try {
      CommandExitCode() = Train(*options);
    } catch (const Diverged& diverged) {
      fmt::print(stderr,
                 "vkspmd train: the loss became {} at step {}; stopped (try a smaller --lr). The "
                 "curve so far is in {}/loss.csv\n",
                 std::isnan(diverged.loss) ? "NaN" : (diverged.loss > 0 ? "+inf" : "-inf"),
                 diverged.step, options->out);
      CommandExitCode() = kExitDiverged;
    } catch (const Preempted& preempted) {
      fmt::print(stderr,
                 "vkspmd train: SIGTERM: saved step {} in {}; rerun with --resume to continue\n",
                 preempted.step, options->checkpoint_dir);
      CommandExitCode() = kExitPreempted;
    } catch (const Error& error) {
      fmt::print(stderr, "vkspmd train: {}\n", error.what());
      CommandExitCode() =
          ExitCodeFor(static_cast<absl::StatusCode>(error.code()), /*opening_devices=*/true);
    }
  });
}

}  // namespace vkspmd::cli
