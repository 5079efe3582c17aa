// The structural checks of trace_check.h.
#include "tests/profiler/trace_check.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

namespace vkspmd::testing {
namespace {

// ts and dur are written to 0.001 us: two roundings apart.
constexpr double kSlackMicros = 0.0025;

}  // namespace

nlohmann::json ReadTrace(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {{"error", "cannot open " + path}};
  nlohmann::json trace = nlohmann::json::parse(in, nullptr, false);
  if (trace.is_discarded()) return {{"error", path + " is not JSON"}};
  return trace;
}

std::string CheckKeys(const nlohmann::json& trace) {
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array()) {
    return "no traceEvents array";
  }
  if (!trace.contains("displayTimeUnit")) return "no displayTimeUnit";
  for (const nlohmann::json& event : trace["traceEvents"]) {
    for (const char* key : {"ph", "name", "pid", "tid"}) {
      if (!event.contains(key)) return std::string("an event without ") + key + ": " + event.dump();
    }
    const std::string phase = event["ph"];
    if (phase != "M" && !event.contains("ts")) return "an event without ts: " + event.dump();
    if (phase == "X" && (!event.contains("dur") || event["dur"].get<double>() < 0)) {
      return "a span without a non-negative dur: " + event.dump();
    }
    if ((phase == "s" || phase == "f") && !event.contains("id")) return "a flow without id";
  }
  return "";
}

std::string CheckNesting(const nlohmann::json& trace) {
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<double, double>>> tracks;
  for (const nlohmann::json& event : trace["traceEvents"]) {
    if (event["ph"] != "X") continue;
    const double ts = event["ts"], dur = event["dur"];
    tracks[{event["pid"].get<int64_t>(), event["tid"].get<int64_t>()}].push_back({ts, ts + dur});
  }
  for (auto& [track, spans] : tracks) {
    // Outer spans first where two start together.
    std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
      return std::make_tuple(a.first, -a.second) < std::make_tuple(b.first, -b.second);
    });
    std::vector<double> open_ends;
    for (const auto& [start, end] : spans) {
      while (!open_ends.empty() && open_ends.back() <= start + kSlackMicros) open_ends.pop_back();
      if (!open_ends.empty() && end > open_ends.back() + kSlackMicros) {
        return "on pid " + std::to_string(track.first) + " tid " + std::to_string(track.second) +
               " a span [" + std::to_string(start) + ", " + std::to_string(end) +
               "] starts inside one ending at " + std::to_string(open_ends.back()) +
               " and ends after it";
      }
      open_ends.push_back(end);
    }
  }
  return "";
}

std::string CheckFlows(const nlohmann::json& trace) {
  std::map<uint64_t, std::pair<int, int>> flows;  // id -> (starts, finishes)
  for (const nlohmann::json& event : trace["traceEvents"]) {
    if (event["ph"] == "s") ++flows[event["id"].get<uint64_t>()].first;
    if (event["ph"] == "f") ++flows[event["id"].get<uint64_t>()].second;
  }
  for (const auto& [id, ends] : flows) {
    if (ends.first != 1 || ends.second != 1) {
      return "flow " + std::to_string(id) + " has " + std::to_string(ends.first) +
             " start(s) and " + std::to_string(ends.second) + " finish(es)";
    }
  }
  return "";
}

}  // namespace vkspmd::testing
