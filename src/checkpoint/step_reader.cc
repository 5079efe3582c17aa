// Commit marker, manifest and shard reads of one step.
#include "src/checkpoint/step_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/checkpoint/durable_file.h"
#include "src/checkpoint/step_directory.h"
#include "src/io/checksum.h"

namespace vkspmd::checkpoint {
namespace fs = std::filesystem;
namespace {

// A manifest larger than this is not one vkspmd wrote.
constexpr uint64_t kMaxManifestBytes = uint64_t{256} << 20;

absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<StepReader>> StepReader::Open(const std::string& step_path) {
  const fs::path path(step_path);
  std::string name = path.filename().string();
  if (name.empty()) name = path.parent_path().filename().string();
  std::optional<int64_t> step = ParseStepDirectoryName(name);
  std::error_code error;
  if (!fs::is_directory(path, error)) {
    return absl::NotFoundError(absl::StrCat("no checkpoint step at ", step_path));
  }
  if (!step.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        step_path, " is not a checkpoint step directory (expected a directory named step_N)"));
  }
  const std::string marker_path = (path / kCommitFileName).string();
  if (!fs::exists(marker_path, error)) {
    return absl::FailedPreconditionError(absl::StrCat("checkpoint step ", *step, " at ", step_path,
                                                      " is incomplete: it has no ", kCommitFileName,
                                                      " marker"));
  }
  VKSPMD_ASSIGN_OR_RETURN(std::string marker, ReadWholeFile(marker_path, 4096));
  std::optional<uint64_t> recorded = ParseCommitMarker(marker, *step);
  if (!recorded.has_value()) {
    return absl::DataLossError(absl::StrCat(marker_path, " is damaged: it does not name step ",
                                            *step, " and a manifest checksum"));
  }
  const std::string manifest_path = (path / kManifestFileName).string();
  absl::StatusOr<std::string> text = ReadWholeFile(manifest_path, kMaxManifestBytes);
  if (!text.ok()) {
    return Annotate(text.status(),
                    absl::StrCat("checkpoint step ", *step, " has no readable manifest"));
  }
  const uint64_t actual = io::Xxh3(*text);
  if (actual != *recorded) {
    return absl::DataLossError(absl::StrCat(manifest_path,
                                            " is damaged (truncated or changed): its checksum is ",
                                            io::ChecksumText(actual), " but ", kCommitFileName,
                                            " records ", io::ChecksumText(*recorded)));
  }
  VKSPMD_ASSIGN_OR_RETURN(io::Manifest manifest, io::ParseManifest(*text, manifest_path));
  if (manifest.step != *step) {
    return absl::DataLossError(absl::StrCat(manifest_path, " is for step ", manifest.step,
                                            " but lies in the directory of step ", *step));
  }
  return std::unique_ptr<StepReader>(new StepReader(path.string(), std::move(manifest)));
}

StepReader::~StepReader() {
  for (const auto& [name, fd] : files_) ::close(fd);
}

absl::StatusOr<int> StepReader::FileDescriptor(const std::string& file) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = files_.find(file);
  if (it != files_.end()) return it->second;
  const std::string path = (fs::path(path_) / file).string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::DataLossError(
        absl::StrCat("checkpoint shard file ", path, " cannot be opened: ", std::strerror(errno)));
  }
  files_[file] = fd;
  return fd;
}

absl::StatusOr<std::vector<uint8_t>> StepReader::ReadShard(const io::ManifestTensor& tensor,
                                                           size_t index) const {
  const io::ManifestShard& shard = tensor.shards.at(index);
  const Box box{shard.start, shard.stop};
  const std::string context = absl::StrCat("tensor \"", tensor.name, "\" shard ", box.ToString(),
                                           " in ", (fs::path(path_) / shard.file).string());
  absl::StatusOr<int> fd = FileDescriptor(shard.file);
  if (!fd.ok()) return Annotate(fd.status(), absl::StrCat("tensor \"", tensor.name, "\""));
  std::vector<uint8_t> bytes(shard.length);
  absl::Status read =
      ReadExactlyAt(*fd, (fs::path(path_) / shard.file).string(), shard.offset, bytes);
  if (!read.ok()) return Annotate(read, context);
  const uint64_t actual = io::Xxh3(bytes);
  if (actual != shard.checksum) {
    return absl::DataLossError(absl::StrCat(
        context, " (offset ", shard.offset, ", ", shard.length, " bytes) is corrupt: checksum ",
        io::ChecksumText(actual), ", the manifest records ", io::ChecksumText(shard.checksum)));
  }
  return bytes;
}

absl::Status StepReader::Fill(const io::ManifestTensor& tensor,
                              const std::vector<Target>& targets) const {
  const int64_t element_bytes = ir::DTypeByteSize(tensor.dtype);
  for (size_t s = 0; s < tensor.shards.size(); ++s) {
    const Box saved{tensor.shards[s].start, tensor.shards[s].stop};
    if (saved.ElementCount() == 0) continue;
    std::vector<std::pair<const Target*, Box>> overlaps;
    for (const Target& target : targets) {
      if (std::optional<Box> common = Intersect(saved, target.box)) {
        overlaps.emplace_back(&target, *common);
      }
    }
    if (overlaps.empty()) continue;
    VKSPMD_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadShard(tensor, s));
    for (const auto& [target, common] : overlaps) {
      CopyRegion(common, bytes.data(), saved, saved.Extent(), target->data, target->box,
                 target->dims, element_bytes);
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> StepReader::Verify() const {
  std::vector<std::string> problems;
  for (const io::ManifestTensor& tensor : manifest_.tensors) {
    for (size_t s = 0; s < tensor.shards.size(); ++s) {
      absl::StatusOr<std::vector<uint8_t>> bytes = ReadShard(tensor, s);
      if (!bytes.ok()) problems.emplace_back(bytes.status().message());
    }
  }
  return problems;
}

}  // namespace vkspmd::checkpoint
