// Cache directory checks, atomic entry writes and LRU eviction, over POSIX file calls.
#include "src/exec/cache_directory.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace vkspmd::exec {
namespace {

constexpr absl::string_view kEntrySuffix = ".bin";
constexpr absl::string_view kTemporaryMarker = ".tmp.";
// A temporary file this old belongs to a process that died while writing it.
constexpr auto kStaleTemporaryAge = std::chrono::minutes(10);

std::string ErrnoText() { return std::strerror(errno); }

void Warn(const std::string& message) { std::fprintf(stderr, "vkspmd: %s\n", message.c_str()); }

// Creates `path` and any missing parents with mode 0700 (as XDG asks of cache directories).
absl::Status CreateDirectories(const std::filesystem::path& path) {
  if (path.empty() || std::filesystem::exists(path)) return absl::OkStatus();
  if (absl::Status parent = CreateDirectories(path.parent_path()); !parent.ok()) return parent;
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create ", path.string(), ": ", ErrnoText()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint8_t>> ReadWholeFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(ErrnoText());
  std::vector<uint8_t> bytes;
  uint8_t buffer[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const std::string error = ErrnoText();
      ::close(fd);
      return absl::DataLossError(absl::StrCat("read failed: ", error));
    }
    if (got == 0) break;
    bytes.insert(bytes.end(), buffer, buffer + got);
  }
  ::close(fd);
  return bytes;
}

absl::Status WriteWholeFile(int fd, std::span<const uint8_t> bytes) {
  while (!bytes.empty()) {
    const ssize_t wrote = ::write(fd, bytes.data(), bytes.size());
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return absl::ResourceExhaustedError(ErrnoText());
    bytes = bytes.subspan(static_cast<size_t>(wrote));
  }
  // No fsync: it cost more than glslang itself (a cold start got 60% slower). An entry a crash
  // leaves empty or torn fails its header check on the next read and is compiled again.
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<CacheDirectory>> CacheDirectory::Open(const std::string& path,
                                                                     bool readonly,
                                                                     uint64_t max_bytes) {
  if (!readonly) {
    if (absl::Status created = CreateDirectories(path); !created.ok()) return created;
  }
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": ", ErrnoText()));
  }
  if (!S_ISDIR(info.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(path, " is not a directory"));
  }
  // Whoever can write the cache can make this process run their SPIR-V: only our own, private
  // directory is trusted.
  if (info.st_uid != ::geteuid()) {
    return absl::FailedPreconditionError(absl::StrCat(path, " is owned by uid ", info.st_uid,
                                                      ", not by this user (", ::geteuid(), ")"));
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s is writable by group or others (mode %04o)", path, info.st_mode & 07777));
  }
  if (!readonly && ::access(path.c_str(), W_OK | X_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(path, " is not writable: ", ErrnoText()));
  }
  return std::unique_ptr<CacheDirectory>(new CacheDirectory(path, readonly, max_bytes));
}

std::string CacheDirectory::EntryPath(const CacheKey& key) const {
  return absl::StrCat(path_, "/", key.Hex(), kEntrySuffix);
}

CacheDirectory::Lookup CacheDirectory::Read(const CacheKey& key) {
  const std::string path = EntryPath(key);
  absl::StatusOr<std::vector<uint8_t>> bytes = ReadWholeFile(path);
  if (!bytes.ok()) {
    if (absl::IsNotFound(bytes.status())) return {std::nullopt, "no entry"};
    Warn(absl::StrCat("ignoring unreadable cache entry ", path, ": ", bytes.status().message()));
    return {std::nullopt, absl::StrCat("unreadable entry: ", bytes.status().message())};
  }
  absl::StatusOr<std::vector<uint8_t>> payload = DecodeCacheEntry(*bytes, key);
  if (!payload.ok()) {
    Warn(absl::StrCat("ignoring corrupt cache entry ", path, ": ", payload.status().message()));
    return {std::nullopt, absl::StrCat("corrupt entry: ", payload.status().message())};
  }
  // Best effort: a read-only cache keeps its old times.
  if (!readonly_) ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
  return {std::move(*payload), ""};
}

bool CacheDirectory::Write(const CacheKey& key, std::span<const uint8_t> payload) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (readonly_) return false;
  static std::atomic<uint64_t> counter{0};
  const std::string final_path = EntryPath(key);
  // Unique per process and write, so concurrent writers never share a temporary file.
  const std::string temporary =
      absl::StrCat(final_path, kTemporaryMarker, ::getpid(), ".", counter++);
  const std::vector<uint8_t> entry = EncodeCacheEntry(key, payload);
  absl::Status written;
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    written = absl::PermissionDeniedError(ErrnoText());
  } else {
    written = WriteWholeFile(fd, entry);
    if (::close(fd) != 0 && written.ok()) written = absl::DataLossError(ErrnoText());
    // rename() replaces an existing entry atomically: readers see the old file or the new one.
    if (written.ok() && ::rename(temporary.c_str(), final_path.c_str()) != 0) {
      written = absl::PermissionDeniedError(ErrnoText());
    }
  }
  if (!written.ok()) {
    ::unlink(temporary.c_str());
    Warn(absl::StrCat("cannot write compile cache entry ", final_path, ": ", written.message(),
                      "; the cache is read-only from now on"));
    readonly_ = true;
    return false;
  }
  // Scanning the directory after every write made cold starts quadratic; scan when this
  // process's own count says the cap may be passed (other processes' writes are seen then).
  if (known_bytes_ < 0 ||
      known_bytes_ + static_cast<int64_t>(entry.size()) > static_cast<int64_t>(max_bytes_)) {
    known_bytes_ = static_cast<int64_t>(EvictToCap());
  } else {
    known_bytes_ += static_cast<int64_t>(entry.size());
  }
  return true;
}

uint64_t CacheDirectory::EvictToCap() {
  struct Entry {
    std::filesystem::file_time_type used;
    uint64_t bytes;
    std::filesystem::path path;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  const auto now = std::filesystem::file_time_type::clock::now();
  std::error_code error;
  for (const auto& file : std::filesystem::directory_iterator(path_, error)) {
    const std::string name = file.path().filename().string();
    std::error_code ignored;
    const auto used = file.last_write_time(ignored);
    if (ignored) continue;  // Removed by another process meanwhile.
    if (absl::StrContains(name, kTemporaryMarker)) {
      if (now - used > kStaleTemporaryAge) std::filesystem::remove(file.path(), ignored);
      continue;
    }
    if (!absl::EndsWith(name, kEntrySuffix)) continue;
    const uint64_t bytes = file.file_size(ignored);
    if (ignored) continue;
    entries.push_back({used, bytes, file.path()});
    total += bytes;
  }
  if (total <= max_bytes_) return total;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& entry : entries) {
    if (total <= max_bytes_) break;
    std::error_code ignored;
    std::filesystem::remove(entry.path, ignored);
    total -= entry.bytes;
  }
  return total;
}

}  // namespace vkspmd::exec
