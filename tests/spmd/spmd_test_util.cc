// Sharding and re-assembly of test values, and the equivalence run.
#include "tests/spmd/spmd_test_util.h"

#include <cmath>
#include <limits>
#include <random>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/interp/evaluator.h"
#include "src/interp/shape_ops.h"
#include "src/ir/parser.h"
#include "src/spmd/partition_spec.h"

namespace vkspmd::spmd::testing {
namespace {

struct Block {
  std::vector<int64_t> start;  // in the full value
  std::vector<int64_t> size;   // valid elements
};

Block ValidBlock(const ir::Shape& shape, const AxisSharding& sharding, const Mesh& mesh,
                 int64_t device) {
  Block block;
  for (int64_t d = 0; d < shape.rank(); ++d) {
    block.start.push_back(ShardOffset(shape, sharding, d, mesh, device));
    block.size.push_back(ShardValidSize(shape, sharding, d, mesh, device));
  }
  return block;
}

void Poison(ir::Literal& literal) {
  for (int64_t i = 0; i < literal.ElementCount(); ++i) {
    if (ir::IsFloat(literal.dtype())) {
      literal.SetFromDouble(i, std::numeric_limits<double>::quiet_NaN());
    } else {
      literal.SetFromInt64(i, 0x5a5a5a5a);
    }
  }
}

}  // namespace

ir::Literal ShardOf(const ir::Literal& full, const AxisSharding& sharding, const Mesh& mesh,
                    int64_t device) {
  if (sharding.maximal_device.has_value()) {
    if (*sharding.maximal_device == device) return full;
    ir::Literal other(full.shape());
    Poison(other);
    return other;
  }
  ir::Literal shard(ShardShape(full.shape(), sharding, mesh));
  Poison(shard);
  const Block block = ValidBlock(full.shape(), sharding, mesh, device);
  interp::CopyBlock(full, block.start, shard, std::vector<int64_t>(block.start.size(), 0),
                    block.size);
  return shard;
}

absl::StatusOr<ir::Literal> Reassemble(const std::vector<ir::Literal>& shards,
                                       const ir::Shape& shape, const AxisSharding& sharding,
                                       const Mesh& mesh) {
  if (sharding.maximal_device.has_value()) return shards[*sharding.maximal_device];
  ir::Literal full(shape);
  std::vector<bool> written(shape.ElementCount(), false);
  const std::vector<int64_t> strides = ir::RowMajorStrides(shape.dimensions());
  const std::vector<int64_t> shard_strides =
      ir::RowMajorStrides(ShardShape(shape, sharding, mesh).dimensions());
  for (int64_t device = 0; device < mesh.device_count(); ++device) {
    const Block block = ValidBlock(shape, sharding, mesh, device);
    bool empty = false;
    for (int64_t size : block.size) empty = empty || size == 0;
    if (empty) continue;
    std::vector<int64_t> index(block.size.size(), 0);
    do {
      int64_t global = 0, local = 0;
      for (size_t d = 0; d < index.size(); ++d) {
        global += (block.start[d] + index[d]) * strides[d];
        local += index[d] * shard_strides[d];
      }
      const double value = shards[device].GetAsDouble(local);
      if (written[global]) {
        const double previous = full.GetAsDouble(global);
        if (!(previous == value || (std::isnan(previous) && std::isnan(value)))) {
          return absl::InternalError(
              fmt::format("replicas disagree at element {}: {} vs {} (device {})", global, previous,
                          value, device));
        }
      }
      if (ir::IsFloat(shape.dtype())) {
        full.SetFromDouble(global, value);
      } else {
        full.SetFromInt64(global, shards[device].GetAsInt64(local));
      }
      written[global] = true;
    } while (ir::NextIndex(block.size, index));
  }
  return full;
}

namespace {

ir::Literal RandomLiteral(const ir::Shape& shape, std::mt19937_64& random) {
  if (shape.IsTuple()) {
    std::vector<ir::Literal> elements;
    for (const ir::Shape& element : shape.tuple_elements()) {
      elements.push_back(RandomLiteral(element, random));
    }
    return ir::Literal::Tuple(std::move(elements));
  }
  ir::Literal literal(shape);
  for (int64_t i = 0; i < literal.ElementCount(); ++i) {
    if (ir::IsFloat(literal.dtype())) {
      literal.SetFromDouble(i, std::uniform_real_distribution<double>(-2, 2)(random));
    } else if (literal.dtype() == ir::DType::kPred) {
      literal.SetFromInt64(i, random() % 2);
    } else {
      literal.SetFromInt64(i, static_cast<int64_t>(random() % 7) - 3);
    }
  }
  return literal;
}

}  // namespace

std::vector<ir::Literal> RandomArguments(const ir::Computation& entry, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<ir::Literal> arguments;
  for (const ir::Instruction* parameter : entry.parameters()) {
    arguments.push_back(RandomLiteral(parameter->shape(), random));
  }
  return arguments;
}

absl::StatusOr<double> RelativeDifference(const ir::Literal& actual, const ir::Literal& expected) {
  if (actual.shape() != expected.shape()) {
    return absl::InternalError(fmt::format("shape {} differs from the expected {}",
                                           actual.shape().ToString(), expected.shape().ToString()));
  }
  if (actual.shape().IsTuple()) {
    double worst = 0;
    for (size_t i = 0; i < actual.tuple_elements().size(); ++i) {
      VKSPMD_ASSIGN_OR_RETURN(double difference, RelativeDifference(actual.tuple_elements()[i],
                                                                    expected.tuple_elements()[i]));
      worst = std::max(worst, difference);
    }
    return worst;
  }
  double worst = 0;
  for (int64_t i = 0; i < actual.ElementCount(); ++i) {
    const double a = actual.GetAsDouble(i), b = expected.GetAsDouble(i);
    if (std::isnan(a) != std::isnan(b)) return std::numeric_limits<double>::infinity();
    if (std::isnan(a) || a == b) continue;
    // +inf against -inf (or an infinity against a number) would make a NaN or an infinite
    // quotient here; either is an infinite difference, which std::max must not drop.
    if (std::isinf(a) || std::isinf(b)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, std::abs(a - b) / (1 + std::abs(b)));
  }
  return worst;
}

absl::StatusOr<std::unique_ptr<ir::Module>> AnnotatedModule(
    const std::string& text, const std::map<std::string, std::string>& specs, const Mesh& mesh) {
  VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<ir::Module> module, ir::ParseAndVerifyModule(text));
  for (const auto& [name, spec_text] : specs) {
    ir::Instruction* target = nullptr;
    for (const auto& instruction : module->entry()->instructions()) {
      if (instruction->name() == name) target = instruction.get();
    }
    if (target == nullptr) return absl::NotFoundError(fmt::format("no instruction %{}", name));
    VKSPMD_ASSIGN_OR_RETURN(PartitionSpec spec, PartitionSpec::Parse(spec_text));
    VKSPMD_ASSIGN_OR_RETURN(ir::Sharding sharding,
                            PartitionSpecToSharding(spec, mesh, target->shape().rank()));
    target->set_sharding(sharding);
  }
  return module;
}

absl::StatusOr<EquivalenceOutcome> RunEquivalence(const ir::Module& module, const Mesh& given_mesh,
                                                  uint64_t seed, const DeviceRunner& run,
                                                  const std::vector<ir::Literal>* given) {
  EquivalenceOutcome outcome;
  VKSPMD_ASSIGN_OR_RETURN(outcome.partition, Partition(module, given_mesh));
  // The shardings refer to the partitioner's mesh (the given one, refined where needed).
  const Mesh& mesh = outcome.partition.mesh;
  const std::vector<ir::Literal> arguments =
      given != nullptr ? *given : RandomArguments(*module.entry(), seed);
  VKSPMD_ASSIGN_OR_RETURN(ir::Literal expected, interp::Evaluate(module, arguments));
  std::vector<std::vector<ir::Literal>> per_device(mesh.device_count());
  for (int64_t device = 0; device < mesh.device_count(); ++device) {
    for (size_t p = 0; p < arguments.size(); ++p) {
      const std::vector<AxisSharding>& leaves = outcome.partition.parameter_shardings[p];
      if (!arguments[p].shape().IsTuple()) {
        per_device[device].push_back(ShardOf(arguments[p], leaves[0], mesh, device));
        continue;
      }
      std::vector<ir::Literal> elements;
      for (size_t leaf = 0; leaf < leaves.size(); ++leaf) {
        elements.push_back(
            ShardOf(arguments[p].tuple_elements()[leaf], leaves[leaf], mesh, device));
      }
      per_device[device].push_back(ir::Literal::Tuple(std::move(elements)));
    }
  }
  VKSPMD_ASSIGN_OR_RETURN(std::vector<ir::Literal> results,
                          run ? run(*outcome.partition.module, per_device)
                              : interp::EvaluateOnDevices(*outcome.partition.module, per_device));
  const ir::Shape& shape = module.entry()->root()->shape();
  ir::Literal actual;
  if (!shape.IsTuple()) {
    VKSPMD_ASSIGN_OR_RETURN(
        actual, Reassemble(results, shape, outcome.partition.result_shardings[0], mesh));
  } else {
    std::vector<ir::Literal> elements;
    for (size_t leaf = 0; leaf < shape.tuple_elements().size(); ++leaf) {
      std::vector<ir::Literal> shards;
      for (const ir::Literal& result : results) shards.push_back(result.tuple_elements()[leaf]);
      VKSPMD_ASSIGN_OR_RETURN(ir::Literal element,
                              Reassemble(shards, shape.tuple_elements()[leaf],
                                         outcome.partition.result_shardings[leaf], mesh));
      elements.push_back(std::move(element));
    }
    actual = ir::Literal::Tuple(std::move(elements));
  }
  VKSPMD_ASSIGN_OR_RETURN(outcome.difference, RelativeDifference(actual, expected));
  outcome.actual = std::move(actual);
  outcome.expected = std::move(expected);
  return outcome;
}

std::string AdaptSpec(const std::string& text, const Mesh& mesh) {
  const PartitionSpec spec = *PartitionSpec::Parse(text);
  std::vector<std::string> parts;
  for (const std::vector<AxisRef>& entry : spec.dims()) {
    std::vector<std::string> axes;
    for (const AxisRef& reference : entry) {
      const int64_t axis = std::get<int64_t>(reference);
      if (axis >= mesh.axis_count()) continue;
      axes.push_back(mesh.axis_names().empty() ? std::to_string(axis)
                                               : "'" + mesh.axis_names()[axis] + "'");
    }
    if (axes.empty()) {
      parts.push_back("None");
    } else {
      parts.push_back(fmt::format("({},)", absl::StrJoin(axes, ", ")));
    }
  }
  return fmt::format("({},)", absl::StrJoin(parts, ", "));
}

// case name -> recorded bytes per device.
int64_t CountOps(const ir::Module& module, ir::Opcode opcode) {
  int64_t count = 0;
  for (const auto& instruction : module.entry()->instructions())
    count += instruction->opcode() == opcode;
  return count;
}

}  // namespace vkspmd::spmd::testing
