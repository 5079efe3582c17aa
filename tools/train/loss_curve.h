// The loss curve of a run, written as CSV (step,loss) and as a self-contained SVG line plot with
// labelled axes, so a run leaves something to look at without plotting tools.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace vkspmd::train {

absl::Status WriteLossCsv(const std::string& path, const std::vector<double>& losses);
// `title` goes above the plot (e.g. the model, mesh and strategy).
std::string LossSvg(const std::vector<double>& losses, const std::string& title);
absl::Status WriteLossSvg(const std::string& path, const std::vector<double>& losses,
                          const std::string& title);

}  // namespace vkspmd::train
