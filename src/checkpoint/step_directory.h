// The on-disk protocol of a checkpoint directory. A step is written into a temporary directory
// (step_00000010.tmp-<pid>-<nonce>), every file fsynced, then the manifest and the commit marker
// (COMMITTED, holding the manifest's checksum) are written last, the temporary directory is
// fsynced and renamed to step_00000010 without replacing anything (RENAME_NOREPLACE), and the
// parent is fsynced. Readers list only step_N directories holding COMMITTED, so a crash at any
// point leaves either the whole step or none of it. Deleting a step first renames it to
// .deleting-step_N-<pid>-<nonce> (no longer listed), then removes the tree; stale temporaries and
// unfinished deletions of processes that no longer run are removed by CleanStaleEntries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vkspmd::checkpoint {

inline constexpr char kManifestFileName[] = "manifest.json";
inline constexpr char kCommitFileName[] = "COMMITTED";

// "step_00000010" (at least 8 digits), and back (nullopt for any other name).
std::string StepDirectoryName(int64_t step);
std::optional<int64_t> ParseStepDirectoryName(absl::string_view name);
std::string StepPath(const std::string& directory, int64_t step);

// The committed steps of `directory`, ascending (none when it does not exist).
absl::StatusOr<std::vector<int64_t>> ListCommittedSteps(const std::string& directory);

// The text of COMMITTED for a manifest, and the manifest checksum it names.
std::string CommitMarkerText(int64_t step, absl::string_view manifest_text);
std::optional<uint64_t> ParseCommitMarker(absl::string_view text, int64_t step);

// A step being written. Its destructor removes the temporary directory unless committed.
class PendingStep {
 public:
  // Creates `directory` (and parents) when missing. ALREADY_EXISTS when step_N exists.
  static absl::StatusOr<PendingStep> Create(const std::string& directory, int64_t step);
  PendingStep(PendingStep&& other) noexcept;
  PendingStep& operator=(PendingStep&&) = delete;
  ~PendingStep();

  const std::string& path() const { return temporary_; }
  // Writes the manifest and COMMITTED, fsyncs, renames into place and fsyncs the parent.
  // ALREADY_EXISTS (and nothing changed) when step_N appeared meanwhile.
  absl::Status Commit(absl::string_view manifest_text);

 private:
  PendingStep(std::string directory, int64_t step, std::string temporary)
      : directory_(std::move(directory)), step_(step), temporary_(std::move(temporary)) {}
  std::string directory_;
  int64_t step_ = 0;
  std::string temporary_;  // Empty once committed or moved from.
};

// Deletes committed step N so that no crash leaves a listed, half-deleted step.
absl::Status DeleteStep(const std::string& directory, int64_t step);
// Removes temporaries and unfinished deletions whose writing process no longer runs. Returns how
// many entries it removed.
absl::StatusOr<int64_t> CleanStaleEntries(const std::string& directory);

}  // namespace vkspmd::checkpoint
