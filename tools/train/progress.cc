// Drawing the progress bar and the log lines.
#include "tools/train/progress.h"

#include <cmath>
#include <utility>

#include "fmt/format.h"

namespace vkspmd::train {

Progress::Progress(std::FILE* out, int64_t total_steps, bool interactive, int64_t every,
                   std::string unit)
    : out_(out),
      total_(total_steps),
      interactive_(interactive),
      every_(every < 1 ? 1 : every),
      unit_(std::move(unit)) {}

std::string FormatDuration(double seconds) {
  const int64_t total = static_cast<int64_t>(std::llround(std::max(seconds, 0.0)));
  const int64_t hours = total / 3600, minutes = total / 60 % 60, rest = total % 60;
  if (hours > 0) return fmt::format("{}:{:02}:{:02}", hours, minutes, rest);
  return fmt::format("{}:{:02}", minutes, rest);
}

std::string Progress::Line(const StepReport& report) const {
  const double eta = static_cast<double>(total_ - report.step) * report.ms_per_step / 1e3;
  std::string text;
  if (interactive_) {
    constexpr int kWidth = 24;
    const int filled = total_ > 0 ? static_cast<int>(kWidth * report.step / total_) : kWidth;
    text = fmt::format("[{}{}] ", std::string(filled, '#'), std::string(kWidth - filled, '.'));
  }
  text += fmt::format("step {}/{}  loss {:.4f}  {:.0f} {}/s  {:.1f} ms/step  ETA {}", report.step,
                      total_, report.loss, report.items_per_second, unit_, report.ms_per_step,
                      FormatDuration(eta));
  return text;
}

void Progress::Update(const StepReport& report) {
  if (interactive_) {
    fmt::print(out_, "\r{}\x1b[K", Line(report));
    drawn_ = true;
  } else if (report.step % every_ == 0 || report.step == total_ || report.step == 1) {
    fmt::print(out_, "{}\n", Line(report));
  }
  std::fflush(out_);
}

void Progress::Finish() {
  if (interactive_ && drawn_) fmt::print(out_, "\n");
  drawn_ = false;
}

}  // namespace vkspmd::train
