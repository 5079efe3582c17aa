// Files written so that a crash never leaves a half-written file looking whole: created
// exclusively (an existing file is never overwritten), every write checked, fsynced before they
// count, and the directories holding them fsynced after a rename or create. Errors name the
// path and the system's reason.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vkspmd::checkpoint {

class DurableFile {
 public:
  // Fails (ALREADY_EXISTS) when `path` exists.
  static absl::StatusOr<DurableFile> Create(const std::string& path);
  DurableFile(DurableFile&& other) noexcept;
  DurableFile& operator=(DurableFile&&) = delete;
  ~DurableFile();

  absl::Status Append(std::span<const uint8_t> bytes);
  // Bytes appended so far.
  uint64_t size() const { return size_; }
  // fsync, then close; the file counts as written only after this.
  absl::Status SyncAndClose();

 private:
  DurableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Creates `path` holding `content`, fsynced.
absl::Status WriteFileDurably(const std::string& path, absl::string_view content);
absl::Status SyncDirectory(const std::string& path);
// A whole file of at most `max_bytes` (larger is an error naming the file).
absl::StatusOr<std::string> ReadWholeFile(const std::string& path, uint64_t max_bytes);
// `length` bytes at `offset` of the open file `fd` (named `path` in errors); a short file is a
// DATA_LOSS error saying how many bytes were there.
absl::Status ReadExactlyAt(int fd, const std::string& path, uint64_t offset,
                           std::span<uint8_t> bytes);

}  // namespace vkspmd::checkpoint
