// HLO text printer: module header, computations with signatures, one instruction per line with
// operand shapes and the op's attributes in XLA's order (op attributes, to_apply, sharding).
#include "src/ir/printer.h"

#include <functional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "src/ir/backend_config.h"
#include "src/ir/gather_attributes.h"

namespace vkspmd::ir {
namespace {

using NameOf = std::function<std::string(const Instruction&)>;
using ComputationNameOf = std::function<std::string(const Computation&)>;

std::string Braced(const std::vector<int64_t>& values) {
  return fmt::format("{{{}}}", absl::StrJoin(values, ","));
}

std::string PaddingToString(const std::vector<PaddingDimension>& padding) {
  std::vector<std::string> parts;
  for (const PaddingDimension& dimension : padding) {
    std::string part = fmt::format("{}_{}", dimension.low, dimension.high);
    if (dimension.interior != 0) part += fmt::format("_{}", dimension.interior);
    parts.push_back(part);
  }
  return absl::StrJoin(parts, "x");
}

std::string SliceToString(const std::vector<SliceDimension>& slice) {
  std::vector<std::string> parts;
  for (const SliceDimension& dimension : slice) {
    if (dimension.stride == 1) {
      parts.push_back(fmt::format("[{}:{}]", dimension.start, dimension.limit));
    } else {
      parts.push_back(
          fmt::format("[{}:{}:{}]", dimension.start, dimension.limit, dimension.stride));
    }
  }
  return fmt::format("{{{}}}", absl::StrJoin(parts, ", "));
}

std::string RngAlgorithmName(RngAlgorithm algorithm) {
  switch (algorithm) {
    case RngAlgorithm::kThreeFry:
      return "rng_three_fry";
    case RngAlgorithm::kPhilox:
      return "rng_philox";
    case RngAlgorithm::kDefault:
      break;
  }
  return "rng_default";
}

std::vector<std::string> CollectiveAttributes(const Instruction& instruction) {
  const InstructionAttributes& attributes = instruction.attributes();
  std::vector<std::string> parts;
  if (attributes.channel_id.has_value()) {
    parts.push_back(fmt::format("channel_id={}", *attributes.channel_id));
  }
  if (instruction.opcode() == Opcode::kCollectivePermute) {
    std::vector<std::string> pairs;
    for (const auto& [source, target] : attributes.source_target_pairs) {
      pairs.push_back(fmt::format("{{{},{}}}", source, target));
    }
    parts.push_back(fmt::format("source_target_pairs={{{}}}", absl::StrJoin(pairs, ",")));
    return parts;
  }
  parts.push_back("replica_groups=" + attributes.replica_groups.ToString());
  // XLA's order: reduce-scatter prints the all-reduce attributes before its dimensions,
  // all-gather its dimensions before use_global_device_ids.
  const std::string dimensions = "dimensions=" + Braced(attributes.dimensions);
  const bool global = attributes.use_global_device_ids;
  switch (instruction.opcode()) {
    case Opcode::kAllReduce:
      if (global) parts.push_back("use_global_device_ids=true");
      break;
    case Opcode::kReduceScatter:
      if (global) parts.push_back("use_global_device_ids=true");
      parts.push_back(dimensions);
      break;
    default:
      parts.push_back(dimensions);
      if (global) parts.push_back("use_global_device_ids=true");
  }
  return parts;
}

// while: condition=, body=; conditional: true_computation=, false_computation= for a pred
// selector, branch_computations={...} for an s32 index.
std::vector<std::string> ControlFlowAttributeStrings(const Instruction& instruction,
                                                     const ComputationNameOf& computation_name) {
  const std::vector<Computation*>& called = instruction.attributes().called;
  std::vector<std::string> names;
  for (const Computation* callee : called) {
    names.push_back("%" + (callee == nullptr ? std::string("?") : computation_name(*callee)));
  }
  if (instruction.opcode() == Opcode::kWhile && names.size() == 2) {
    return {"condition=" + names[0], "body=" + names[1]};
  }
  const bool pred = instruction.operand_count() > 0 &&
                    instruction.operand(0)->shape() == Shape::Scalar(DType::kPred);
  if (instruction.opcode() == Opcode::kConditional && pred && names.size() == 2) {
    return {"true_computation=" + names[0], "false_computation=" + names[1]};
  }
  return {"branch_computations={" + absl::StrJoin(names, ", ") + "}"};
}

// The attributes after the operand list, in XLA's order.
std::vector<std::string> AttributeStrings(const Instruction& instruction,
                                          const ComputationNameOf& computation_name) {
  const InstructionAttributes& attributes = instruction.attributes();
  std::vector<std::string> parts;
  switch (instruction.opcode()) {
    case Opcode::kBroadcast:
    case Opcode::kTranspose:
    case Opcode::kConcatenate:
    case Opcode::kReverse:
    case Opcode::kReduce:
      parts.push_back("dimensions=" + Braced(attributes.dimensions));
      break;
    case Opcode::kSort:
      parts.push_back("dimensions=" + Braced(attributes.dimensions));
      if (attributes.is_stable) parts.push_back("is_stable=true");
      break;
    case Opcode::kIota:
      parts.push_back(fmt::format("iota_dimension={}", attributes.iota_dimension));
      break;
    case Opcode::kGetTupleElement:
      parts.push_back(fmt::format("index={}", attributes.tuple_index));
      break;
    case Opcode::kReducePrecision:
      parts.push_back(fmt::format("exponent_bits={}", attributes.exponent_bits));
      parts.push_back(fmt::format("mantissa_bits={}", attributes.mantissa_bits));
      break;
    case Opcode::kSlice:
      parts.push_back("slice=" + SliceToString(attributes.slice));
      break;
    case Opcode::kDynamicSlice:
      parts.push_back("dynamic_slice_sizes=" + Braced(attributes.dynamic_slice_sizes));
      break;
    case Opcode::kPad:
      // A rank-0 pad has no padding to print (and "padding=" alone would not parse).
      if (!attributes.padding.empty()) {
        parts.push_back("padding=" + PaddingToString(attributes.padding));
      }
      break;
    case Opcode::kCompare:
      parts.push_back(fmt::format("direction={}", ComparisonDirectionName(attributes.direction)));
      if (attributes.total_order) parts.push_back("type=TOTALORDER");
      break;
    case Opcode::kDot: {
      const DotDimensions& dot = attributes.dot;
      if (!dot.lhs_batch.empty()) parts.push_back("lhs_batch_dims=" + Braced(dot.lhs_batch));
      if (!dot.lhs_contracting.empty()) {
        parts.push_back("lhs_contracting_dims=" + Braced(dot.lhs_contracting));
      }
      if (!dot.rhs_batch.empty()) parts.push_back("rhs_batch_dims=" + Braced(dot.rhs_batch));
      if (!dot.rhs_contracting.empty()) {
        parts.push_back("rhs_contracting_dims=" + Braced(dot.rhs_contracting));
      }
      break;
    }
    case Opcode::kAllReduce:
    case Opcode::kAllGather:
    case Opcode::kReduceScatter:
    case Opcode::kAllToAll:
    case Opcode::kCollectivePermute:
      parts = CollectiveAttributes(instruction);
      break;
    case Opcode::kCustomCall:
      parts.push_back(
          fmt::format("custom_call_target=\"{}\"", absl::CEscape(attributes.custom_call_target)));
      break;
    case Opcode::kRngBitGenerator:
      parts.push_back("algorithm=" + RngAlgorithmName(attributes.rng_algorithm));
      break;
    case Opcode::kGather:
    case Opcode::kScatter:
      parts = GatherScatterAttributeStrings(instruction);
      break;
    case Opcode::kWhile:
    case Opcode::kConditional:
      parts = ControlFlowAttributeStrings(instruction, computation_name);
      break;
    default:
      break;
  }
  if (attributes.to_apply != nullptr) {
    parts.push_back("to_apply=%" + computation_name(*attributes.to_apply));
  }
  if (instruction.sharding().has_value()) {
    parts.push_back("sharding=" + instruction.sharding()->ToString());
  }
  if (attributes.known_trip_count.has_value()) {
    parts.push_back("backend_config=" + KnownTripCountConfig(*attributes.known_trip_count));
  }
  if (!attributes.unspecified_dims.empty()) {
    parts.push_back("backend_config=" + UnspecifiedDimsConfig(attributes.unspecified_dims));
  }
  return parts;
}

std::string InstructionLine(const Instruction& instruction, const NameOf& name,
                            const ComputationNameOf& computation_name) {
  std::string inside;
  if (instruction.opcode() == Opcode::kParameter) {
    inside = fmt::format("{}", instruction.attributes().parameter_number);
  } else if (instruction.opcode() == Opcode::kConstant) {
    inside = instruction.attributes().literal->ValuesToString();
  } else {
    std::vector<std::string> operands;
    for (const Instruction* operand : instruction.operands()) {
      operands.push_back(
          fmt::format("{} %{}", operand->shape().ToStringWithLayout(), name(*operand)));
    }
    inside = JoinWithIndexComments(operands);
  }
  std::string line =
      fmt::format("%{} = {} {}({})", name(instruction), instruction.shape().ToStringWithLayout(),
                  OpcodeName(instruction.opcode()), inside);
  for (const std::string& attribute : AttributeStrings(instruction, computation_name)) {
    line += ", " + attribute;
  }
  return line;
}

std::string AliasesToString(const std::vector<InputOutputAlias>& aliases) {
  std::vector<std::string> parts;
  for (const InputOutputAlias& alias : aliases) {
    parts.push_back(fmt::format("{}: ({}, {}, {})", Braced(alias.output_index),
                                alias.parameter_number, Braced(alias.parameter_index),
                                alias.must_alias ? "must-alias" : "may-alias"));
  }
  return fmt::format("{{ {} }}", absl::StrJoin(parts, ", "));
}

}  // namespace

std::string PrintInstruction(const Instruction& instruction) {
  return InstructionLine(
      instruction, [](const Instruction& i) { return i.name(); },
      [](const Computation& c) { return c.name(); });
}

std::string PrintModule(const Module& module, const PrintOptions& options) {
  absl::flat_hash_map<const Instruction*, std::string> instruction_names;
  absl::flat_hash_map<const Computation*, std::string> computation_names;
  for (const auto& computation : module.computations()) {
    computation_names[computation.get()] =
        options.canonical_names ? fmt::format("computation.{}", computation_names.size())
                                : computation->name();
    for (const auto& instruction : computation->instructions()) {
      instruction_names[instruction.get()] = options.canonical_names
                                                 ? fmt::format("value.{}", instruction_names.size())
                                                 : instruction->name();
    }
  }
  const NameOf name = [&](const Instruction& i) { return instruction_names.at(&i); };
  const ComputationNameOf computation_name = [&](const Computation& c) {
    return computation_names.at(&c);
  };

  std::string text = "HloModule " + (options.canonical_names ? "module" : module.name());
  if (!module.input_output_aliases().empty()) {
    text += ", input_output_alias=" + AliasesToString(module.input_output_aliases());
  }
  if (module.replica_count() != 1)
    text += fmt::format(", replica_count={}", module.replica_count());
  if (module.partition_count() != 1) {
    text += fmt::format(", num_partitions={}", module.partition_count());
  }
  text += "\n";
  for (const auto& computation : module.computations()) {
    std::vector<std::string> parameters;
    for (const Instruction* parameter : computation->parameters()) {
      if (parameter == nullptr) continue;
      parameters.push_back(fmt::format("{}: {}", name(*parameter), parameter->shape().ToString()));
    }
    const Instruction* root = computation->root();
    text +=
        fmt::format("\n{}%{} ({}) -> {} {{\n", computation.get() == module.entry() ? "ENTRY " : "",
                    computation_name(*computation), absl::StrJoin(parameters, ", "),
                    root != nullptr ? root->shape().ToString() : "()");
    for (const auto& instruction : computation->instructions()) {
      text += fmt::format("  {}{}\n", instruction.get() == root ? "ROOT " : "",
                          InstructionLine(*instruction, name, computation_name));
    }
    text += "}\n";
  }
  return text;
}

}  // namespace vkspmd::ir
