// The process-wide compile cache: configuration, keys, SPIR-V lookups and the pipeline store.
#include "src/exec/compile_cache.h"

#include <xxhash.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "absl/strings/str_cat.h"
#include "src/base/environment.h"
#include "src/codegen/shader_compiler.h"
#include "src/debug/graph_analysis.h"
#include "src/debug/metrics.h"
#include "src/exec/cache_directory.h"
#include "src/runtime/runtime_config.h"

namespace vkspmd::exec {
namespace {

constexpr uint32_t kSpirvMagic = 0x07230203;

std::mutex mutex;
bool configured = false;                      // Guarded by mutex.
std::shared_ptr<CacheDirectory>* directory =  // Guarded by mutex; null: uncached.
    new std::shared_ptr<CacheDirectory>();

void Warn(const std::string& message) { std::fprintf(stderr, "vkspmd: %s\n", message.c_str()); }

// Why a compile missed, for VKSPMD_DEBUG=1.
void ExplainMiss(absl::string_view what, absl::string_view reason) {
  if (!debug::DebugEnabled()) return;
  std::fprintf(stderr, "vkspmd: compile cache miss for %.*s: %.*s\n", static_cast<int>(what.size()),
               what.data(), static_cast<int>(reason.size()), reason.data());
}

void ConfigureLocked(const CompileCacheOptions& options) {
  configured = true;
  directory->reset();
  if (options.directory.empty()) return;
  absl::StatusOr<std::unique_ptr<CacheDirectory>> opened =
      CacheDirectory::Open(options.directory, options.readonly, options.max_bytes);
  if (!opened.ok()) {
    Warn(absl::StrCat("compile cache refused, running uncached: ", opened.status().message()));
    return;
  }
  *directory = std::move(*opened);
}

std::shared_ptr<CacheDirectory> CurrentDirectory() {
  std::lock_guard<std::mutex> lock(mutex);
  if (!configured) {
    absl::StatusOr<CompileCacheOptions> options = CompileCacheOptions::FromEnvironment();
    if (!options.ok()) {
      Warn(absl::StrCat("compile cache off: ", options.status().message()));
      options = CompileCacheOptions();
    }
    ConfigureLocked(*options);
  }
  return *directory;
}

// Pipeline cache data by device, through the current directory. Remembers the checksum of what it
// last loaded or saved per key so that an unchanged blob is not rewritten on every start.
class DirectoryPipelineCacheStore : public runtime::PipelineCacheStore {
 public:
  std::optional<std::vector<uint8_t>> Load(const runtime::PhysicalDeviceInfo& device) override {
    std::shared_ptr<CacheDirectory> cache = CurrentDirectory();
    if (cache == nullptr) return std::nullopt;
    const CacheKey key = PipelineCacheKey(device);
    CacheDirectory::Lookup found = cache->Read(key);
    if (!found.payload) {
      ExplainMiss(absl::StrCat("the pipeline cache of ", device.name), found.miss_reason);
      return std::nullopt;
    }
    debug::RecordPipelineCacheLoad(static_cast<int64_t>(found.payload->size()));
    Remember(key, *found.payload);
    return found.payload;
  }

  void Save(const runtime::PhysicalDeviceInfo& device, std::span<const uint8_t> data) override {
    std::shared_ptr<CacheDirectory> cache = CurrentDirectory();
    if (cache == nullptr || cache->readonly()) return;
    const CacheKey key = PipelineCacheKey(device);
    if (!Remember(key, data)) return;
    if (cache->Write(key, data)) debug::RecordCompileCacheWrite(static_cast<int64_t>(data.size()));
  }

 private:
  // False when `data` is what the key last held.
  bool Remember(const CacheKey& key, std::span<const uint8_t> data) {
    const uint64_t checksum = XXH3_64bits(data.data(), data.size());
    std::lock_guard<std::mutex> lock(known_mutex_);
    auto [slot, added] = known_.try_emplace(key.Hex(), checksum);
    if (!added && slot->second == checksum) return false;
    slot->second = checksum;
    return true;
  }

  std::mutex known_mutex_;
  std::map<std::string, uint64_t> known_;
};

}  // namespace

absl::StatusOr<CompileCacheOptions> CompileCacheOptions::FromEnvironment() {
  CompileCacheOptions options;
  if (std::optional<std::string> path = base::EnvironmentValue("VKSPMD_CACHE_DIR")) {
    options.directory = *path;
  } else if (std::optional<std::string> xdg = base::EnvironmentValue("XDG_CACHE_HOME");
             xdg && !xdg->empty()) {
    options.directory = absl::StrCat(*xdg, "/vkspmd");
  } else if (std::optional<std::string> home = base::EnvironmentValue("HOME");
             home && !home->empty()) {
    options.directory = absl::StrCat(*home, "/.cache/vkspmd");
  }
  absl::StatusOr<bool> readonly = base::BoolFromEnvironment("VKSPMD_CACHE_READONLY");
  if (!readonly.ok()) return readonly.status();
  options.readonly = *readonly;
  if (std::optional<std::string> cap = base::EnvironmentValue("VKSPMD_CACHE_MAX_BYTES");
      cap && !cap->empty()) {
    absl::StatusOr<uint64_t> bytes = runtime::ParseByteSize(*cap);
    if (!bytes.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("VKSPMD_CACHE_MAX_BYTES=", *cap, ": ", bytes.status().message()));
    }
    options.max_bytes = *bytes;
  }
  return options;
}

void ConfigureCompileCache(const CompileCacheOptions& options) {
  std::lock_guard<std::mutex> lock(mutex);
  ConfigureLocked(options);
}

std::string CompileCacheDirectory() {
  std::shared_ptr<CacheDirectory> cache = CurrentDirectory();
  return cache == nullptr ? "" : cache->path();
}

CacheKey SpirvCacheKey(absl::string_view code) {
  return CacheKeyBuilder()
      .Add("spirv")
      .Add(kCacheFormatVersion)
      .Add(VKSPMD_LIBRARY_VERSION)
      .Add(codegen::ShaderCompilerIdentity())
      .Add(code)
      .Build();
}

CacheKey PipelineCacheKey(const runtime::PhysicalDeviceInfo& device) {
  // lavapipe keeps one pipelineCacheUUID and driverVersion across Mesa releases: driverInfo
  // (the Mesa version) is what tells its builds apart.
  return CacheKeyBuilder()
      .Add("vkpipelinecache")
      .Add(kCacheFormatVersion)
      .Add(VKSPMD_LIBRARY_VERSION)
      .Add(device.vendor_id)
      .Add(device.device_id)
      .Add(device.driver_id)
      .Add(device.driver_name)
      .Add(device.driver_info)
      .Add(device.driver_version)
      .Add(device.device_uuid)
      .Add(device.driver_uuid)
      .Add(device.pipeline_cache_uuid)
      .Add(sizeof(void*))
      .Build();
}

absl::StatusOr<std::vector<uint32_t>> CachedSpirv(
    absl::string_view code, absl::string_view name,
    const std::function<absl::StatusOr<std::vector<uint32_t>>()>& compile) {
  std::shared_ptr<CacheDirectory> cache = CurrentDirectory();
  if (cache == nullptr) return compile();
  const CacheKey key = SpirvCacheKey(code);
  CacheDirectory::Lookup found = cache->Read(key);
  if (found.payload) {
    const std::vector<uint8_t>& bytes = *found.payload;
    uint32_t first = 0;
    if (bytes.size() >= 4 && bytes.size() % 4 == 0) std::memcpy(&first, bytes.data(), 4);
    // Not validated again: it was validated before it was stored, and the entry's checksum
    // vouches that these are the same bytes (skipping spirv-val is a fifth of the saving).
    if (first == kSpirvMagic) {
      debug::RecordCompileCacheLookup(true, static_cast<int64_t>(bytes.size()));
      std::vector<uint32_t> spirv(bytes.size() / 4);
      std::memcpy(spirv.data(), bytes.data(), bytes.size());
      return spirv;
    }
    Warn(absl::StrCat("ignoring corrupt cache entry ", cache->EntryPath(key),
                      ": the payload is not SPIR-V"));
    found.miss_reason = "corrupt entry: the payload is not SPIR-V";
  }
  debug::RecordCompileCacheLookup(false, 0);
  ExplainMiss(absl::StrCat("kernel ", name, " (", key.Hex(), ")"), found.miss_reason);
  absl::StatusOr<std::vector<uint32_t>> spirv = compile();
  if (!spirv.ok() || cache->readonly()) return spirv;
  const auto* bytes = reinterpret_cast<const uint8_t*>(spirv->data());
  if (cache->Write(key, std::span<const uint8_t>(bytes, spirv->size() * 4))) {
    debug::RecordCompileCacheWrite(static_cast<int64_t>(spirv->size() * 4));
  }
  return spirv;
}

runtime::PipelineCacheStore* DevicePipelineCacheStore() {
  static auto* store = new DirectoryPipelineCacheStore();
  return store;
}

}  // namespace vkspmd::exec
