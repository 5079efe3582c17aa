// Host-staged collectives between threads (one per rank): algorithm bandwidth (bytes per rank /
// time) and bus bandwidth (algbw x 2(n-1)/n for all-reduce, x (n-1)/n for all-gather and
// reduce-scatter, as nccl-tests define them), next to memcpy of 2·n·S bytes (every input read once,
// every output written once: the floor for host staging) measured in the same run.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "src/collectives/in_process_world.h"

namespace vkspmd::collectives {
namespace {

enum class Which { kAllReduce, kAllGather, kReduceScatter };

// Runs `repeats` collectives on `ranks` threads; returns seconds per collective.
double TimeCollective(Which which, int ranks, size_t bytes, int repeats, benchmark::State& state) {
  auto world = InProcessWorld::Create(ranks);
  if (!world.ok()) {
    state.SkipWithError(std::string(world.status().message()).c_str());
    return 0;
  }
  const size_t output_bytes = which == Which::kAllGather ? bytes * ranks : bytes;
  const size_t input_bytes = which == Which::kReduceScatter ? bytes * ranks : bytes;
  std::vector<std::vector<std::byte>> inputs(ranks, std::vector<std::byte>(input_bytes)),
      outputs(ranks, std::vector<std::byte>(output_bytes));
  for (auto& input : inputs) std::memset(input.data(), 1, input.size());
  std::vector<absl::Status> statuses(ranks);
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      auto communicator = *(*world)->Connect(rank);
      for (int k = 0; k < repeats && statuses[rank].ok(); ++k) {
        switch (which) {
          case Which::kAllReduce:
            statuses[rank] = communicator->AllReduce(inputs[rank], outputs[rank], ElementType::kF32,
                                                     ReduceOp::kSum, {});
            break;
          case Which::kAllGather:
            statuses[rank] =
                communicator->AllGather(inputs[rank], outputs[rank], ElementType::kF32, {});
            break;
          case Which::kReduceScatter:
            statuses[rank] = communicator->ReduceScatter(inputs[rank], outputs[rank],
                                                         ElementType::kF32, ReduceOp::kSum, {});
            break;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& status : statuses) {
    if (!status.ok()) state.SkipWithError(std::string(status.message()).c_str());
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / repeats;
}

void RunCollective(benchmark::State& state, Which which) {
  const int ranks = static_cast<int>(state.range(0));
  const size_t bytes = static_cast<size_t>(state.range(1));
  const int repeats = static_cast<int>(std::clamp<size_t>((64 << 20) / bytes, 1, 200));
  for (auto _ : state) state.SetIterationTime(TimeCollective(which, ranks, bytes, repeats, state));
  const double factor = which == Which::kAllReduce ? 2.0 * (ranks - 1) / ranks
                                                   : static_cast<double>(ranks - 1) / ranks;
  state.counters["algbw_GBps"] = benchmark::Counter(static_cast<double>(bytes) / 1e9,
                                                    benchmark::Counter::kIsIterationInvariantRate);
  state.counters["busbw_GBps"] = benchmark::Counter(factor * static_cast<double>(bytes) / 1e9,
                                                    benchmark::Counter::kIsIterationInvariantRate);
}

void BM_AllReduce(benchmark::State& state) { RunCollective(state, Which::kAllReduce); }
void BM_AllGather(benchmark::State& state) { RunCollective(state, Which::kAllGather); }
void BM_ReduceScatter(benchmark::State& state) { RunCollective(state, Which::kReduceScatter); }

// memcpy of 2·n·S bytes in n·S-byte halves: the traffic floor of an n-rank all-reduce of S bytes.
void BM_MemcpyFloor(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0)) * state.range(1);
  std::vector<std::byte> source(bytes, std::byte{1}), destination(bytes);
  for (auto _ : state) {
    std::memcpy(destination.data(), source.data(), bytes);
    benchmark::DoNotOptimize(destination.data());
  }
  state.counters["GBps"] = benchmark::Counter(2.0 * static_cast<double>(bytes) / 1e9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

void Sizes(benchmark::internal::Benchmark* benchmark) {
  for (int ranks : {2, 4, 8}) {
    for (int64_t bytes : {int64_t{4} << 10, int64_t{1} << 20, int64_t{16} << 20, int64_t{64} << 20,
                          int64_t{256} << 20}) {
      if (ranks * bytes > (int64_t{1} << 30)) continue;  // Keep within this machine's memory.
      benchmark->Args({ranks, bytes});
    }
  }
}

BENCHMARK(BM_AllReduce)->Apply(Sizes)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllGather)->Apply(Sizes)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReduceScatter)->Apply(Sizes)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MemcpyFloor)->Apply(Sizes)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace vkspmd::collectives

BENCHMARK_MAIN();
