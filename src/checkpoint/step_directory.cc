// Naming, listing, committing and deleting checkpoint steps.
#include "src/checkpoint/step_directory.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/checkpoint/durable_file.h"
#include "src/checkpoint/fault_injection.h"
#include "src/io/checksum.h"

namespace vkspmd::checkpoint {
namespace fs = std::filesystem;
namespace {

constexpr absl::string_view kStepPrefix = "step_";
constexpr absl::string_view kTemporaryInfix = ".tmp-";
constexpr absl::string_view kDeletingPrefix = ".deleting-";

absl::Status FilesystemError(absl::string_view what, const std::string& path,
                             const std::error_code& error) {
  return absl::DataLossError(absl::StrCat(what, " ", path, ": ", error.message()));
}

// "<pid>-<nonce>": who wrote an entry, so a later process can tell a live writer's from a
// dead one's.
std::string OwnerTag() {
  static thread_local std::mt19937_64 generator(std::random_device{}());
  return fmt::format("{}-{:08x}", ::getpid(), static_cast<uint32_t>(generator()));
}

// Whether the process named by an owner tag has ended (unparseable tags count as ended).
bool OwnerEnded(absl::string_view tag) {
  std::vector<absl::string_view> parts = absl::StrSplit(tag, '-');
  int64_t pid = 0;
  if (parts.empty() || !absl::SimpleAtoi(parts[0], &pid) || pid <= 0) return true;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

absl::Status RemoveTree(const std::string& path) {
  std::error_code error;
  fs::remove_all(path, error);
  if (error) return FilesystemError("cannot remove", path, error);
  return absl::OkStatus();
}

}  // namespace

std::string StepDirectoryName(int64_t step) { return fmt::format("step_{:08d}", step); }

std::optional<int64_t> ParseStepDirectoryName(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, kStepPrefix) || name.empty() || name.size() > 18) {
    return std::nullopt;
  }
  for (char c : name) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  int64_t step = 0;
  if (!absl::SimpleAtoi(name, &step)) return std::nullopt;
  return step;
}

std::string StepPath(const std::string& directory, int64_t step) {
  return (fs::path(directory) / StepDirectoryName(step)).string();
}

absl::StatusOr<std::vector<int64_t>> ListCommittedSteps(const std::string& directory) {
  std::vector<int64_t> steps;
  std::error_code error;
  if (!fs::exists(directory, error)) return steps;
  for (fs::directory_iterator it(directory, error), end; !error && it != end; it.increment(error)) {
    std::optional<int64_t> step = ParseStepDirectoryName(it->path().filename().string());
    if (!step.has_value()) continue;
    std::error_code marker_error;
    if (fs::is_regular_file(it->path() / kCommitFileName, marker_error)) steps.push_back(*step);
  }
  if (error) return FilesystemError("cannot list", directory, error);
  std::sort(steps.begin(), steps.end());
  return steps;
}

std::string CommitMarkerText(int64_t step, absl::string_view manifest_text) {
  return fmt::format("vkspmd-checkpoint committed\nstep {}\nmanifest {}\n", step,
                     io::ChecksumText(io::Xxh3(manifest_text)));
}

std::optional<uint64_t> ParseCommitMarker(absl::string_view text, int64_t step) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  if (lines.size() != 3 || lines[0] != "vkspmd-checkpoint committed" ||
      lines[1] != absl::StrCat("step ", step) || !absl::ConsumePrefix(&lines[2], "manifest ")) {
    return std::nullopt;
  }
  return io::ParseChecksumText(lines[2]);
}

absl::StatusOr<PendingStep> PendingStep::Create(const std::string& directory, int64_t step) {
  if (step < 0) return absl::InvalidArgumentError(absl::StrCat("step ", step, " is negative"));
  std::error_code error;
  fs::create_directories(directory, error);
  if (error) return FilesystemError("cannot create checkpoint directory", directory, error);
  const std::string final_path = StepPath(directory, step);
  if (fs::exists(final_path, error)) {
    return absl::AlreadyExistsError(absl::StrCat("checkpoint step ", step, " already exists (",
                                                 final_path, "); steps are never overwritten"));
  }
  const std::string temporary = absl::StrCat(final_path, kTemporaryInfix, OwnerTag());
  VKSPMD_RETURN_IF_ERROR(FaultPoint("step.create"));
  fs::create_directory(temporary, error);
  if (error) return FilesystemError("cannot create", temporary, error);
  return PendingStep(directory, step, temporary);
}

PendingStep::PendingStep(PendingStep&& other) noexcept
    : directory_(std::move(other.directory_)),
      step_(other.step_),
      temporary_(std::move(other.temporary_)) {
  other.temporary_.clear();
}

PendingStep::~PendingStep() {
  if (!temporary_.empty()) (void)RemoveTree(temporary_);
}

absl::Status PendingStep::Commit(absl::string_view manifest_text) {
  const fs::path temporary(temporary_);
  VKSPMD_RETURN_IF_ERROR(WriteFileDurably((temporary / kManifestFileName).string(), manifest_text));
  VKSPMD_RETURN_IF_ERROR(WriteFileDurably((temporary / kCommitFileName).string(),
                                          CommitMarkerText(step_, manifest_text)));
  VKSPMD_RETURN_IF_ERROR(SyncDirectory(temporary_));
  VKSPMD_RETURN_IF_ERROR(FaultPoint("step.rename"));
  const std::string final_path = StepPath(directory_, step_);
  if (::renameat2(AT_FDCWD, temporary_.c_str(), AT_FDCWD, final_path.c_str(), RENAME_NOREPLACE) !=
      0) {
    const int error = errno;
    if (error == EEXIST) {
      return absl::AlreadyExistsError(absl::StrCat("checkpoint step ", step_,
                                                   " appeared while it was being written (",
                                                   final_path, "); steps are never overwritten"));
    }
    return absl::DataLossError(
        absl::StrCat("cannot rename ", temporary_, " to ", final_path, ": ", std::strerror(error)));
  }
  temporary_.clear();
  return SyncDirectory(directory_);
}

absl::Status DeleteStep(const std::string& directory, int64_t step) {
  const std::string path = StepPath(directory, step);
  const std::string doomed =
      (fs::path(directory) /
       absl::StrCat(kDeletingPrefix, StepDirectoryName(step), "-", OwnerTag()))
          .string();
  VKSPMD_RETURN_IF_ERROR(FaultPoint("delete.rename"));
  if (::rename(path.c_str(), doomed.c_str()) != 0) {
    return absl::DataLossError(
        absl::StrCat("cannot rename ", path, " for deletion: ", std::strerror(errno)));
  }
  VKSPMD_RETURN_IF_ERROR(SyncDirectory(directory));
  VKSPMD_RETURN_IF_ERROR(FaultPoint("delete.remove"));
  return RemoveTree(doomed);
}

absl::StatusOr<int64_t> CleanStaleEntries(const std::string& directory) {
  int64_t removed = 0;
  std::error_code error;
  if (!fs::exists(directory, error)) return removed;
  std::vector<std::string> stale;
  for (fs::directory_iterator it(directory, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    absl::string_view owner;
    if (absl::StartsWith(name, kDeletingPrefix)) {
      // .deleting-step_N-<pid>-<nonce>
      absl::string_view rest = absl::string_view(name).substr(kDeletingPrefix.size());
      const size_t dash = rest.find('-');
      owner = dash == absl::string_view::npos ? absl::string_view() : rest.substr(dash + 1);
    } else if (size_t infix = name.find(std::string(kTemporaryInfix));
               absl::StartsWith(name, kStepPrefix) && infix != std::string::npos) {
      owner = absl::string_view(name).substr(infix + kTemporaryInfix.size());
    } else {
      continue;
    }
    if (OwnerEnded(owner)) stale.push_back(it->path().string());
  }
  if (error) return FilesystemError("cannot list", directory, error);
  for (const std::string& path : stale) {
    VKSPMD_RETURN_IF_ERROR(RemoveTree(path));
    ++removed;
  }
  return removed;
}

}  // namespace vkspmd::checkpoint
