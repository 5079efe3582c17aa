// The loss curve of a run: a CSV (step,loss) appended and flushed as steps finish, so an
// interrupted run keeps every step it completed, and a self-contained SVG line plot with
// labelled axes, replaced atomically, so a run leaves something to look at without plotting tools.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace vkspmd::train {

// DIRECTORY/loss.csv, opened (created or truncated) with its header before the first step, so an
// unwritable directory is reported before any work; one flushed row per finished step.
class LossLog {
 public:
  // Creates `directory` if needed. PERMISSION_DENIED (or the OS error's code) naming the path and
  // the OS error when it cannot be created or the CSV cannot be written.
  static absl::StatusOr<LossLog> Open(const std::string& directory);
  // For a run resumed after step `last_step`: keeps the rows of steps up to it (a run stopped
  // after its last checkpoint may have logged more), returns their losses in `kept`, and appends
  // after them. A missing loss.csv starts a new one.
  static absl::StatusOr<LossLog> Resume(const std::string& directory, int64_t last_step,
                                        std::vector<double>& kept);

  // Appends "step,loss" and flushes it to the OS.
  absl::Status Append(int64_t step, double loss);
  const std::string& path() const { return path_; }

 private:
  struct CloseFile {
    void operator()(std::FILE* file) const { std::fclose(file); }
  };
  LossLog(std::string path, std::FILE* file) : path_(std::move(path)), file_(file) {}
  std::string path_;
  std::unique_ptr<std::FILE, CloseFile> file_;
};

// `title` goes above the plot (e.g. the model, mesh and strategy).
std::string LossSvg(const std::vector<double>& losses, const std::string& title);
// Writes the plot to a temporary file beside `path` and renames it over `path`: a reader sees the
// old plot or the new one, never half of one. Errors name the path and the OS error.
absl::Status WriteLossSvg(const std::string& path, const std::vector<double>& losses,
                          const std::string& title);

}  // namespace vkspmd::train
