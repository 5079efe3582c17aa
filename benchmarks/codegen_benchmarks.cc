// Generated kernels on one mesh device: f32 matmul next to OpenBLAS cblas_sgemm (2 threads) and
// a fused 8-op elementwise chain on 16M floats next to memcpy, each pair measured in the same run.
// GPU time comes from timestamps; the device's name and type go into the JSON context.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <vector>

#include "src/codegen/kernel_plan.h"
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
  for (int64_t i = 0; i < literal.ElementCount(); ++i) literal.SetFromDouble(i, values(random));
  return literal;
}

// The GPU time of the executable's last run, from its timestamps.
absl::StatusOr<double> GpuSeconds(exec::Executable& executable) {
  absl::StatusOr<std::vector<runtime::StepTiming>> timings = executable.Timings();
  if (!timings.ok()) return timings.status();
  double seconds = 0;
  for (const runtime::StepTiming& timing : *timings) seconds += timing.gpu_nanoseconds / 1e9;
  return seconds;
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
    absl::StatusOr<double> seconds = GpuSeconds(**executable);
    if (!seconds.ok()) return state.SkipWithError(std::string(seconds.status().message()).c_str());
    state.SetIterationTime(*seconds);
  }
  state.counters["kernels"] = static_cast<double>((*executable)->kernel_count());
  if (flops > 0)
    state.counters["GFLOPs"] =
        benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  if (bytes > 0)
    state.counters["GBps"] =
        benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

std::string SquareMatmul(const std::string& type, int64_t n) {
  const std::string shape = absl::StrCat(type, "[", n, ",", n, "]");
  return absl::StrCat("HloModule matmul\nENTRY %main (a: ", shape, ", b: ", shape, ") -> ", shape,
                      " {\n  %a = ", shape, " parameter(0)\n  %b = ", shape,
                      " parameter(1)\n  ROOT %d = ", shape,
                      " dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n");
}

void BM_MatmulDevice(benchmark::State& state) {
  const int64_t n = state.range(0);
  RunOnDevice(state, SquareMatmul("f32", n), 2.0 * n * n * n, 0);
}

// f16 and bf16 matmuls (f32 accumulation, 16-bit result) with the device's own choice of kernel
// (cooperative matrices for f16 where the device has them), or with VKSPMD_DOT_KERNEL=`kernel`
// (shared_memory: the same GPU's kernel without tensor cores, the baseline of the same run). The
// label says whether the dot ran on cooperative matrices.
void BM_MatmulHalfDevice(benchmark::State& state, const char* type, const char* kernel) {
  const int64_t n = state.range(0);
  if (*kernel != 0) setenv("VKSPMD_DOT_KERNEL", kernel, 1);
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      ir::ParseAndVerifyModule(SquareMatmul(type, n));
  if (module.ok()) {
    auto executable = exec::Executable::Compile(**module, Device());
    bool matrix = false;
    if (executable.ok()) {
      for (const codegen::KernelPlan& plan : (*executable)->plan().kernels) {
        matrix |= plan.kind == codegen::KernelKind::kDot && plan.dot.cooperative_matrix;
      }
    }
    state.SetLabel(matrix ? "cooperative_matrix" : "no_cooperative_matrix");
  }
  RunOnDevice(state, SquareMatmul(type, n), 2.0 * n * n * n, 0);
  if (*kernel != 0) unsetenv("VKSPMD_DOT_KERNEL");
}

// The small dots of a training step (issue #18), by index: x.W, x.W (wide), x.W (deep), x.W^T and
// x^T.g (contracting dim innermost in the rhs / outermost in both, as in backward passes),
// batched attention dots, and x^T.g over 4096 rows (split-K on GPUs).
struct SmallDot {
  const char* lhs;
  const char* rhs;
  const char* result;
  const char* dims;
  double flops;
};
constexpr SmallDot kSmallDots[] = {
    {"f32[256,64]", "f32[64,64]", "f32[256,64]",
     "lhs_contracting_dims={1}, rhs_contracting_dims={0}", 2.0 * 256 * 64 * 64},
    {"f32[256,64]", "f32[64,256]", "f32[256,256]",
     "lhs_contracting_dims={1}, rhs_contracting_dims={0}", 2.0 * 256 * 256 * 64},
    {"f32[256,256]", "f32[256,64]", "f32[256,64]",
     "lhs_contracting_dims={1}, rhs_contracting_dims={0}", 2.0 * 256 * 64 * 256},
    {"f32[256,64]", "f32[256,64]", "f32[256,256]",
     "lhs_contracting_dims={1}, rhs_contracting_dims={1}", 2.0 * 256 * 256 * 64},
    {"f32[256,64]", "f32[256,64]", "f32[64,64]",
     "lhs_contracting_dims={0}, rhs_contracting_dims={0}", 2.0 * 64 * 64 * 256},
    {"f32[32,32,16]", "f32[32,16,32]", "f32[32,32,32]",
     "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}",
     2.0 * 32 * 32 * 32 * 16},
    {"f32[32,32,32]", "f32[32,32,16]", "f32[32,32,16]",
     "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}",
     2.0 * 32 * 32 * 16 * 32},
    {"f32[4096,64]", "f32[4096,64]", "f32[64,64]",
     "lhs_contracting_dims={0}, rhs_contracting_dims={0}", 2.0 * 64 * 64 * 4096},
};

void BM_SmallDotDevice(benchmark::State& state) {
  const SmallDot& dot = kSmallDots[state.range(0)];
  state.SetLabel(absl::StrCat(dot.lhs, " x ", dot.rhs, " ", dot.dims));
  RunOnDevice(
      state,
      absl::StrCat("HloModule d\nENTRY e {\n  x = ", dot.lhs, " parameter(0)\n  w = ", dot.rhs,
                   " parameter(1)\n  ROOT d = ", dot.result, " dot(x, w), ", dot.dims, "\n}\n"),
      dot.flops, 0);
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

void BM_SoftmaxRows(benchmark::State& state) {
  std::string text = R"(HloModule softmax
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[4096,1024]) -> f32[4096,1024] {
  %x = f32[4096,1024] parameter(0)
  %ninf = f32[] constant(-inf)
  %row_max = f32[4096] reduce(%x, %ninf), dimensions={1}, to_apply=%max
  %max_b = f32[4096,1024] broadcast(%row_max), dimensions={0}
  %shifted = f32[4096,1024] subtract(%x, %max_b)
  %exp = f32[4096,1024] exponential(%shifted)
  %zero = f32[] constant(0)
  %row_sum = f32[4096] reduce(%exp, %zero), dimensions={1}, to_apply=%add
  %sum_b = f32[4096,1024] broadcast(%row_sum), dimensions={0}
  ROOT %softmax = f32[4096,1024] divide(%exp, %sum_b)
}
)";
  RunOnDevice(state, text, 0, 2.0 * 4 * 4096 * 1024);  // Read once, write once.
}

void BM_RowReduction(benchmark::State& state) {
  std::string text = R"(HloModule rows
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[4096,1024]) -> f32[4096] {
  %x = f32[4096,1024] parameter(0)
  %zero = f32[] constant(0)
  ROOT %r = f32[4096] reduce(%x, %zero), dimensions={1}, to_apply=%add
}
)";
  RunOnDevice(state, text, 0, 4.0 * 4096 * 1024);
}

double ThreadCpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// An executable of 100 small dependent kernels: the CPU time this thread spends per run, per
// kernel (vkspmd's own host work, recorded once and replayed), next to the wall time beyond the
// GPU timestamps per kernel (on lavapipe, mostly the driver's cost of each dispatch).
void BM_HostOverheadPer100Kernels(benchmark::State& state) {
  std::string text =
      "HloModule chain\nENTRY %main (x: f32[4,4]) -> f32[4,4] {\n  %x = f32[4,4] parameter(0)\n";
  std::string previous = "x";
  for (int k = 0; k < 100; ++k) {
    absl::StrAppend(&text, "  %d", k, " = f32[4,4] dot(%", previous, ", %", previous,
                    "), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n");
    previous = absl::StrCat("d", k);
  }
  absl::StrAppend(&text, "  ROOT %out = f32[4,4] tanh(%", previous, ")\n}\n");
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  if (!module.ok()) return state.SkipWithError(std::string(module.status().message()).c_str());
  auto executable = exec::Executable::Compile(**module, Device(), /*timestamps=*/true);
  if (!executable.ok()) {
    return state.SkipWithError(std::string(executable.status().message()).c_str());
  }
  std::vector<ir::Literal> arguments = {
      RandomLiteral((*module)->entry()->parameter(0)->shape(), 1)};
  (void)(*executable)->Run(arguments);
  double cpu_seconds = 0, untimed_seconds = 0;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    double cpu_start = ThreadCpuSeconds();
    absl::StatusOr<ir::Literal> result = (*executable)->Run(arguments);
    cpu_seconds += ThreadCpuSeconds() - cpu_start;
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!result.ok()) return state.SkipWithError(std::string(result.status().message()).c_str());
    absl::StatusOr<double> gpu = GpuSeconds(**executable);
    if (!gpu.ok()) return state.SkipWithError(std::string(gpu.status().message()).c_str());
    untimed_seconds += std::max(0.0, wall - *gpu);
  }
  const double runs_times_kernels =
      static_cast<double>(state.iterations()) * (*executable)->kernel_count();
  state.counters["kernels"] = static_cast<double>((*executable)->kernel_count());
  state.counters["host_cpu_us_per_kernel"] = 1e6 * cpu_seconds / runs_times_kernels;
  state.counters["untimed_wall_us_per_kernel"] = 1e6 * untimed_seconds / runs_times_kernels;
}

BENCHMARK(BM_MatmulDevice)
    ->Arg(256)
    ->Arg(512)
    ->Arg(1024)
    ->Arg(2048)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatmulHalfDevice, f16, "f16", "")
    ->Arg(256)
    ->Arg(512)
    ->Arg(1024)
    ->Arg(2048)
    ->Arg(4096)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatmulHalfDevice, f16_shared_memory, "f16", "shared_memory")
    ->Arg(1024)
    ->Arg(2048)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatmulHalfDevice, bf16, "bf16", "")
    ->Arg(256)
    ->Arg(512)
    ->Arg(1024)
    ->Arg(2048)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MatmulOpenBlas)
    ->Arg(256)
    ->Arg(512)
    ->Arg(1024)
    ->Arg(2048)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SmallDotDevice)->DenseRange(0, 7)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FusedElementwiseChainDevice)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Memcpy)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SoftmaxRows)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RowReduction)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HostOverheadPer100Kernels)->UseRealTime()->Unit(benchmark::kMillisecond);

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
