// Chrome trace JSON from buffered events: the text ui.perfetto.dev and chrome://tracing open.
#include <cmath>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "src/debug/trace_writer.h"

namespace vkspmd::debug {
namespace {

void AppendEscaped(std::string& out, const std::string& text) {
  out += '"';
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

// Microseconds with nanosecond resolution; JSON has no NaN or infinity.
void AppendMicros(std::string& out, double micros) {
  out += fmt::format("{:.3f}", std::isfinite(micros) ? micros : 0.0);
}

void AppendEvent(std::string& out, const TraceEvent& event) {
  out += "{\"ph\":\"";
  out += event.phase;
  out += "\",\"name\":";
  AppendEscaped(out, event.name);
  if (!event.category.empty()) {
    out += ",\"cat\":";
    AppendEscaped(out, event.category);
  }
  out += fmt::format(",\"pid\":{},\"tid\":{}", event.pid, event.tid);
  if (event.phase != 'M') {
    out += ",\"ts\":";
    AppendMicros(out, event.ts_us);
  }
  if (event.phase == 'X') {
    out += ",\"dur\":";
    AppendMicros(out, event.dur_us < 0 ? 0 : event.dur_us);
  }
  if (event.phase == 's' || event.phase == 'f') out += fmt::format(",\"id\":{}", event.id);
  // A flow's end binds to the slice enclosing it, not to the next one to start.
  if (event.phase == 'f') out += ",\"bp\":\"e\"";
  if (event.phase == 'i') out += ",\"s\":\"t\"";
  if (event.text_args.empty() && event.number_args.empty()) {
    out += '}';
    return;
  }
  out += ",\"args\":{";
  bool first = true;
  for (const auto& [key, value] : event.text_args) {
    if (!first) out += ',';
    first = false;
    AppendEscaped(out, key);
    out += ':';
    AppendEscaped(out, value);
  }
  for (const auto& [key, value] : event.number_args) {
    if (!first) out += ',';
    first = false;
    AppendEscaped(out, key);
    out += fmt::format(":{}", std::isfinite(value) ? value : 0.0);
  }
  out += "}}";
}

}  // namespace

std::string TraceJson(const std::vector<TraceEvent>& events) {
  std::string out = "{\"traceEvents\":[\n";
  for (size_t k = 0; k < events.size(); ++k) {
    AppendEvent(out, events[k]);
    out += k + 1 < events.size() ? ",\n" : "\n";
  }
  out +=
      "],\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"vkspmd\",\"clock\":"
      "\"steady_clock microseconds; device timestamps placed by bracketing each submission\"}}\n";
  return out;
}

}  // namespace vkspmd::debug
