// Generated kernels on one mesh device: f32 matmul next to OpenBLAS cblas_sgemm (2 threads) and
// a fused 8-op elementwise chain on 16M floats next to memcpy, each pair measured in the same run.
// GPU time comes from timestamps; the device's name and type go into the JSON context.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include "src/exec/executable.h"
#include "src/ir/parser.h"
#include "src/runtime/device_set.h"

namespace vkspmd {
namespace {

runtime::MeshDevice& Device() {
  static std::unique_ptr<runtime::DeviceSet> devices = [] {
    absl::StatusOr<runtime::RuntimeConfig> config = runtime::RuntimeConfig::FromEnvironment();
    if (!config.ok()) std::exit(2);
    config->mesh_device_count = 1;
    config->validation = false;
    absl::StatusOr<std::unique_ptr<runtime::DeviceSet>> created =
        runtime::DeviceSet::Create(*config);
    if (!created.ok()) std::exit(77);
    return std::move(*created);
  }();
  return devices->device(0);
}

ir::Literal RandomLiteral(const ir::Shape& shape, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> values(-1, 1);
  ir::Literal literal(shape);
  for (int64_t i = 0; i < literal.ElementCount(); ++i) literal.Set<float>(i, values(random));
  return literal;
}

// Runs `text` on the device; reports GPU time per run as the iteration time.
void RunOnDevice(benchmark::State& state, const std::string& text, double flops, double bytes) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  if (!module.ok()) return state.SkipWithError(std::string(module.status().message()).c_str());
  auto executable = exec::Executable::Compile(**module, Device(), /*timestamps=*/true);
  if (!executable.ok())
    return state.SkipWithError(std::string(executable.status().message()).c_str());
  std::vector<ir::Literal> arguments;
  for (const ir::Instruction* parameter : (*module)->entry()->parameters()) {
    arguments.push_back(RandomLiteral(parameter->shape(), 1 + arguments.size()));
  }
  (void)(*executable)->Run(arguments);  // Warm-up: pipeline compilation.
  for (auto _ : state) {
    absl::StatusOr<ir::Literal> result = (*executable)->Run(arguments);
    if (!result.ok()) return state.SkipWithError(std::string(result.status().message()).c_str());
    double nanoseconds = 0;
    for (const runtime::StepTiming& timing : *(*executable)->Timings())
      nanoseconds += timing.gpu_nanoseconds;
    state.SetIterationTime(nanoseconds / 1e9);
  }
  state.counters["kernels"] = static_cast<double>((*executable)->kernel_count());
  if (flops > 0)
    state.counters["GFLOPs"] =
        benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  if (bytes > 0)
    state.counters["GBps"] =
        benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_MatmulDevice(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::string text = absl::StrCat(
      "HloModule matmul\nENTRY %main (a: f32[", n, ",", n, "], b: f32[", n, ",", n, "]) -> f32[", n,
      ",", n, "] {\n  %a = f32[", n, ",", n, "] parameter(0)\n  %b = f32[", n, ",", n,
      "] parameter(1)\n  ROOT %d = f32[", n, ",", n,
      "] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n");
  RunOnDevice(state, text, 2.0 * n * n * n, 0);
}

void BM_MatmulOpenBlas(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  openblas_set_num_threads(2);
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOPs"] =
      benchmark::Counter(2.0 * n * n * n / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

constexpr int64_t kChainElements = 16 << 20;

void BM_FusedElementwiseChainDevice(benchmark::State& state) {
  const std::string shape = absl::StrCat("f32[", kChainElements, "]");
  std::string text =
      absl::StrCat("HloModule chain\nENTRY %main (x: ", shape, ", y: ", shape, ") -> ", shape,
                   " {\n", "  %x = ", shape, " parameter(0)\n  %y = ", shape, " parameter(1)\n",
                   "  %a = ", shape, " multiply(%x, %y)\n  %b = ", shape, " add(%a, %x)\n",
                   "  %c = ", shape, " tanh(%b)\n  %d = ", shape, " subtract(%c, %y)\n",
                   "  %e = ", shape, " multiply(%d, %d)\n  %f = ", shape, " add(%e, %x)\n",
                   "  %g = ", shape, " negate(%f)\n  ROOT %h = ", shape, " maximum(%g, %y)\n}\n");
  RunOnDevice(state, text, 0, 3.0 * 4 * kChainElements);  // Two reads and one write.
}

void BM_Memcpy(benchmark::State& state) {
  std::vector<float> source(kChainElements, 1.0f), destination(kChainElements);
  for (auto _ : state) {
    std::memcpy(destination.data(), source.data(), source.size() * 4);
    benchmark::DoNotOptimize(destination.data());
  }
  state.counters["GBps"] = benchmark::Counter(2.0 * 4 * kChainElements / 1e9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_MatmulDevice)
    ->Arg(256)
    ->Arg(512)
    ->Arg(1024)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MatmulOpenBlas)
    ->Arg(256)
    ->Arg(512)
    ->Arg(1024)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FusedElementwiseChainDevice)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Memcpy)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace vkspmd

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  const vkspmd::runtime::PhysicalDeviceInfo& device = vkspmd::Device().device().physical_device();
  benchmark::AddCustomContext("device_name", device.name);
  benchmark::AddCustomContext("device_type",
                              std::string(vkspmd::runtime::PhysicalDeviceTypeName(device.type)));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
