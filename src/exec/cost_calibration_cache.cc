// Keeping measured cost models on disk beside the compile cache's entries (one entry per devices,
// driver and mesh), so a calibration runs once per machine, not once per process.
#include <chrono>
#include <cstdio>
#include <map>
#include <utility>

#include "fmt/format.h"
#include "src/base/environment.h"
#include "src/base/status_macros.h"
#include "src/exec/cache_directory.h"
#include "src/exec/compile_cache.h"
#include "src/exec/cost_calibration.h"

#ifndef VKSPMD_LIBRARY_VERSION
#define VKSPMD_LIBRARY_VERSION "unknown"
#endif

namespace vkspmd::exec {
namespace {

// Bumped when the programs, the fit or the model's format change: older entries then miss.
constexpr uint64_t kCalibrationFormat = 3;

void Warn(absl::string_view message) {
  std::fprintf(stderr, "vkspmd: cost model cache: %s\n", std::string(message).c_str());
}

}  // namespace

CacheKey CostModelCacheKey(const spmd::Mesh& mesh, const std::vector<runtime::MeshDevice*>& devices,
                           const CalibrationOptions& options) {
  CacheKeyBuilder key;
  key.Add("vkspmd measured cost model").Add(kCalibrationFormat).Add(VKSPMD_LIBRARY_VERSION);
  key.Add(mesh.ToString());
  // Which VkDevice and queue each mesh device is: devices sharing one (lavapipe's shared queues)
  // time differently from devices of their own.
  std::map<const runtime::LogicalDevice*, uint64_t> logical;
  for (const runtime::MeshDevice* device : devices) {
    if (device == nullptr) {
      key.Add("another process");
      continue;
    }
    key.Add(PipelineCacheKey(device->device().physical_device()).Hex());
    key.Add(logical.try_emplace(&device->device(), logical.size()).first->second);
    key.Add(uint64_t{device->queue_index()});
  }
  // Settings that change how the programs run.
  for (const char* name : {"VKSPMD_DEVICE_COLLECTIVES", "LP_NUM_THREADS"}) {
    key.Add(name).Add(base::EnvironmentValue(name).value_or("(unset)"));
  }
  for (int64_t bytes : options.collective_bytes) key.Add(static_cast<uint64_t>(bytes));
  key.Add(static_cast<uint64_t>(options.chain)).Add(static_cast<uint64_t>(options.repeats));
  key.Add(static_cast<uint64_t>(options.dot_size));
  key.Add(static_cast<uint64_t>(options.elementwise_elements));
  return key.Build();
}

absl::StatusOr<Calibration> CachedCostModel(
    const spmd::Mesh& mesh, const CacheKey& key, const std::string& directory, bool refresh,
    const std::function<absl::StatusOr<spmd::CostModel>()>& measure) {
  std::unique_ptr<CacheDirectory> cache;
  if (!directory.empty()) {
    absl::StatusOr<std::unique_ptr<CacheDirectory>> opened =
        CacheDirectory::Open(directory, /*readonly=*/false, uint64_t{1} << 30);
    if (opened.ok()) {
      cache = std::move(*opened);
    } else {
      Warn(fmt::format("{}; measuring without it", std::string(opened.status().message())));
    }
  }
  Calibration calibration;
  if (cache != nullptr) {
    calibration.cache_path = cache->EntryPath(key);
    if (!refresh) {
      // A damaged entry (header, checksum) is warned about by Read itself.
      CacheDirectory::Lookup found = cache->Read(key);
      if (found.payload.has_value()) {
        const std::string text(found.payload->begin(), found.payload->end());
        absl::StatusOr<spmd::CostModel> parsed = spmd::CostModel::Parse(text, mesh);
        if (parsed.ok()) {
          calibration.model = *std::move(parsed);
          calibration.from_cache = true;
          return calibration;
        }
        Warn(fmt::format("{} is not a cost model of {} ({}); measuring again",
                         calibration.cache_path, mesh.ToString(),
                         std::string(parsed.status().message())));
      }
    }
  }
  const auto start = std::chrono::steady_clock::now();
  VKSPMD_ASSIGN_OR_RETURN(calibration.model, measure());
  calibration.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (cache != nullptr) {
    const std::string text = calibration.model.Serialize(mesh);
    if (!cache->Write(key, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()),
                                                    text.size()))) {
      calibration.cache_path.clear();
    }
  }
  return calibration;
}

absl::StatusOr<Calibration> MeasuredCostModel(const spmd::Mesh& mesh,
                                              const std::vector<runtime::MeshDevice*>& devices,
                                              const CalibrationOptions& options) {
  std::string directory;
  if (options.cache_directory.has_value()) {
    directory = *options.cache_directory;
  } else {
    absl::StatusOr<CompileCacheOptions> cache_options = CompileCacheOptions::FromEnvironment();
    if (cache_options.ok()) {
      directory = cache_options->directory;
    } else {
      Warn(fmt::format("{}; measuring without it", std::string(cache_options.status().message())));
    }
  }
  return CachedCostModel(mesh, CostModelCacheKey(mesh, devices, options), directory,
                         options.refresh, [&]() -> absl::StatusOr<spmd::CostModel> {
                           VKSPMD_ASSIGN_OR_RETURN(CalibrationTimings timings,
                                                   TimeCalibrationPrograms(mesh, devices, options));
                           return FitCostModel(timings, mesh, options);
                         });
}

}  // namespace vkspmd::exec
