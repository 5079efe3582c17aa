// Writing the VKSPMD_DEBUG analysis blocks.
#include "src/debug/graph_analysis.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "fmt/format.h"
#include "src/base/environment.h"

namespace vkspmd::debug {

std::string FormatGraphAnalysis(const GraphAnalysis& analysis) {
  std::string text = fmt::format("[vkspmd] {} analysis\n", analysis.event);
  text += fmt::format("  cause: {}\n", analysis.cause);
  text += fmt::format("  source: {}\n", analysis.source);
  text += fmt::format("  graph hash: {}\n", analysis.graph_hash);
  text += fmt::format("  graph inputs: {}\n", analysis.inputs);
  text += fmt::format("  graph outputs: {}\n", analysis.outputs);
  text += fmt::format("  placement: {}\n", analysis.placement);
  if (!analysis.detail.empty()) text += fmt::format("  {}\n", analysis.detail);
  return text;
}

bool DebugEnabled() { return base::EnvironmentValue("VKSPMD_DEBUG") == "1"; }

void EmitGraphAnalysis(const GraphAnalysis& analysis) {
  if (!DebugEnabled()) return;
  static std::mutex mutex;  // Blocks come from the user's thread and the worker.
  std::lock_guard<std::mutex> lock(mutex);
  const std::string text = FormatGraphAnalysis(analysis);
  const std::optional<std::string> path = base::EnvironmentValue("VKSPMD_DEBUG_FILE");
  std::FILE* file = path && !path->empty() ? std::fopen(path->c_str(), "a") : nullptr;
  std::fputs(text.c_str(), file != nullptr ? file : stderr);
  if (file != nullptr) std::fclose(file);
}

}  // namespace vkspmd::debug
