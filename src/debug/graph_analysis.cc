// Writing the VKSPMD_DEBUG analysis blocks.
#include "src/debug/graph_analysis.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "fmt/format.h"

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

bool DebugEnabled() {
  const char* value = std::getenv("VKSPMD_DEBUG");
  return value != nullptr && std::string(value) == "1";
}

void EmitGraphAnalysis(const GraphAnalysis& analysis) {
  if (!DebugEnabled()) return;
  static std::mutex mutex;  // Blocks come from the user's thread and the worker.
  std::lock_guard<std::mutex> lock(mutex);
  const std::string text = FormatGraphAnalysis(analysis);
  const char* path = std::getenv("VKSPMD_DEBUG_FILE");
  std::FILE* file = path != nullptr && *path != '\0' ? std::fopen(path, "a") : nullptr;
  std::fputs(text.c_str(), file != nullptr ? file : stderr);
  if (file != nullptr) std::fclose(file);
}

}  // namespace vkspmd::debug
