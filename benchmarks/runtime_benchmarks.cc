// Runtime costs: submit + wait of one dispatch, per-dispatch cost inside a recorded sequence of
// 100 (with and without barriers between them, of 1 and 64 workgroups), and host↔device bandwidth
// from 1 MiB to 256 MiB next to memcpy of the same sizes measured in the same run. The device's
// name and type go into the JSON context, so a CPU device (lavapipe) is never mistaken for a GPU
// figure.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "src/runtime/buffer.h"
#include "src/runtime/command_sequence.h"
#include "src/runtime/device_set.h"
#include "src/runtime/transfers.h"
#include "tests/shaders/embedded_shaders.h"

namespace vkspmd::runtime {
namespace {

struct CountPush {
  uint32_t count;
};

// One device set per transfer path, opened on first use and kept for the whole run.
DeviceSet& Devices(bool force_staging) {
  static std::unique_ptr<DeviceSet> sets[2];
  std::unique_ptr<DeviceSet>& set = sets[force_staging ? 1 : 0];
  if (!set) {
    absl::StatusOr<RuntimeConfig> config = RuntimeConfig::FromEnvironment();
    if (!config.ok()) std::abort();
    config->mesh_device_count = 1;
    config->validation = false;
    config->force_staging = force_staging;
    absl::StatusOr<std::unique_ptr<DeviceSet>> created = DeviceSet::Create(*config);
    if (!created.ok()) {
      std::fprintf(stderr, "cannot open a device: %s\n",
                   std::string(created.status().message()).c_str());
      std::exit(77);
    }
    set = std::move(*created);
  }
  return *set;
}

// The value, or exit with the error: set-up steps a benchmark cannot run without.
template <typename T>
T Required(absl::StatusOr<T> value, const char* what) {
  if (!value.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, std::string(value.status().message()).c_str());
    std::exit(1);
  }
  return std::move(*value);
}

void Check(const absl::Status& status, benchmark::State& state) {
  if (!status.ok()) state.SkipWithError(std::string(status.message()).c_str());
}

std::unique_ptr<ComputePipeline> AddPipeline(MeshDevice& device) {
  PipelineSpec spec;
  spec.name = "vector_add_f32";
  spec.spirv = Required(shaders::EmbeddedShader("vector_add_f32"), "vector_add_f32");
  spec.bindings = {BindingAccess::kRead, BindingAccess::kRead, BindingAccess::kWrite};
  spec.push_constant_bytes = sizeof(CountPush);
  spec.specialization = {64};
  return Required(ComputePipeline::Create(device.device(), spec), "creating vector_add_f32");
}

// Submit + wait of a sequence of `dispatches` tiny dispatches of `workgroups` workgroups (64
// elements each). Dependent: each reads what the one before wrote (a barrier between each pair);
// independent: each writes its own buffer, so the recorder puts no barrier between them. The
// difference is what a barrier costs; with LP_NUM_THREADS=0 against the default, what llvmpipe's
// hand-off of each grid to its compute threads costs (docs/performance.md).
void RunDispatches(benchmark::State& state, int dispatches, bool dependent = true,
                   uint32_t workgroups = 1) {
  MeshDevice& device = Devices(false).device(0);
  std::unique_ptr<ComputePipeline> add = AddPipeline(device);
  const uint64_t bytes = 256 * workgroups;
  auto a = Required(Buffer::Create(device, bytes), "allocating a buffer");
  std::vector<std::unique_ptr<Buffer>> outputs;
  for (int i = 0; i < (dependent ? 1 : dispatches); ++i) {
    outputs.push_back(Required(Buffer::Create(device, bytes), "allocating a buffer"));
  }
  CommandRecorder recorder(device);
  for (int i = 0; i < dispatches; ++i) {
    Buffer* out = outputs[dependent ? 0 : i].get();
    Buffer* in = dependent ? out : a.get();
    recorder.Dispatch(*add, {{a.get()}, {in}, {out}}, CountPush{64 * workgroups},
                      {workgroups, 1, 1});
  }
  auto sequence = recorder.Finish();
  if (!sequence.ok()) return Check(sequence.status(), state);
  Check((*sequence)->Run(), state);  // Warm-up: the first run pays for pipeline compilation.
  for (auto _ : state) Check((*sequence)->Run(), state);
  // Seconds per dispatch (1 / dispatches per second), shown with an SI prefix (u = microseconds).
  state.counters["seconds_per_dispatch"] = benchmark::Counter(
      dispatches, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_DispatchRoundTrip(benchmark::State& state) { RunDispatches(state, 1); }
void BM_RecordedSequenceOf100Dispatches(benchmark::State& state) { RunDispatches(state, 100); }
void BM_RecordedSequenceOf100IndependentDispatches(benchmark::State& state) {
  RunDispatches(state, 100, false);
}
void BM_RecordedSequenceOf100Dispatches64Workgroups(benchmark::State& state) {
  RunDispatches(state, 100, true, 64);
}
void BM_RecordedSequenceOf100IndependentDispatches64Workgroups(benchmark::State& state) {
  RunDispatches(state, 100, false, 64);
}

// memcpy bandwidth (bytes/s) of `size` bytes between two host buffers, best of a few tries.
double MemcpyBandwidth(size_t size) {
  std::vector<std::byte> source(size, std::byte{1});
  std::vector<std::byte> destination(size);
  std::memcpy(destination.data(), source.data(), size);
  double best = 0;
  for (int repeat = 0; repeat < 5; ++repeat) {
    auto start = std::chrono::steady_clock::now();
    std::memcpy(destination.data(), source.data(), size);
    benchmark::DoNotOptimize(destination.data());
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, size / seconds);
  }
  return best;
}

void RunTransfer(benchmark::State& state, bool upload, bool force_staging) {
  const size_t size = static_cast<size_t>(state.range(0)) << 20;
  MeshDevice& device = Devices(force_staging).device(0);
  auto buffer = Buffer::Create(device, size);
  if (!buffer.ok()) return Check(buffer.status(), state);
  std::vector<std::byte> host(size, std::byte{7});
  Check(Upload(host, **buffer), state);  // Touch every page once before timing.
  for (auto _ : state) {
    Check(upload ? Upload(host, **buffer) : Download(**buffer, 0, host), state);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * size);
  double memcpy_bandwidth = MemcpyBandwidth(size);
  state.counters["memcpy_GBps"] = memcpy_bandwidth / 1e9;
  // Bandwidth of this transfer divided by memcpy's: 1.0 means as fast as a host memcpy.
  state.counters["vs_memcpy"] = benchmark::Counter(static_cast<double>(size) / memcpy_bandwidth,
                                                   benchmark::Counter::kIsIterationInvariantRate);
}

void BM_HostToDevice(benchmark::State& state) { RunTransfer(state, true, false); }
void BM_DeviceToHost(benchmark::State& state) { RunTransfer(state, false, false); }
void BM_HostToDeviceStaging(benchmark::State& state) { RunTransfer(state, true, true); }
void BM_DeviceToHostStaging(benchmark::State& state) { RunTransfer(state, false, true); }

BENCHMARK(BM_DispatchRoundTrip)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RecordedSequenceOf100Dispatches)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RecordedSequenceOf100IndependentDispatches)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RecordedSequenceOf100Dispatches64Workgroups)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RecordedSequenceOf100IndependentDispatches64Workgroups)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HostToDevice)
    ->RangeMultiplier(4)
    ->Range(1, 256)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DeviceToHost)
    ->RangeMultiplier(4)
    ->Range(1, 256)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HostToDeviceStaging)
    ->RangeMultiplier(4)
    ->Range(1, 256)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DeviceToHostStaging)
    ->RangeMultiplier(4)
    ->Range(1, 256)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace vkspmd::runtime

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  const vkspmd::runtime::PhysicalDeviceInfo& device =
      vkspmd::runtime::Devices(false).device(0).device().physical_device();
  benchmark::AddCustomContext("device_name", device.name);
  benchmark::AddCustomContext("device_type",
                              std::string(vkspmd::runtime::PhysicalDeviceTypeName(device.type)));
  benchmark::AddCustomContext("driver", device.driver_name + " " + device.driver_info);
  if (device.is_cpu()) {
    std::fprintf(stderr, "note: %s is a CPU device; these are not GPU figures\n",
                 device.name.c_str());
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
