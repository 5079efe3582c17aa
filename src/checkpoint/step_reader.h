// Reading a committed checkpoint step: the commit marker, the manifest (checked against the
// checksum the marker records) and the saved shards, each verified (length and XXH3-64) before
// any of its bytes is used. Fill narrows the saved shards into any other boxes, reading only the
// shards that overlap them, each once.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/checkpoint/box.h"
#include "src/io/checkpoint_manifest.h"

namespace vkspmd::checkpoint {

class StepReader {
 public:
  // `step_path` is a step_N directory. Errors: NOT_FOUND for a missing directory,
  // FAILED_PRECONDITION for one without COMMITTED ("incomplete"), DATA_LOSS for a damaged
  // marker or manifest, UNIMPLEMENTED for a newer format; each names the file.
  static absl::StatusOr<std::unique_ptr<StepReader>> Open(const std::string& step_path);
  ~StepReader();
  StepReader(const StepReader&) = delete;
  StepReader& operator=(const StepReader&) = delete;

  const io::Manifest& manifest() const { return manifest_; }
  const std::string& path() const { return path_; }
  int64_t step() const { return manifest_.step; }

  // Saved shard `index` of `tensor`, verified. A short file or a checksum mismatch is DATA_LOSS
  // naming the file, the tensor, the shard's box and both checksums.
  absl::StatusOr<std::vector<uint8_t>> ReadShard(const io::ManifestTensor& tensor,
                                                 size_t index) const;

  // A buffer to fill: it holds the elements of `box` at its start, row-major with dims `dims`
  // (at least the box's extent; a padded device shard is larger).
  struct Target {
    Box box;
    std::vector<int64_t> dims;
    uint8_t* data = nullptr;
  };
  absl::Status Fill(const io::ManifestTensor& tensor, const std::vector<Target>& targets) const;

  // Reads and checks every shard; the problems found, one line each (empty: the step is sound).
  std::vector<std::string> Verify() const;

 private:
  StepReader(std::string path, io::Manifest manifest)
      : path_(std::move(path)), manifest_(std::move(manifest)) {}
  absl::StatusOr<int> FileDescriptor(const std::string& file) const;

  std::string path_;
  io::Manifest manifest_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, int> files_;
};

}  // namespace vkspmd::checkpoint
