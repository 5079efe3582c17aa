// Structural checks of a Chrome trace that every profiler test applies: required keys, durations,
// nesting per track, flows in pairs. Each returns the first problem found, or "" when none.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace vkspmd::testing {

// Parses `path`; a trace that does not parse is an object with an "error" string.
nlohmann::json ReadTrace(const std::string& path);

// {"traceEvents": [...], "displayTimeUnit": ...}, every event with ph, name, pid, tid; ts on all
// but metadata; dur >= 0 on X events.
std::string CheckKeys(const nlohmann::json& trace);
// X events on one (pid, tid) nest: none starts inside another and ends after it.
std::string CheckNesting(const nlohmann::json& trace);
// Every flow id has exactly one "s" and one "f".
std::string CheckFlows(const nlohmann::json& trace);

}  // namespace vkspmd::testing
