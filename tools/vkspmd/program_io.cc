// Program input and output for the CLI.
#include "tools/vkspmd/program_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "fmt/format.h"
#include "src/interp/evaluator.h"
#include "src/io/npy.h"
#include "src/ir/parser.h"
#include "src/spmd/mesh_search.h"
#include "src/spmd/partition_spec.h"

namespace vkspmd::cli {
namespace {

constexpr int64_t kPreviewElements = 8;

// Deterministic values for --random-inputs: floats in [-1, 1), integers in [-10, 10] (unsigned
// [0, 20]), pred true or false. Written with the raw generator so the values do not depend on the
// standard library's distributions.
// A shape's bytes, as a double so that absurd dimensions cannot overflow.
double ShapeBytes(const ir::Shape& shape) {
  if (shape.IsTuple()) {
    double bytes = 0;
    for (const ir::Shape& element : shape.tuple_elements()) bytes += ShapeBytes(element);
    return bytes;
  }
  double bytes = static_cast<double>(ir::DTypeByteSize(shape.dtype()));
  for (int64_t dimension : shape.dimensions()) bytes *= static_cast<double>(dimension);
  return bytes;
}

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

// Parameter number for "NAME", "%NAME" or a number; -1 when nothing matches.
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

// Whether `sharding` (a tuple's elements included) tiles a value over several tiles or
// devices; the largest device id it names goes into `largest`.
bool IsTiled(const ir::Sharding& sharding, int64_t& largest) {
  switch (sharding.kind()) {
    case ir::Sharding::Kind::kTuple: {
      bool tiled = false;
      for (const ir::Sharding& element : sharding.tuple_elements()) {
        tiled = IsTiled(element, largest) || tiled;
      }
      return tiled;
    }
    case ir::Sharding::Kind::kMaximal:
      largest = std::max(largest, sharding.maximal_device());
      return false;
    case ir::Sharding::Kind::kTiled:
      for (int64_t device : sharding.tile_assignment().Flatten()) {
        largest = std::max(largest, device);
      }
      return true;
    default:
      return false;
  }
}

}  // namespace

absl::StatusOr<std::string> ReadInputFile(const std::string& path, int64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below as non-regular.
  const int descriptor = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (descriptor < 0) {
    return absl::NotFoundError(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  }
  struct FileCloser {
    int descriptor;
    ~FileCloser() { close(descriptor); }
  } closer{descriptor};
  struct stat status {};
  if (fstat(descriptor, &status) != 0 || !S_ISREG(status.st_mode)) {
    return absl::FailedPreconditionError(
        fmt::format("{} is not a regular file (a directory, device or pipe cannot be read)", path));
  }
  if (status.st_size > max_bytes) {
    return absl::FailedPreconditionError(
        fmt::format("{} has {} bytes; input files of this kind may have at most {}", path,
                    status.st_size, max_bytes));
  }
  std::string contents(static_cast<size_t>(status.st_size), '\0');
  size_t filled = 0;
  while (filled < contents.size()) {
    const ssize_t count = read(descriptor, contents.data() + filled, contents.size() - filled);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) {
      return absl::NotFoundError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
    }
    if (count == 0) break;  // the file shrank while it was read
    filled += static_cast<size_t>(count);
  }
  contents.resize(filled);
  return contents;
}

bool IsUnusableFile(const absl::Status& status) {
  return absl::IsNotFound(status) || absl::IsFailedPrecondition(status);
}

absl::StatusOr<std::unique_ptr<ir::Module>> ReadModuleFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadInputFile(path, kMaxModuleFileBytes);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(*text);
  if (!module.ok()) {
    return absl::Status(module.status().code(),
                        fmt::format("{}:{}", path, std::string(module.status().message())));
  }
  return module;
}

absl::StatusOr<std::vector<ir::Literal>> BuildArguments(const ir::Computation& entry,
                                                        const std::vector<std::string>& inputs,
                                                        std::optional<uint64_t> random_seed) {
  std::vector<std::optional<ir::Literal>> arguments(entry.parameter_count());
  for (const std::string& input : inputs) {
    const size_t equals = input.find('=');
    if (equals == std::string::npos) {
      return absl::InvalidArgumentError(fmt::format("--input {} must be NAME=FILE.npy", input));
    }
    const int64_t number = FindParameter(entry, input.substr(0, equals));
    if (number < 0) {
      return absl::InvalidArgumentError(fmt::format(
          "--input {}: the entry has no parameter named {}", input, input.substr(0, equals)));
    }
    const std::string file = input.substr(equals + 1);
    absl::StatusOr<std::string> bytes = ReadInputFile(file, kMaxNpyFileBytes);
    if (!bytes.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("--input {}: {}", input, std::string(bytes.status().message())));
    }
    absl::StatusOr<ir::Literal> literal = io::ParseNpy(*bytes);
    if (!literal.ok()) {
      return absl::DataLossError(
          fmt::format("{}: {}", file, std::string(literal.status().message())));
    }
    arguments[number] = std::move(*literal);
  }
  std::mt19937_64 generator(random_seed.value_or(0));
  std::vector<ir::Literal> filled;
  for (int64_t i = 0; i < entry.parameter_count(); ++i) {
    const ir::Instruction& parameter = *entry.parameter(i);
    if (!arguments[i].has_value()) {
      if (!random_seed.has_value()) {
        return absl::InvalidArgumentError(
            fmt::format("no input for parameter {} (%{}: {}); pass --input {}=FILE.npy "
                        "or --random-inputs SEED",
                        i, parameter.name(), parameter.shape().ToString(), parameter.name()));
      }
      // Refused before allocating: a parameter of 100 billion floats would otherwise abort.
      if (const double bytes = ShapeBytes(parameter.shape()); bytes > kMaxNpyFileBytes) {
        return absl::InvalidArgumentError(fmt::format(
            "parameter {} (%{}: {}) would take {:.3g} bytes; --random-inputs fills at most {} "
            "bytes per parameter",
            i, parameter.name(), parameter.shape().ToString(), bytes, kMaxNpyFileBytes));
      }
      arguments[i] = RandomLiteral(parameter.shape(), generator);
    }
    filled.push_back(std::move(*arguments[i]));
  }
  return filled;
}

absl::StatusOr<std::vector<std::vector<ir::Literal>>> BuildDeviceArguments(
    const ir::Computation& entry, const std::vector<std::string>& inputs,
    std::optional<uint64_t> random_seed, int64_t devices) {
  std::vector<std::vector<ir::Literal>> arguments;
  for (int64_t d = 0; d < devices; ++d) {
    std::optional<uint64_t> seed = random_seed;
    if (seed) *seed += static_cast<uint64_t>(d);
    absl::StatusOr<std::vector<ir::Literal>> built = BuildArguments(entry, inputs, seed);
    if (!built.ok()) return built.status();
    arguments.push_back(std::move(*built));
  }
  return arguments;
}

absl::StatusOr<std::vector<ir::Literal>> ReferenceResults(
    const ir::Module& module, const std::vector<ir::Literal>& arguments) {
  absl::StatusOr<ir::Literal> value = interp::Evaluate(module, arguments);
  if (!value.ok()) return value.status();
  std::vector<ir::Literal> list;
  list.push_back(std::move(*value));
  return list;
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
  return io::WriteNpyFile((std::filesystem::path(directory) / (stem + ".npy")).string(), value);
}

absl::Status ReportOutputs(const std::vector<ir::Literal>& results, const std::string& output_dir) {
  if (!output_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(output_dir, error);
    if (error) {
      return absl::FailedPreconditionError(
          fmt::format("cannot create --output-dir {}: {}", output_dir, error.message()));
    }
  }
  for (size_t d = 0; d < results.size(); ++d) {
    const std::string stem = results.size() == 1 ? "output" : fmt::format("device{}.output", d);
    PrintSummary(stem, results[d]);
    if (!output_dir.empty()) {
      absl::Status written = WriteOutputs(output_dir, stem, results[d]);
      if (!written.ok()) return written;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ModuleRead> ReadModuleAs(ir::Module& module, const MeshChoice& choice) {
  ModuleRead read;
  const int64_t per_device = module.replica_count() * module.partition_count();
  if (!choice.mesh.empty()) {
    if (choice.as_partitioned) {
      return absl::InvalidArgumentError(
          "--mesh partitions the module and --as-partitioned says it already is: give one");
    }
    absl::StatusOr<spmd::Mesh> mesh = spmd::Mesh::Parse(choice.mesh);
    if (!mesh.ok()) return absl::InvalidArgumentError(mesh.status().message());
    read.reading = ModuleReading::kGspmd;
    read.devices = mesh->device_count();
    read.meshes = {*mesh};
    read.mesh_given = true;
    read.summary = fmt::format("read as a GSPMD module over mesh {} (--mesh)", mesh->ToString());
    return read;
  }
  int64_t largest = -1;
  // A `Sharding` custom-call only annotates a GSPMD module: a partitioned program has none.
  bool tiled = choice.has_specs, sharding_call = false;
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      if (instruction->sharding().has_value() && IsTiled(*instruction->sharding(), largest)) {
        tiled = true;
      }
      sharding_call = sharding_call || (instruction->opcode() == ir::Opcode::kCustomCall &&
                                        instruction->attributes().custom_call_target == "Sharding");
    }
  }
  const bool gspmd = tiled || sharding_call;
  const auto check_devices = [&](int64_t devices) -> absl::Status {
    if (choice.devices <= 0 || choice.devices == devices) return absl::OkStatus();
    return absl::InvalidArgumentError(fmt::format(
        "the module is already a per-device program for {} devices; run it without --devices "
        "(or with --devices {}), or give --mesh to partition it",
        devices, devices));
  };
  if (choice.as_partitioned || (!gspmd && per_device > 1)) {
    absl::Status matches = check_devices(per_device);
    if (!matches.ok()) return matches;
    read.reading = ModuleReading::kPerDevice;
    read.devices = per_device;
    read.summary = fmt::format(
        "read as already partitioned ({}): a per-device program for {} devices "
        "(num_partitions={}, replica_count={})",
        choice.as_partitioned ? "--as-partitioned" : "no tiled sharding or Sharding custom-call",
        per_device, module.partition_count(), module.replica_count());
    return read;
  }
  std::string why;
  if (choice.devices > 0) {
    read.devices = choice.devices;
    why = fmt::format("--devices {}", choice.devices);
  } else if (gspmd && module.partition_count() > 1) {
    read.devices = module.partition_count();
    why = fmt::format("num_partitions={}", read.devices);
  } else if (gspmd && largest > 0) {
    read.devices = largest + 1;
    why = fmt::format("the largest device id in its shardings is {}", largest);
  } else if (tiled) {
    why = choice.has_specs ? "--spec without a mesh" : "its tiled shardings use one device";
  } else {
    why = "a Sharding custom-call";
  }
  if (!gspmd && choice.devices <= 0) return read;  // a plain one-device module
  read.reading = ModuleReading::kGspmd;
  if (choice.devices > 0) {
    absl::StatusOr<spmd::Mesh> mesh = spmd::Mesh::Create({choice.devices});
    if (!mesh.ok()) return absl::InvalidArgumentError(mesh.status().message());
    read.meshes = {*mesh};
  } else {
    if (module.partition_count() == 1) module.set_partition_count(read.devices);
    read.meshes = spmd::CandidateMeshes(module);
  }
  read.summary = fmt::format("read as a GSPMD module over {} device{} ({})", read.devices,
                             read.devices == 1 ? "" : "s", why);
  return read;
}

std::string MeshViewNote(const spmd::Mesh& partitioned, const ModuleRead& read) {
  if (!read.mesh_given || read.meshes.empty() || read.meshes[0].shape() == partitioned.shape()) {
    return "";
  }
  return fmt::format("--mesh [{}] viewed as [{}] for the module's shardings",
                     absl::StrJoin(read.meshes[0].shape(), ","),
                     absl::StrJoin(partitioned.shape(), ","));
}

std::string LastMeshError(const absl::Status& last, size_t meshes_tried) {
  if (meshes_tried == 1) return std::string(last.message());
  return fmt::format("{} (the last of {} meshes tried; give one with --mesh)",
                     std::string(last.message()), meshes_tried);
}

absl::Status ApplySpecs(ir::Module& module, const std::vector<std::string>& specs,
                        const spmd::Mesh& mesh) {
  for (const std::string& entry : specs) {
    const std::vector<std::string> parts = absl::StrSplit(entry, absl::MaxSplits('=', 1));
    if (parts.size() != 2) {
      return absl::InvalidArgumentError(fmt::format("--spec '{}': expected NAME=SPEC", entry));
    }
    ir::Instruction* target = nullptr;
    for (const auto& instruction : module.entry()->instructions()) {
      if (instruction->name() == parts[0]) target = instruction.get();
    }
    if (target == nullptr) {
      return absl::InvalidArgumentError(
          fmt::format("--spec '{}': the entry has no instruction %{}", entry, parts[0]));
    }
    absl::StatusOr<spmd::PartitionSpec> spec = spmd::PartitionSpec::Parse(parts[1]);
    if (!spec.ok()) return spec.status();
    absl::StatusOr<ir::Sharding> sharding =
        spmd::PartitionSpecToSharding(*spec, mesh, target->shape().rank());
    if (!sharding.ok()) return sharding.status();
    target->set_sharding(*sharding);
  }
  return absl::OkStatus();
}

}  // namespace vkspmd::cli
