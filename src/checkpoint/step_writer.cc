// One file per device that owns shards, appended shard by shard while hashing.
#include "src/checkpoint/step_writer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "src/base/status_macros.h"
#include "src/checkpoint/durable_file.h"
#include "src/checkpoint/step_directory.h"
#include "src/debug/trace_writer.h"
#include "src/io/checksum.h"

namespace vkspmd::checkpoint {
namespace {

std::string ShardFileName(const ShardSnapshot& shard) {
  return shard.devices.empty() ? "host.bin" : absl::StrCat("device_", shard.devices[0], ".bin");
}

// Writes the shards `shards` ((tensor, shard) indices) into the new file `path`, hashing each and
// recording where it went in `manifest`.
absl::Status WriteShardFile(const std::string& path, const std::string& name,
                            const std::vector<std::pair<size_t, size_t>>& shards,
                            const Snapshot& snapshot, io::Manifest& manifest) {
  VKSPMD_ASSIGN_OR_RETURN(DurableFile file, DurableFile::Create(path));
  for (const auto& [t, s] : shards) {
    const ShardSnapshot& shard = snapshot.tensors[t].shards[s];
    io::ManifestShard& entry = manifest.tensors[t].shards[s];
    entry.file = name;
    entry.offset = file.size();
    entry.length = shard.bytes.size();
    const std::span<const uint8_t> bytes(shard.bytes.data(), shard.bytes.size());
    entry.checksum = io::Xxh3(bytes);
    entry.start = shard.box.start;
    entry.stop = shard.box.stop;
    entry.devices = shard.devices;
    VKSPMD_RETURN_IF_ERROR(file.Append(bytes));
  }
  return file.SyncAndClose();
}

// Enough to overlap one file's fsync with another's writing on a small machine.
constexpr size_t kWriterThreads = 4;

}  // namespace

absl::Status WriteStep(const std::string& directory, int64_t step, const Snapshot& snapshot) {
  debug::ScopedTraceSpan span("checkpoint write", "checkpoint");
  span.AddArg("step", static_cast<double>(step));
  span.AddArg("bytes", static_cast<double>(snapshot.ByteSize()));
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
  // Files are written by a few threads at once: hashing, copying into the page cache and the
  // fsyncs of different files overlap. Each thread fills only its own shards' manifest entries.
  std::vector<const std::pair<const std::string, std::vector<std::pair<size_t, size_t>>>*> queue;
  for (const auto& entry : files) queue.push_back(&entry);
  std::atomic<size_t> next{0};
  std::vector<absl::Status> errors(queue.size());
  auto work = [&] {
    for (size_t i = next++; i < queue.size(); i = next++) {
      const auto& [name, shards] = *queue[i];
      errors[i] = WriteShardFile((std::filesystem::path(pending.path()) / name).string(), name,
                                 shards, snapshot, manifest);
    }
  };
  std::vector<std::thread> writers;
  const size_t thread_count = std::min<size_t>(queue.size(), kWriterThreads);
  for (size_t t = 1; t < thread_count; ++t) writers.emplace_back(work);
  work();
  for (std::thread& writer : writers) writer.join();
  for (const absl::Status& error : errors) VKSPMD_RETURN_IF_ERROR(error);
  VKSPMD_RETURN_IF_ERROR(pending.Commit(io::SerializeManifest(manifest)));
  // The moment the step became visible, as an instant on the writing thread's track.
  if (debug::TracingOn()) {
    debug::TraceEvent commit;
    commit.phase = 'i';
    commit.name = "checkpoint commit";
    commit.category = "checkpoint";
    commit.tid = debug::HostTrack();
    commit.ts_us = debug::TraceNowMicros();
    commit.number_args = {{"step", static_cast<double>(step)}};
    commit.text_args = {{"path", StepPath(directory, step)}};
    debug::AddTraceEvent(std::move(commit));
  }
  return absl::OkStatus();
}

}  // namespace vkspmd::checkpoint
