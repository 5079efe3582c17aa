// The VKSPMD_DEBUG analysis block printed for every compilation and execution of a lazy graph:
// why it ran (user sync, value read, step marker), which graph (structural hash, inputs, outputs,
// mesh) and the user's source line that triggered it.
#pragma once

#include <cstdint>
#include <string>

namespace vkspmd::debug {

struct GraphAnalysis {
  std::string event;   // "compilation" or "execution".
  std::string cause;   // "user sync", "value read", "step marker".
  std::string source;  // "file.cc:42 (function)".
  std::string graph_hash;
  int64_t inputs = 0;
  int64_t outputs = 0;
  std::string placement;  // "device 0" or the mesh.
  std::string detail;     // e.g. "cache miss, compiled in 0.120 s".
};

// The block as text, one "  key: value" line per field under a header line.
std::string FormatGraphAnalysis(const GraphAnalysis& analysis);

// Whether VKSPMD_DEBUG=1 (read on every call, so tests may set it while running).
bool DebugEnabled();
// Appends the block to VKSPMD_DEBUG_FILE, or writes it to stderr; does nothing unless enabled.
void EmitGraphAnalysis(const GraphAnalysis& analysis);

}  // namespace vkspmd::debug
