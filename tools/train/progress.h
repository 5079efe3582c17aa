// Training progress on the terminal: a bar redrawn in place (step, loss, tokens/s, ms/step, ETA)
// when the output is a terminal, and plain log lines (every `every` steps and the last) when it
// is not, so logs and CI output stay readable.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace vkspmd::train {

struct StepReport {
  int64_t step = 0;  // 1-based.
  double loss = 0;
  double items_per_second = 0;  // Tokens or samples.
  double ms_per_step = 0;
};

class Progress {
 public:
  // `interactive`: redraw one line (a terminal); otherwise print a line every `every` steps.
  // `unit` names what the throughput counts ("tokens", "samples").
  Progress(std::FILE* out, int64_t total_steps, bool interactive, int64_t every = 10,
           std::string unit = "tokens");
  void Update(const StepReport& report);
  // Ends the bar's line.
  void Finish();

  // The text of one update, without the carriage return: exposed for tests.
  std::string Line(const StepReport& report) const;

 private:
  std::FILE* out_;
  int64_t total_;
  bool interactive_;
  int64_t every_;
  std::string unit_;
  bool drawn_ = false;
};

// "1:05" or "1:02:05".
std::string FormatDuration(double seconds);

}  // namespace vkspmd::train
