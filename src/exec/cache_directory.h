// One compile-cache directory on disk: checked once when opened (ours, not writable by others),
// entries written through a temporary file and a rename so readers and concurrent writers only
// ever see complete ones, and least-recently-used entries evicted above a size cap.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/exec/cache_entry.h"

namespace vkspmd::exec {

class CacheDirectory {
 public:
  // Creates `path` (mode 0700) when missing. FAILED_PRECONDITION, saying why, for a directory that
  // cannot be created, is not a directory, is owned by another user, is writable by group or
  // others, or (unless `readonly`) cannot be written: the caller then runs uncached.
  static absl::StatusOr<std::unique_ptr<CacheDirectory>> Open(const std::string& path,
                                                              bool readonly, uint64_t max_bytes);

  struct Lookup {
    std::optional<std::vector<uint8_t>> payload;  // Set on a hit.
    std::string miss_reason;                      // "no entry", "corrupt entry: ..." on a miss.
  };
  // A damaged entry is a one-line warning on stderr and a miss; the next Write replaces it.
  // A hit marks the entry recently used (its mtime), which eviction goes by.
  Lookup Read(const CacheKey& key);
  // Stores `payload` under `key` and evicts down to the cap. A failure (disk full, permissions)
  // is a one-line warning, after which this directory is only read. True when the entry was
  // written.
  bool Write(const CacheKey& key, std::span<const uint8_t> payload);

  const std::string& path() const { return path_; }
  bool readonly() const { return readonly_.load(); }
  // The path of the entry for `key` (which need not exist).
  std::string EntryPath(const CacheKey& key) const;

 private:
  CacheDirectory(std::string path, bool readonly, uint64_t max_bytes)
      : path_(std::move(path)), readonly_(readonly), max_bytes_(max_bytes) {}
  // Removes least recently used entries (and stale temporaries) until the entries fit the cap;
  // returns their size then.
  uint64_t EvictToCap();

  const std::string path_;
  std::atomic<bool> readonly_;  // Set for good after a failed write.
  const uint64_t max_bytes_;
  std::mutex mutex_;          // Serialises this process's writes and evictions.
  int64_t known_bytes_ = -1;  // Entries' size at the last scan plus what we wrote since; -1: none.
};

}  // namespace vkspmd::exec
