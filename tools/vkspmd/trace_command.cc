// `vkspmd trace summarize FILE`: what a profiler trace says in a few tables: the kernels that
// take the devices' time, the collectives' bytes and rates, and where the host's time goes.
#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "tools/vkspmd/command.h"

namespace vkspmd::cli {
namespace {

struct Totals {
  int64_t count = 0;
  double micros = 0;
  double bytes = 0;
  std::string op;
};

struct SummarizeOptions {
  std::string file;
  int top = 10;
};

double Number(const nlohmann::json& event, const char* key) {
  auto found = event.find(key);
  return found != event.end() && found->is_number() ? found->get<double>() : 0.0;
}

std::string Text(const nlohmann::json& object, const char* key) {
  auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : "";
}

// Rows sorted by total time, largest first.
std::vector<std::pair<std::string, Totals>> ByTime(const std::map<std::string, Totals>& table) {
  std::vector<std::pair<std::string, Totals>> rows(table.begin(), table.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.micros > b.second.micros; });
  return rows;
}

// The rows of `table` added up by their op.
std::map<std::string, Totals> ByOp(const std::map<std::string, Totals>& table) {
  std::map<std::string, Totals> by_op;
  for (const auto& [name, totals] : table) {
    Totals& op = by_op[totals.op];
    op.op = totals.op;
    op.count += totals.count;
    op.micros += totals.micros;
    op.bytes += totals.bytes;
  }
  return by_op;
}

int Summarize(const SummarizeOptions& options) {
  std::ifstream in(options.file);
  if (!in) {
    fmt::print(stderr, "vkspmd trace: cannot read {}\n", options.file);
    return kExitUsageError;
  }
  nlohmann::json trace = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (trace.is_discarded() || !trace.is_object() || !trace.contains("traceEvents") ||
      !trace["traceEvents"].is_array()) {
    fmt::print(stderr, "vkspmd trace: {} is not a Chrome trace (no traceEvents array)\n",
               options.file);
    return kExitUsageError;
  }
  std::map<std::string, Totals> kernels, collectives, host;
  std::set<int> devices;
  int64_t runs = 0;
  double kernel_micros = 0;
  for (const nlohmann::json& event : trace["traceEvents"]) {
    if (!event.is_object() || Text(event, "ph") != "X") continue;
    const std::string name = Text(event, "name"), category = Text(event, "cat");
    const double dur = Number(event, "dur");
    const nlohmann::json args = event.value("args", nlohmann::json::object());
    Totals* row = nullptr;
    if (category == "kernel") {
      row = &kernels[name];
      kernel_micros += dur;
      devices.insert(static_cast<int>(Number(event, "pid")));
    } else if (category == "collective") {
      row = &collectives[name];
      row->bytes += Number(args, "input_bytes");
    } else {
      row = &host[name];
      if (name == "launch graph") ++runs;
    }
    row->count += 1;
    row->micros += dur;
    if (row->op.empty()) row->op = Text(args, "op");
  }
  const double device_count = std::max<double>(1, static_cast<double>(devices.size()));
  const double per_run = runs > 0 ? static_cast<double>(runs) : 1.0;
  int64_t dispatches = 0;
  for (const auto& [name, totals] : kernels) dispatches += totals.count;
  fmt::print(
      "{}: {} graph run(s) on {} device(s); {} kernel dispatches ({:.0f} per run and device), "
      "{:.3f} ms of kernel time per run and device\n",
      options.file, runs, devices.size(), dispatches, dispatches / per_run / device_count,
      kernel_micros * 1e-3 / per_run / device_count);

  auto kernel_row = [&](const std::string& name, const Totals& totals) {
    fmt::print("  {:<32} {:<12} {:>7} {:>11.3f} {:>10.1f} {:>6.1f}%\n", name, totals.op,
               totals.count, totals.micros * 1e-3, totals.micros / totals.count,
               100.0 * totals.micros / std::max(kernel_micros, 1e-9));
  };
  fmt::print("\nkernel time by op (all devices; share of all kernel time):\n");
  fmt::print("  {:<32} {:<12} {:>7} {:>11} {:>10} {:>7}\n", "op", "", "count", "total ms",
             "mean us", "share");
  for (const auto& [op, totals] : ByTime(ByOp(kernels))) kernel_row("(all " + op + ")", totals);
  fmt::print("\ntop kernels by device time (all devices):\n");
  fmt::print("  {:<32} {:<12} {:>7} {:>11} {:>10} {:>7}\n", "kernel", "op", "count", "total ms",
             "mean us", "share");
  int shown = 0;
  for (const auto& [name, totals] : ByTime(kernels)) {
    if (shown++ == options.top) break;
    kernel_row(name, totals);
  }
  if (!collectives.empty()) {
    // By op first (all-reduce, all-gather, ...), then the most expensive single collectives.
    fmt::print("\ncollectives (host-staged, all devices; bytes are each device's input):\n");
    fmt::print("  {:<32} {:<16} {:>7} {:>11} {:>12} {:>9}\n", "collective", "op", "count",
               "total ms", "bytes", "GB/s");
    auto row = [](const std::string& name, const Totals& totals) {
      fmt::print("  {:<32} {:<16} {:>7} {:>11.3f} {:>12.0f} {:>9.3f}\n", name, totals.op,
                 totals.count, totals.micros * 1e-3, totals.bytes,
                 totals.micros > 0 ? totals.bytes / (totals.micros * 1e3) : 0.0);
    };
    for (const auto& [name, totals] : ByTime(ByOp(collectives))) row("(all " + name + ")", totals);
    shown = 0;
    for (const auto& [name, totals] : ByTime(collectives)) {
      if (shown++ == options.top) break;
      row(name, totals);
    }
  }
  fmt::print("\nhost time per phase (spans nest: a phase includes those inside it):\n");
  fmt::print("  {:<52} {:>7} {:>11}\n", "phase", "count", "total ms");
  for (const auto& [name, totals] : ByTime(host)) {
    fmt::print("  {:<52} {:>7} {:>11.3f}\n", name, totals.count, totals.micros * 1e-3);
  }
  return kExitOk;
}

}  // namespace

void RegisterTraceCommand(CLI::App& app) {
  CLI::App* trace = app.add_subcommand("trace", "look at profiler traces (see docs/profiling.md)");
  trace->require_subcommand(1);
  CLI::App* summarize = trace->add_subcommand(
      "summarize", "top kernels by device time, collectives' bytes and GB/s, host time per phase");
  auto options = std::make_shared<SummarizeOptions>();
  summarize->add_option("file", options->file, "a trace from --trace, VKSPMD_TRACE or the API")
      ->required();
  summarize->add_option("--top", options->top, "kernels to list")->capture_default_str();
  summarize->callback([options] { CommandExitCode() = Summarize(*options); });
}

}  // namespace vkspmd::cli
