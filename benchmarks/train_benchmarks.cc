// The training step of `vkspmd train`'s default transformer (2 layers, width 64, 4 heads, batch 8
// x 32 characters, AdamW) under dp+tp on 1, 2 and 4 mesh devices (meshes 1x1, 1x2, 2x2): ms per
// step and tokens/s (manual time, one step per iteration, the loss read every step), the split
// into compute, collectives and host, and the compile time of the step. Synthetic tokens (a
// counter hash), so the figures do not depend on the corpus.
#include <benchmark/benchmark.h>

#include <chrono>
#include <map>
#include <utility>
#include <vector>

#include "vkspmd/vkspmd.h"

namespace {

void BM_TransformerTrainingStep(benchmark::State& state) {
  const std::vector<int64_t> shape =
      state.range(0) == 4 ? std::vector<int64_t>{2, 2} : std::vector<int64_t>{state.range(0)};
  try {
    const vkspmd::Mesh mesh = vkspmd::nn::strategy_mesh("dp+tp", shape);
    vkspmd::manual_seed(0);
    vkspmd::nn::TransformerConfig config;
    config.vocab = 96;
    config.d_model = 64;
    config.heads = 4;
    config.layers = 2;
    config.max_seq = 32;
    vkspmd::nn::TransformerLM model(config);
    vkspmd::nn::apply_strategy(model, mesh, "dp+tp");
    std::vector<vkspmd::Tensor> parameters = model.parameters();
    vkspmd::optim::AdamW optimizer(parameters, 3e-3);
    vkspmd::mark_step();
    constexpr int64_t kBatch = 8, kSeq = 32;
    int64_t step = 0;
    auto run_step = [&] {
      std::vector<int32_t> tokens(kBatch * (kSeq + 1));
      for (size_t i = 0; i < tokens.size(); ++i) {
        tokens[i] = static_cast<int32_t>((i * 2654435761u + step * 40503u) % config.vocab);
      }
      std::vector<int32_t> inputs, targets;
      for (int64_t b = 0; b < kBatch; ++b) {
        for (int64_t t = 0; t < kSeq; ++t) {
          inputs.push_back(tokens[b * (kSeq + 1) + t]);
          targets.push_back(tokens[b * (kSeq + 1) + t + 1]);
        }
      }
      ++step;
      vkspmd::Tensor loss =
          model.loss(vkspmd::tensor(std::span<const int32_t>(inputs), {kBatch, kSeq}),
                     vkspmd::tensor(std::span<const int32_t>(targets), {kBatch, kSeq}));
      optimizer.step(vkspmd::grad(loss, parameters));
      vkspmd::mark_step();
      return loss.item();
    };
    vkspmd::reset_metrics();  // The initialisation graph's compilation is not the step's.
    const auto compile_start = std::chrono::steady_clock::now();
    run_step();  // Compiles the step.
    const double first_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - compile_start).count();
    // Google Benchmark calls this function more than once per argument; the graph cache keeps
    // the step compiled, so the compilation is that of the first call.
    static std::map<int64_t, std::pair<double, double>> first_call;
    const vkspmd::Metrics compiled = vkspmd::metrics();
    first_call.emplace(state.range(0), std::make_pair(compiled.compile_seconds, first_seconds));
    vkspmd::reset_metrics();
    for (auto _ : state) {
      const auto start = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(run_step());
      state.SetIterationTime(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    const vkspmd::Metrics metrics = vkspmd::metrics();
    const double steps = static_cast<double>(state.iterations());
    state.counters["tokens_per_s"] = benchmark::Counter(
        static_cast<double>(kBatch * kSeq), benchmark::Counter::kIsIterationInvariantRate);
    state.counters["compute_ms"] =
        1e3 * (metrics.execute_seconds - metrics.collective_seconds) / steps;
    state.counters["collectives_ms"] = 1e3 * metrics.collective_seconds / steps;
    state.counters["compile_s"] = first_call[state.range(0)].first;
    state.counters["first_step_s"] = first_call[state.range(0)].second;
    state.counters["compiles_in_loop"] = static_cast<double>(metrics.compile_count);
  } catch (const vkspmd::Error& error) {
    state.SkipWithError(error.what());
  }
}
// host_ms = Time - compute_ms - collectives_ms (the rest of each step: tracing, hashing, launch).
BENCHMARK(BM_TransformerTrainingStep)
    ->Arg(1)
    ->Arg(2)
    ->Arg(4)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(5.0);

}  // namespace

BENCHMARK_MAIN();
