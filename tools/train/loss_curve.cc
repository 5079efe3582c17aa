// CSV and SVG output of a loss curve.
#include "tools/train/loss_curve.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "fmt/format.h"

namespace vkspmd::train {
namespace {

// The error of a failed file operation on `path`, with the OS's reason.
absl::Status FileError(const std::string& what, const std::string& path, int error) {
  const std::string message = absl::StrCat("cannot ", what, " ", path, ": ", std::strerror(error));
  return error == EACCES || error == EPERM || error == EROFS
             ? absl::PermissionDeniedError(message)
             : absl::FailedPreconditionError(message);
}

std::string Escape(const std::string& text) {
  std::string escaped;
  for (char c : text) {
    switch (c) {
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '&':
        escaped += "&amp;";
        break;
      default:
        escaped += c;
    }
  }
  return escaped;
}

}  // namespace

absl::StatusOr<LossLog> LossLog::Open(const std::string& directory) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) return FileError("create the directory", directory, error.value());
  std::string path = directory + "/loss.csv";
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) return FileError("write", path, errno);
  LossLog log(std::move(path), file);
  if (std::fputs("step,loss\n", file) < 0 || std::fflush(file) != 0) {
    return FileError("write", log.path_, errno);
  }
  return log;
}

absl::StatusOr<LossLog> LossLog::Resume(const std::string& directory, int64_t last_step,
                                        std::vector<double>& kept) {
  const std::string path = directory + "/loss.csv";
  std::string rows = "step,loss\n";
  kept.clear();
  if (std::FILE* old = std::fopen(path.c_str(), "r")) {
    char line[256];
    while (std::fgets(line, sizeof(line), old) != nullptr) {
      long long step = 0;
      double loss = 0;
      if (std::sscanf(line, "%lld,%lf", &step, &loss) != 2) continue;  // The header.
      if (step != static_cast<long long>(kept.size()) + 1 || step > last_step) break;
      kept.push_back(loss);
      rows += line;
    }
    std::fclose(old);
  }
  // Rewritten whole beside the old file and renamed over it: an interruption leaves one of them.
  const std::string temporary = path + ".tmp";
  std::FILE* file = std::fopen(temporary.c_str(), "w");
  if (file == nullptr) return FileError("write", temporary, errno);
  const bool written = std::fputs(rows.c_str(), file) >= 0 && std::fflush(file) == 0;
  std::fclose(file);
  if (!written) return FileError("write", temporary, errno);
  if (std::rename(temporary.c_str(), path.c_str()) != 0) return FileError("replace", path, errno);
  file = std::fopen(path.c_str(), "a");
  if (file == nullptr) return FileError("write", path, errno);
  return LossLog(path, file);
}

absl::Status LossLog::Append(int64_t step, double loss) {
  const std::string row = fmt::format("{},{:.9g}\n", step, loss);
  if (std::fputs(row.c_str(), file_.get()) < 0 || std::fflush(file_.get()) != 0) {
    return FileError("write", path_, errno);
  }
  return absl::OkStatus();
}

std::string LossSvg(const std::vector<double>& losses, const std::string& title) {
  constexpr double kWidth = 640, kHeight = 400, kLeft = 70, kRight = 20, kTop = 40, kBottom = 50;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  double low = 0, high = 1;
  if (!losses.empty()) {
    low = *std::min_element(losses.begin(), losses.end());
    high = *std::max_element(losses.begin(), losses.end());
  }
  if (!(high > low)) high = low + 1;  // Also guards NaN.
  const size_t steps = std::max<size_t>(losses.size(), 2);
  auto x = [&](size_t i) { return kLeft + plot_w * static_cast<double>(i) / (steps - 1); };
  auto y = [&](double loss) { return kTop + plot_h * (high - loss) / (high - low); };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">{3}</text>\n",
      kWidth, kHeight, kWidth / 2, Escape(title));
  // Axes, with five ticks on each.
  svg += fmt::format("<path d=\"M{0} {1} V{2} H{3}\" stroke=\"black\" fill=\"none\"/>\n", kLeft,
                     kTop, kTop + plot_h, kLeft + plot_w);
  for (int tick = 0; tick <= 4; ++tick) {
    const double value = low + (high - low) * tick / 4;
    svg += fmt::format(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.3g}</text>\n"
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#ddd\"/>\n",
        kLeft - 6, y(value) + 4, value, kLeft, y(value), kLeft + plot_w, y(value));
    const size_t step = (steps - 1) * tick / 4;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x(step),
                       kTop + plot_h + 18, step + 1);
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">step</text>\n"
      "<text x=\"16\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 16 "
      "{})\">loss</text>\n",
      kLeft + plot_w / 2, kHeight - 10, kTop + plot_h / 2, kTop + plot_h / 2);
  if (!losses.empty()) {
    std::string points;
    for (size_t i = 0; i < losses.size(); ++i) {
      if (!std::isfinite(losses[i])) continue;
      points += fmt::format("{:.1f},{:.1f} ", x(i), y(losses[i]));
    }
    svg += fmt::format(
        "<polyline points=\"{}\" fill=\"none\" stroke=\"#1f77b4\" "
        "stroke-width=\"1.5\"/>\n",
        points);
  }
  return svg + "</svg>\n";
}

absl::Status WriteLossSvg(const std::string& path, const std::vector<double>& losses,
                          const std::string& title) {
  const std::string temporary = absl::StrCat(path, ".tmp-", getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) return FileError("write", temporary, errno);
    out << LossSvg(losses, title);
    out.close();
    if (!out) {
      const int error = errno;
      std::remove(temporary.c_str());
      return FileError("write", temporary, error);
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(temporary.c_str());
    return FileError("replace", path, error);
  }
  return absl::OkStatus();
}

}  // namespace vkspmd::train
