// Sharded checkpoints (issue #16): save and restore throughput against a plain `cp -r` of the
// same step directory measured in the same run, restore with resharding onto other meshes, and
// the training step's time while an asynchronous save is in flight. docs/checkpoints.md
// ("Performance") has the figures and the command that reproduces them.
//
// Every timed figure is wall-clock time (UseRealTime, or manual time for the steps): cp runs in a
// child process, and the save's fsyncs wait on the disk, neither of which this thread's CPU time
// sees. Saves write under
// $VKSPMD_BENCH_DIR (default: a fresh directory under the system's temporary directory), removed
// at exit; the figures are those of that filesystem.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "vkspmd/vkspmd.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using vkspmd::None;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

const fs::path& Root() {
  static const fs::path root = [] {
    const char* chosen = std::getenv("VKSPMD_BENCH_DIR");
    fs::path base =
        chosen != nullptr && *chosen != '\0' ? fs::path(chosen) : fs::temp_directory_path();
    fs::path path = base / ("vkspmd-checkpoint-benchmarks-" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
    return path;
  }();
  return root;
}

// A fresh, not yet existing path under Root().
fs::path FreshPath(const std::string& stem) {
  static int64_t counter = 0;
  return Root() / (stem + "_" + std::to_string(counter++));
}

// A mesh and how each [rows, 1024] tensor is split over it.
struct Layout {
  std::string label;
  vkspmd::Mesh mesh;
  vkspmd::PartitionSpec spec;
};

Layout SquareDpTp() { return {"2x2_dp,tp", vkspmd::Mesh({2, 2}, {}, {"dp", "tp"}), {"dp", "tp"}}; }
Layout FourFsdp() { return {"4_fsdp", vkspmd::Mesh({4}, {}, {"fsdp"}), {"fsdp", None}}; }
Layout OneDevice() { return {"1_device", vkspmd::Mesh({1}, {}, {"x"}), {"x", None}}; }
// 4096 and 16384 rows do not divide by 3: the last device's shard is padded.
Layout ThreeDevices() { return {"3_uneven", vkspmd::Mesh({3}, {}, {"x"}), {"x", None}}; }

constexpr int64_t kTensors = 4;
constexpr int64_t kColumns = 1024;
constexpr int64_t kMiB = 1 << 20;

// kTensors float32 tensors of [rows, kColumns] totalling `mib` MiB, placed by `layout`.
std::vector<vkspmd::Tensor> ShardedTensors(const Layout& layout, int64_t mib, bool random) {
  const int64_t rows = mib * kMiB / (kTensors * kColumns * 4);
  std::vector<vkspmd::Tensor> tensors;
  for (int64_t i = 0; i < kTensors; ++i) {
    vkspmd::Tensor tensor =
        random ? vkspmd::randn({rows, kColumns}) : vkspmd::zeros({rows, kColumns});
    vkspmd::mark_sharding(tensor, layout.mesh, layout.spec);
    tensors.push_back(tensor);
  }
  vkspmd::sync();
  vkspmd::wait_device_ops();
  return tensors;
}

vkspmd::CheckpointState StateOf(const std::vector<vkspmd::Tensor>& tensors) {
  vkspmd::CheckpointState state;
  for (size_t i = 0; i < tensors.size(); ++i) state.add("w" + std::to_string(i), tensors[i]);
  state.rng = false;
  return state;
}

// The tensors of one (layout, size) and one saved step of them, kept while consecutive
// benchmarks use the same pair (only one pair at a time: 256 MiB of device memory is enough).
struct Saved {
  std::string key;
  std::vector<vkspmd::Tensor> tensors;
  fs::path step_path;
};
std::optional<Saved>& SavedSlot() {
  static std::optional<Saved> saved;
  return saved;
}
void ReleaseSaved() {
  std::optional<Saved>& saved = SavedSlot();
  if (saved.has_value()) fs::remove_all(saved->step_path.parent_path());
  saved.reset();
}
Saved& SavedFor(const Layout& layout, int64_t mib) {
  std::optional<Saved>& saved = SavedSlot();
  const std::string key = layout.label + "/" + std::to_string(mib);
  if (saved.has_value() && saved->key == key) return *saved;
  ReleaseSaved();  // Frees the previous tensors before placing the new ones.
  Saved fresh{key, ShardedTensors(layout, mib, /*random=*/true), {}};
  const fs::path directory = FreshPath("source");
  vkspmd::save_checkpoint(directory.string(), 0, StateOf(fresh.tensors));
  fresh.step_path = directory / "step_00000000";
  saved = std::move(fresh);
  return *saved;
}

void RunOrThrow(const std::vector<std::string>& arguments) {
  std::vector<char*> argv;
  for (const std::string& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
    throw std::runtime_error("cannot start " + arguments[0]);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(arguments[0] + " failed");
  }
}

void FsyncPath(const fs::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) throw std::runtime_error("cannot fsync " + path.string());
  ::close(fd);
}

// What the save does for durability, done to the copy: every file, then the directory.
void FsyncTree(const fs::path& directory) {
  for (const fs::directory_entry& entry : fs::directory_iterator(directory)) {
    FsyncPath(entry.path(), O_RDONLY);
  }
  FsyncPath(directory, O_RDONLY | O_DIRECTORY);
}

int64_t TreeBytes(const fs::path& directory) {
  int64_t bytes = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory)) {
    bytes += static_cast<int64_t>(entry.file_size());
  }
  return bytes;
}

// Bytes per second of the baselines, by "mode/layout/size", for the ratios of later benchmarks.
std::map<std::string, double>& BaselineRates() {
  static std::map<std::string, double> rates;
  return rates;
}

double Rate(const benchmark::State& state, double seconds) {
  return static_cast<double>(state.bytes_processed()) / seconds;
}

enum class Copy { kCp, kCpFsync };
const char* CopyName(Copy mode) { return mode == Copy::kCp ? "cp" : "cp+fsync"; }

// `cp -r` of the saved step directory to a fresh place (with kCpFsync, then an fsync of every
// copied file and of the directory, as the save does).
void BM_CopyBaseline(benchmark::State& state, const Layout& layout, int64_t mib, Copy mode) {
  Saved& saved = SavedFor(layout, mib);
  const int64_t bytes = TreeBytes(saved.step_path);
  auto copy = [&](const fs::path& target) {
    RunOrThrow({"/bin/cp", "-r", saved.step_path.string(), target.string()});
    if (mode == Copy::kCpFsync) FsyncTree(target);
  };
  const fs::path warm_up = FreshPath("copy");
  copy(warm_up);
  fs::remove_all(warm_up);
  double seconds = 0;
  for (auto _ : state) {
    const fs::path target = FreshPath("copy");
    const Clock::time_point start = Clock::now();
    copy(target);
    seconds += SecondsSince(start);
    state.PauseTiming();
    fs::remove_all(target);
    state.ResumeTiming();
  }
  state.SetBytesProcessed(bytes * state.iterations());
  BaselineRates()[std::string(CopyName(mode)) + "/" + layout.label + "/" + std::to_string(mib)] =
      Rate(state, seconds);
}

void SetRatio(benchmark::State& state, const std::string& counter, const std::string& baseline,
              double rate) {
  auto found = BaselineRates().find(baseline);
  if (found != BaselineRates().end()) state.counters[counter] = rate / found->second;
}

// A save of the tensors into a fresh directory: staging the distinct shards from the devices,
// hashing, writing, fsync, manifest, commit, rename. Timed as CheckpointManager::save_async then
// wait_until_finished, which is save_checkpoint's work (the same staging, then the same step
// writer on another thread) split where save_async returns: stage_ms is the staging, write_ms
// the rest. vs_cp and vs_cp_fsync: this rate over the baselines' for the same step (present when
// they ran before in this process).
void BM_Save(benchmark::State& state, const Layout& layout, int64_t mib) {
  Saved& saved = SavedFor(layout, mib);
  const vkspmd::CheckpointState checkpoint = StateOf(saved.tensors);
  auto save = [&](const fs::path& directory, double& stage, double& write) {
    vkspmd::CheckpointManager manager(directory.string());
    const Clock::time_point start = Clock::now();
    manager.save_async(0, checkpoint, /*force=*/true);
    const Clock::time_point staged = Clock::now();
    manager.wait_until_finished();
    stage += std::chrono::duration<double>(staged - start).count();
    write += SecondsSince(staged);
  };
  double stage = 0, write = 0;
  const fs::path warm_up = FreshPath("save");
  save(warm_up, stage, write);
  fs::remove_all(warm_up);
  stage = write = 0;
  for (auto _ : state) {
    const fs::path directory = FreshPath("save");
    save(directory, stage, write);
    state.PauseTiming();
    fs::remove_all(directory);
    state.ResumeTiming();
  }
  const double iterations = static_cast<double>(state.iterations());
  state.SetBytesProcessed(mib * kMiB * state.iterations());
  state.counters["stage_ms"] = 1e3 * stage / iterations;
  state.counters["write_ms"] = 1e3 * write / iterations;
  const std::string suffix = "/" + layout.label + "/" + std::to_string(mib);
  SetRatio(state, "vs_cp", "cp" + suffix, Rate(state, stage + write));
  SetRatio(state, "vs_cp_fsync", "cp+fsync" + suffix, Rate(state, stage + write));
}

// restore_checkpoint of the step saved by `from` into tensors placed by `to` (resharding when
// they differ): reading, checksum checks, cutting the wanted boxes, uploading to the devices.
void BM_Restore(benchmark::State& state, const Layout& from, const Layout& to, int64_t mib) {
  Saved& saved = SavedFor(from, mib);
  std::vector<vkspmd::Tensor> targets = ShardedTensors(to, mib, /*random=*/false);
  vkspmd::CheckpointState checkpoint = StateOf(targets);
  vkspmd::restore_checkpoint(saved.step_path.string(), checkpoint);  // Warm-up.
  vkspmd::wait_device_ops();
  double seconds = 0;
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    vkspmd::restore_checkpoint(saved.step_path.string(), checkpoint);
    vkspmd::wait_device_ops();
    seconds += SecondsSince(start);
  }
  state.SetBytesProcessed(mib * kMiB * state.iterations());
  SetRatio(state, "vs_cp", "cp/" + from.label + "/" + std::to_string(mib), Rate(state, seconds));
  // The restored values must be the saved ones (bitwise), or the figure is void.
  const vkspmd::HostTensor restored = targets.back().to_host();
  const vkspmd::HostTensor original = saved.tensors.back().to_host();
  if (restored.bytes != original.bytes) state.SkipWithError("restored values differ");
}

// A training step with a state large next to its compute: MlpRegressor(1024 -> hidden -> 1024)
// with AdamW under dp+tp on a 2x2 mesh, batch 32, the loss read every step (hidden 2048: a 48
// MiB state with AdamW's two moments; 4096: 96 MiB). Each iteration times N steps with no save,
// then calls save_async of the model and optimizer (not timed: it returns once the state is
// staged to host memory) and times N more steps while the write runs in the background; with
// N = 1 the write overlaps the one step timed (the worst case), with more it is spread over
// them. Manual time is the in-flight steps; step_ms_idle, step_ms_saving and their ratio are
// counters, as are the blocking part of save_async, what was left of the write after the N
// steps (wait_ms: 0 when it ended within them), and a synchronous save of the same state.
void BM_StepDuringAsyncSave(benchmark::State& state) {
  ReleaseSaved();
  const int64_t hidden = state.range(0), steps_per_round = state.range(1);
  constexpr int64_t kFeatures = 1024, kBatch = 32;
  const vkspmd::Mesh mesh = vkspmd::nn::strategy_mesh("dp+tp", {2, 2});
  vkspmd::manual_seed(0);
  vkspmd::nn::MlpRegressor model(kFeatures, hidden, kFeatures);
  vkspmd::nn::apply_strategy(model, mesh, "dp+tp");
  std::vector<vkspmd::Tensor> parameters = model.parameters();
  vkspmd::optim::AdamW optimizer(parameters, 1e-3);
  const vkspmd::Tensor x = vkspmd::randn({kBatch, kFeatures});
  const vkspmd::Tensor y = vkspmd::randn({kBatch, kFeatures});
  vkspmd::mark_step();
  auto timed_steps = [&] {
    const Clock::time_point start = Clock::now();
    for (int64_t i = 0; i < steps_per_round; ++i) {
      vkspmd::Tensor loss = model.loss(x, y);
      optimizer.step(vkspmd::grad(loss, parameters));
      vkspmd::mark_step();
      benchmark::DoNotOptimize(loss.item());
    }
    return SecondsSince(start);
  };
  timed_steps();  // Compiles the step (and AdamW's first update, a graph of its own).
  vkspmd::CheckpointState checkpoint;
  checkpoint.add_module(model).add_optimizer(optimizer);
  vkspmd::CheckpointOptions options;
  options.max_to_keep = 1;  // Collected by the background writer, as in a training run.
  vkspmd::CheckpointManager manager(FreshPath("train").string(), options);
  int64_t step = 0;
  const Clock::time_point sync_start = Clock::now();
  manager.save(step++, checkpoint, /*force=*/true);
  const double sync_save_seconds = SecondsSince(sync_start);
  double idle = 0, saving = 0, call = 0, wait = 0;
  for (auto _ : state) {
    idle += timed_steps();
    const Clock::time_point call_start = Clock::now();
    manager.save_async(step++, checkpoint, /*force=*/true);
    call += SecondsSince(call_start);
    const double in_flight = timed_steps();
    saving += in_flight;
    state.SetIterationTime(in_flight);
    const Clock::time_point wait_start = Clock::now();
    manager.wait_until_finished();
    wait += SecondsSince(wait_start);
  }
  const double rounds = static_cast<double>(state.iterations());
  const double steps = rounds * static_cast<double>(steps_per_round);
  state.counters["step_ms_idle"] = 1e3 * idle / steps;
  state.counters["step_ms_saving"] = 1e3 * saving / steps;
  state.counters["saving_over_idle"] = saving / idle;
  // The same with save_async's blocking part counted as part of the in-flight steps.
  state.counters["with_call_over_idle"] = (saving + call) / idle;
  state.counters["save_async_call_ms"] = 1e3 * call / rounds;
  state.counters["wait_ms"] = 1e3 * wait / rounds;
  state.counters["sync_save_ms"] = 1e3 * sync_save_seconds;
  int64_t bytes = 0;
  for (const auto& [name, tensor] : checkpoint.tensors) bytes += tensor.numel() * 4;
  state.counters["state_MiB"] = static_cast<double>(bytes) / kMiB;
}

// Wraps a benchmark body so a vkspmd (or cp) failure skips it with the message.
template <typename Body>
auto Guarded(Body body) {
  return [body](benchmark::State& state) {
    try {
      body(state);
    } catch (const std::exception& error) {
      state.SkipWithError(error.what());
    }
  };
}

void RegisterAll() {
  // Fixed, few iterations (each moves 64 or 256 MiB): the whole binary runs in about 70 s on
  // lavapipe with 2 cores.
  auto configure = [](benchmark::internal::Benchmark* benchmark, int64_t mib) {
    benchmark->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(mib >= 256 ? 4 : 8);
  };
  for (int64_t mib : {64, 256}) {
    for (const Layout& layout : {SquareDpTp(), FourFsdp()}) {
      const std::string suffix = layout.label + "/" + std::to_string(mib) + "MiB";
      for (Copy mode : {Copy::kCp, Copy::kCpFsync}) {
        configure(benchmark::RegisterBenchmark(
                      (std::string("BM_CopyBaseline/") + CopyName(mode) + "/" + suffix).c_str(),
                      Guarded([=](benchmark::State& s) { BM_CopyBaseline(s, layout, mib, mode); })),
                  mib);
      }
      configure(benchmark::RegisterBenchmark(
                    ("BM_Save/" + suffix).c_str(),
                    Guarded([=](benchmark::State& s) { BM_Save(s, layout, mib); })),
                mib);
      // Restores of what was just saved (the page cache holds it, as it holds cp's source).
      std::vector<Layout> targets = {layout};
      if (layout.label == SquareDpTp().label) {
        targets = {layout, FourFsdp(), OneDevice(), ThreeDevices()};
      }
      for (const Layout& to : targets) {
        configure(
            benchmark::RegisterBenchmark(
                ("BM_Restore/" + layout.label + "->" + to.label + "/" + std::to_string(mib) + "MiB")
                    .c_str(),
                Guarded([=](benchmark::State& s) { BM_Restore(s, layout, to, mib); })),
            mib);
      }
    }
  }
  benchmark::RegisterBenchmark("BM_StepDuringAsyncSave/mlp_adamw/2x2_dp+tp",
                               Guarded(BM_StepDuringAsyncSave))
      ->Args({2048, 1})
      ->Args({2048, 4})
      ->Args({4096, 1})
      ->ArgNames({"hidden", "steps"})
      ->Iterations(6)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}

}  // namespace

int main(int argc, char** argv) {
  setenv("VKSPMD_DEVICES", "4", /*overwrite=*/0);  // The meshes above need 4 mesh devices.
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  vkspmd::shutdown();
  std::error_code ignored;
  fs::remove_all(Root(), ignored);
  return 0;
}
