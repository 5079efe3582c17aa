// `vkspmd eval FILE.hlo [--input NAME=FILE.npy ...] [--random-inputs SEED] [--output-dir D]`:
// evaluates a module on the CPU reference evaluator (every device of a multi-device module) and
// prints a summary of each output, writing outputs as .npy when an output directory is given.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "src/interp/evaluator.h"
#include "src/interp/npy.h"
#include "src/ir/parser.h"
#include "tools/vkspmd/command.h"

namespace vkspmd::cli {
namespace {

struct EvalOptions {
  std::string path;
  std::vector<std::string> inputs;
  std::optional<uint64_t> random_seed;
  std::string output_dir;
};

constexpr int64_t kPreviewElements = 8;

// Deterministic values from `seed`: floats in [-1, 1), integers in [-10, 10] (unsigned [0, 20]),
// pred true or false. Written with the raw generator so the values do not depend on the standard
// library's distributions.
ir::Literal RandomLiteral(const ir::Shape& shape, std::mt19937_64& generator) {
  if (shape.IsTuple()) {
    std::vector<ir::Literal> elements;
    for (const ir::Shape& element : shape.tuple_elements()) {
      elements.push_back(RandomLiteral(element, generator));
    }
    return ir::Literal::Tuple(std::move(elements));
  }
  ir::Literal literal(shape);
  for (int64_t i = 0; i < literal.ElementCount(); ++i) {
    const uint64_t bits = generator();
    if (ir::IsFloat(shape.dtype())) {
      literal.SetFromDouble(i, static_cast<double>(bits >> 11) * 0x1.0p-52 - 1.0);
    } else if (shape.dtype() == ir::DType::kPred) {
      literal.SetFromUint64(i, bits >> 63);
    } else {
      const int64_t value = static_cast<int64_t>(bits % 21);
      literal.SetFromInt64(i, ir::IsSignedInteger(shape.dtype()) ? value - 10 : value);
    }
  }
  return literal;
}

// Parameter number for "NAME" or "%NAME" or a number; -1 when nothing matches.
int64_t FindParameter(const ir::Computation& entry, std::string name) {
  if (!name.empty() && name[0] == '%') name.erase(0, 1);
  for (int64_t i = 0; i < entry.parameter_count(); ++i) {
    if (entry.parameter(i)->name() == name) return i;
  }
  int64_t number = 0;
  if (absl::SimpleAtoi(name, &number) && number >= 0 && number < entry.parameter_count()) {
    return number;
  }
  return -1;
}

void PrintSummary(const std::string& label, const ir::Literal& value) {
  if (value.shape().IsTuple()) {
    for (size_t i = 0; i < value.tuple_elements().size(); ++i) {
      PrintSummary(fmt::format("{}.{}", label, i), value.tuple_elements()[i]);
    }
    return;
  }
  std::string line = fmt::format("{}: {}", label, value.shape().ToString());
  const int64_t count = value.ElementCount();
  if (count > 0) {
    double minimum = INFINITY, maximum = -INFINITY, sum = 0;
    for (int64_t i = 0; i < count; ++i) {
      const double element = value.GetAsDouble(i);
      minimum = std::fmin(minimum, element);
      maximum = std::fmax(maximum, element);
      sum += element;
    }
    line += fmt::format(" min={:.6g} max={:.6g} mean={:.6g}", minimum, maximum, sum / count);
  }
  std::vector<std::string> preview;
  for (int64_t i = 0; i < std::min(count, kPreviewElements); ++i) {
    preview.push_back(value.ElementToString(i));
  }
  line += fmt::format(" first=[{}{}]", absl::StrJoin(preview, ", "),
                      count > kPreviewElements ? ", ..." : "");
  fmt::print("{}\n", line);
}

absl::Status WriteOutputs(const std::string& directory, const std::string& stem,
                          const ir::Literal& value) {
  if (value.shape().IsTuple()) {
    for (size_t i = 0; i < value.tuple_elements().size(); ++i) {
      absl::Status status =
          WriteOutputs(directory, fmt::format("{}.{}", stem, i), value.tuple_elements()[i]);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }
  return interp::WriteNpyFile((std::filesystem::path(directory) / (stem + ".npy")).string(), value);
}

int Fail(int code, std::string_view message) {
  fmt::print(stderr, "vkspmd eval: {}\n", message);
  return code;
}

int RunEval(const EvalOptions& options) {
  std::ifstream file(options.path);
  if (!file) return Fail(kExitRuntimeError, fmt::format("cannot open {}", options.path));
  std::stringstream text;
  text << file.rdbuf();
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text.str());
  if (!module.ok()) {
    // "FILE:LINE:COLUMN: message" when the error has a position, else "FILE: message".
    const std::string message(module.status().message());
    const bool positioned =
        !message.empty() && std::isdigit(static_cast<unsigned char>(message[0]));
    fmt::print(stderr, "{}:{}{}\n", options.path, positioned ? "" : " ", message);
    return kExitRuntimeError;
  }
  const ir::Computation& entry = *(*module)->entry();
  std::vector<std::optional<ir::Literal>> arguments(entry.parameter_count());
  for (const std::string& input : options.inputs) {
    const size_t equals = input.find('=');
    if (equals == std::string::npos) {
      return Fail(kExitUsageError, fmt::format("--input {} must be NAME=FILE.npy", input));
    }
    const int64_t number = FindParameter(entry, input.substr(0, equals));
    if (number < 0) {
      return Fail(kExitUsageError, fmt::format("--input {}: the entry has no parameter named {}",
                                               input, input.substr(0, equals)));
    }
    absl::StatusOr<ir::Literal> literal = interp::ReadNpyFile(input.substr(equals + 1));
    if (!literal.ok()) return Fail(kExitRuntimeError, std::string(literal.status().message()));
    arguments[number] = std::move(*literal);
  }
  std::mt19937_64 generator(options.random_seed.value_or(0));
  std::vector<ir::Literal> filled;
  for (int64_t i = 0; i < entry.parameter_count(); ++i) {
    const ir::Instruction& parameter = *entry.parameter(i);
    if (!arguments[i].has_value()) {
      if (!options.random_seed.has_value()) {
        return Fail(
            kExitUsageError,
            fmt::format("no input for parameter {} (%{}: {}); pass --input {}=FILE.npy "
                        "or --random-inputs SEED",
                        i, parameter.name(), parameter.shape().ToString(), parameter.name()));
      }
      arguments[i] = RandomLiteral(parameter.shape(), generator);
    }
    filled.push_back(std::move(*arguments[i]));
  }
  const int64_t devices = (*module)->replica_count() * (*module)->partition_count();
  absl::StatusOr<std::vector<ir::Literal>> results =
      interp::EvaluateOnDevices(**module, std::vector<std::vector<ir::Literal>>(devices, filled));
  if (!results.ok()) return Fail(kExitRuntimeError, std::string(results.status().message()));
  if (!options.output_dir.empty()) std::filesystem::create_directories(options.output_dir);
  for (int64_t d = 0; d < devices; ++d) {
    const std::string stem = devices == 1 ? "output" : fmt::format("device{}.output", d);
    PrintSummary(stem, (*results)[d]);
    if (!options.output_dir.empty()) {
      absl::Status written = WriteOutputs(options.output_dir, stem, (*results)[d]);
      if (!written.ok()) return Fail(kExitRuntimeError, std::string(written.message()));
    }
  }
  return kExitOk;
}

}  // namespace

void RegisterEvalCommand(CLI::App& app) {
  auto options = std::make_shared<EvalOptions>();
  CLI::App* command = app.add_subcommand(
      "eval", "Evaluate an HLO module on the CPU reference evaluator and summarise its outputs");
  command->add_option("file", options->path, "HLO text file")->required();
  command->add_option("--input", options->inputs,
                      "NAME=FILE.npy: value of the entry parameter NAME (or its number)");
  command->add_option("--random-inputs", options->random_seed,
                      "Fill parameters without --input with deterministic values from SEED");
  command->add_option("--output-dir", options->output_dir,
                      "Write each output as .npy here (output.npy, output.0.npy for tuples, "
                      "deviceD.output.npy for multi-device modules)");
  command->callback([options] { CommandExitCode() = RunEval(*options); });
}

}  // namespace vkspmd::cli
