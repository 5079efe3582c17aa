// One file per device that owns shards, appended shard by shard while hashing.
#include "src/checkpoint/step_writer.h"

#include <chrono>
#include <filesystem>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "src/base/status_macros.h"
#include "src/checkpoint/durable_file.h"
#include "src/checkpoint/step_directory.h"
#include "src/io/checksum.h"

namespace vkspmd::checkpoint {
namespace {

std::string ShardFileName(const ShardSnapshot& shard) {
  return shard.devices.empty() ? "host.bin" : absl::StrCat("device_", shard.devices[0], ".bin");
}

}  // namespace

absl::Status WriteStep(const std::string& directory, int64_t step, const Snapshot& snapshot) {
  VKSPMD_ASSIGN_OR_RETURN(PendingStep pending, PendingStep::Create(directory, step));
  io::Manifest manifest;
  manifest.library_version = VKSPMD_LIBRARY_VERSION;
  manifest.step = step;
  manifest.created = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
  manifest.integers = snapshot.integers;
  manifest.metadata = snapshot.metadata;
  // Which shards go to which file, in tensor order within each file.
  std::map<std::string, std::vector<std::pair<size_t, size_t>>> files;
  for (size_t t = 0; t < snapshot.tensors.size(); ++t) {
    manifest.tensors.push_back(snapshot.tensors[t].description);
    manifest.tensors.back().shards.resize(snapshot.tensors[t].shards.size());
    for (size_t s = 0; s < snapshot.tensors[t].shards.size(); ++s) {
      files[ShardFileName(snapshot.tensors[t].shards[s])].emplace_back(t, s);
    }
  }
  for (const auto& [name, shards] : files) {
    const std::string path = (std::filesystem::path(pending.path()) / name).string();
    VKSPMD_ASSIGN_OR_RETURN(DurableFile file, DurableFile::Create(path));
    for (const auto& [t, s] : shards) {
      const ShardSnapshot& shard = snapshot.tensors[t].shards[s];
      io::ManifestShard& entry = manifest.tensors[t].shards[s];
      entry.file = name;
      entry.offset = file.size();
      entry.length = shard.bytes.size();
      entry.checksum = io::Xxh3(shard.bytes);
      entry.start = shard.box.start;
      entry.stop = shard.box.stop;
      entry.devices = shard.devices;
      VKSPMD_RETURN_IF_ERROR(file.Append(shard.bytes));
    }
    VKSPMD_RETURN_IF_ERROR(file.SyncAndClose());
  }
  return pending.Commit(io::SerializeManifest(manifest));
}

}  // namespace vkspmd::checkpoint
