// HLO module parser: module header and attributes, computations, instructions and their
// attributes. Value grammars (shapes, literals, shardings) come from TextReader.
#include "src/ir/parser.h"

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "fmt/format.h"
#include "src/base/formatting.h"
#include "src/base/status_macros.h"
#include "src/ir/gather_attributes.h"
#include "src/ir/text_reader.h"
#include "src/ir/verifier.h"

namespace vkspmd::ir {
namespace {

// Attributes that only carry provenance, scheduling, layout or backend hints.
const absl::flat_hash_set<std::string_view>& IgnoredAttributes() {
  static const auto* names =
      new absl::flat_hash_set<std::string_view>{"metadata",
                                                "frontend_attributes",
                                                "backend_config",
                                                "precision_config",
                                                "operand_precision",
                                                "constrain_layout",
                                                "custom_call_has_side_effect",
                                                "api_version",
                                                "parameter_replication",
                                                "control-predecessors",
                                                "statistics_viz",
                                                "result_accuracy",
                                                "operand_layout_constraints",
                                                "schedule",
                                                "origin"};
  return *names;
}

const absl::flat_hash_set<std::string_view>& IgnoredModuleAttributes() {
  static const auto* names =
      new absl::flat_hash_set<std::string_view>{"entry_computation_layout",
                                                "is_scheduled",
                                                "allow_spmd_sharding_propagation_to_output",
                                                "allow_spmd_sharding_propagation_to_parameters",
                                                "frontend_attributes",
                                                "buffer_donor",
                                                "spmd_output_sharding",
                                                "spmd_parameters_shardings"};
  return *names;
}

constexpr int64_t kMaxParameterNumber = 1 << 16;

class ModuleParser {
 public:
  explicit ModuleParser(std::string_view text) : reader_(text) {}

  absl::StatusOr<std::unique_ptr<Module>> Parse() {
    if (!reader_.IsWord("HloModule")) return reader_.Expected("'HloModule'");
    reader_.Advance();
    VKSPMD_ASSIGN_OR_RETURN(std::string name, reader_.ReadName());
    module_ = std::make_unique<Module>(name);
    while (reader_.TryConsume(",")) VKSPMD_RETURN_IF_ERROR(ParseModuleAttribute());
    while (!reader_.AtEnd()) VKSPMD_RETURN_IF_ERROR(ParseComputation());
    if (module_->computations().empty()) return reader_.Expected("a computation");
    if (module_->entry() == nullptr) module_->set_entry(module_->computations().back().get());
    return std::move(module_);
  }

 private:
  absl::Status ParseModuleAttribute() {
    const Token name_token = reader_.current();
    VKSPMD_ASSIGN_OR_RETURN(std::string name, reader_.ReadWord("a module attribute"));
    VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct("="));
    if (name == "input_output_alias") return ParseAliases();
    if (name == "replica_count" || name == "num_partitions") {
      const Token value_token = reader_.current();
      VKSPMD_ASSIGN_OR_RETURN(int64_t count, reader_.ReadInteger());
      if (count < 1 || count > (1 << 20))
        return reader_.ErrorAt(value_token, "count must be in 1..2^20");
      if (name == "replica_count") {
        module_->set_replica_count(count);
      } else {
        module_->set_partition_count(count);
      }
      return absl::OkStatus();
    }
    if (IgnoredModuleAttributes().contains(name)) return reader_.SkipValue();
    return reader_.ErrorAt(name_token, fmt::format("unsupported module attribute {}", name));
  }

  // { {0}: (0, {}, may-alias), {1}: (1, {}) }
  absl::Status ParseAliases() {
    VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct("{"));
    if (reader_.TryConsume("}")) return absl::OkStatus();
    do {
      InputOutputAlias alias;
      VKSPMD_ASSIGN_OR_RETURN(alias.output_index, reader_.ReadIntegerList());
      VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct(":"));
      VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct("("));
      VKSPMD_ASSIGN_OR_RETURN(alias.parameter_number, reader_.ReadInteger());
      VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct(","));
      VKSPMD_ASSIGN_OR_RETURN(alias.parameter_index, reader_.ReadIntegerList());
      if (reader_.TryConsume(",")) {
        VKSPMD_ASSIGN_OR_RETURN(std::string kind, reader_.ReadWord("may-alias or must-alias"));
        if (kind != "may-alias" && kind != "must-alias") {
          return reader_.Error(fmt::format("unknown alias kind '{}'", kind));
        }
        alias.must_alias = kind == "must-alias";
      }
      VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct(")"));
      module_->input_output_aliases().push_back(std::move(alias));
    } while (reader_.TryConsume(","));
    return reader_.ExpectPunct("}");
  }

  absl::Status ParseComputation() {
    bool is_entry = false;
    if (reader_.IsWord("ENTRY")) {
      is_entry = true;
      reader_.Advance();
    }
    const Token name_token = reader_.current();
    VKSPMD_ASSIGN_OR_RETURN(std::string name, reader_.ReadName());
    if (module_->FindComputation(name) != nullptr) {
      return reader_.ErrorAt(name_token, fmt::format("duplicate computation %{}", name));
    }
    if (reader_.IsPunct("(")) VKSPMD_RETURN_IF_ERROR(SkipSignature());
    VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct("{"));
    auto computation = std::make_unique<Computation>(name);
    names_.clear();
    parameter_numbers_.clear();
    Instruction* root = nullptr;
    while (!reader_.TryConsume("}")) {
      if (reader_.AtEnd()) return reader_.Expected("'}'");
      VKSPMD_RETURN_IF_ERROR(ParseInstruction(*computation, root));
    }
    if (computation->instructions().empty()) {
      return reader_.ErrorAt(name_token, fmt::format("computation %{} is empty", name));
    }
    for (int64_t i = 0; i < computation->parameter_count(); ++i) {
      if (computation->parameter(i) == nullptr) {
        return reader_.ErrorAt(name_token,
                               fmt::format("computation %{} has no parameter({})", name, i));
      }
    }
    computation->set_root(root);
    Computation* added = module_->AddComputation(std::move(computation));
    if (is_entry) {
      if (module_->entry() != nullptr)
        return reader_.ErrorAt(name_token, "second ENTRY computation");
      module_->set_entry(added);
    }
    return absl::OkStatus();
  }

  // "(p0: f32[8], p1: s32[]) -> f32[8]": repeated by the parameter instructions, so only checked
  // for syntax.
  absl::Status SkipSignature() {
    VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct("("));
    if (!reader_.TryConsume(")")) {
      do {
        VKSPMD_RETURN_IF_ERROR(reader_.ReadName().status());
        VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct(":"));
        VKSPMD_RETURN_IF_ERROR(reader_.ReadShape().status());
      } while (reader_.TryConsume(","));
      VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct(")"));
    }
    VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct("->"));
    return reader_.ReadShape().status();
  }

  absl::Status ParseInstruction(Computation& computation, Instruction*& root) {
    bool is_root = false;
    if (reader_.IsWord("ROOT")) {
      is_root = true;
      reader_.Advance();
    }
    const Token name_token = reader_.current();
    VKSPMD_ASSIGN_OR_RETURN(std::string name, reader_.ReadName());
    if (names_.contains(name)) {
      return reader_.ErrorAt(name_token, fmt::format("duplicate instruction %{}", name));
    }
    VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct("="));
    VKSPMD_ASSIGN_OR_RETURN(Shape shape, reader_.ReadShape());
    const Token opcode_token = reader_.current();
    VKSPMD_ASSIGN_OR_RETURN(std::string opcode_name, reader_.ReadWord("an op name"));
    const std::optional<Opcode> opcode = OpcodeFromName(opcode_name);
    if (!opcode.has_value()) {
      return reader_.ErrorAt(opcode_token, fmt::format("unsupported op {}", opcode_name));
    }
    VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct("("));
    std::vector<Instruction*> operands;
    InstructionAttributes attributes;
    if (*opcode == Opcode::kParameter) {
      VKSPMD_RETURN_IF_ERROR(ParseParameterNumber(attributes));
    } else if (*opcode == Opcode::kConstant) {
      VKSPMD_ASSIGN_OR_RETURN(attributes.literal, reader_.ReadLiteral(shape));
      VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct(")"));
    } else {
      VKSPMD_ASSIGN_OR_RETURN(operands, ParseOperands());
    }
    auto instruction = std::make_unique<Instruction>(*opcode, shape, std::move(operands));
    instruction->attributes() = std::move(attributes);
    instruction->set_name(name);
    instruction->set_location({name_token.line, name_token.column});
    while (reader_.TryConsume(",")) VKSPMD_RETURN_IF_ERROR(ParseAttribute(*instruction));
    Instruction* added = computation.AddInstruction(std::move(instruction));
    names_[name] = added;
    if (is_root) {
      if (root != nullptr) return reader_.ErrorAt(name_token, "second ROOT instruction");
      root = added;
    }
    return absl::OkStatus();
  }

  absl::Status ParseParameterNumber(InstructionAttributes& attributes) {
    const Token number_token = reader_.current();
    VKSPMD_ASSIGN_OR_RETURN(int64_t number, reader_.ReadInteger());
    if (number < 0 || number >= kMaxParameterNumber) {
      return reader_.ErrorAt(number_token, "parameter number must be in 0..65535");
    }
    if (!parameter_numbers_.insert(number).second) {
      return reader_.ErrorAt(number_token, fmt::format("duplicate parameter({})", number));
    }
    attributes.parameter_number = number;
    return reader_.ExpectPunct(")");
  }

  absl::StatusOr<std::vector<Instruction*>> ParseOperands() {
    std::vector<Instruction*> operands;
    if (reader_.TryConsume(")")) return operands;
    do {
      // XLA prints "f32[8]{0} %x"; newer XLA prints just "x". The annotation must be right.
      const Token shape_token = reader_.current();
      std::optional<Shape> annotated;
      if (reader_.IsPunct("(") || (reader_.current().kind == TokenKind::kWord &&
                                   DTypeFromName(reader_.current().text).has_value())) {
        VKSPMD_ASSIGN_OR_RETURN(annotated, reader_.ReadShape());
      }
      const Token operand_token = reader_.current();
      VKSPMD_ASSIGN_OR_RETURN(std::string operand_name, reader_.ReadName());
      auto found = names_.find(operand_name);
      if (found == names_.end()) {
        return reader_.ErrorAt(operand_token, fmt::format("unknown operand %{}", operand_name));
      }
      if (annotated.has_value() && *annotated != found->second->shape()) {
        return reader_.ErrorAt(
            shape_token, fmt::format("operand %{} is annotated {} but is {}", operand_name,
                                     annotated->ToString(), found->second->shape().ToString()));
      }
      operands.push_back(found->second);
    } while (reader_.TryConsume(","));
    VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct(")"));
    return operands;
  }

  absl::Status ParseAttribute(Instruction& instruction);

  TextReader reader_;
  std::unique_ptr<Module> module_;
  absl::flat_hash_map<std::string, Instruction*> names_;
  absl::flat_hash_set<int64_t> parameter_numbers_;
};

absl::StatusOr<RngAlgorithm> ParseRngAlgorithm(TextReader& reader) {
  VKSPMD_ASSIGN_OR_RETURN(std::string name, reader.ReadWord("an rng algorithm"));
  if (name == "rng_default") return RngAlgorithm::kDefault;
  if (name == "rng_three_fry") return RngAlgorithm::kThreeFry;
  if (name == "rng_philox") return RngAlgorithm::kPhilox;
  return reader.Error(fmt::format("unknown rng algorithm '{}'", name));
}

absl::Status ParsePadding(TextReader& reader, std::vector<PaddingDimension>& padding) {
  const Token token = reader.current();
  VKSPMD_ASSIGN_OR_RETURN(std::string text, reader.ReadWord("a padding like 0_1x2_0"));
  const std::vector<std::string> dimension_texts = absl::StrSplit(text, 'x');
  for (const std::string& dimension_text : dimension_texts) {
    const std::vector<std::string> numbers = absl::StrSplit(dimension_text, '_');
    PaddingDimension dimension;
    const bool valid = (numbers.size() == 2 || numbers.size() == 3) &&
                       absl::SimpleAtoi(numbers[0], &dimension.low) &&
                       absl::SimpleAtoi(numbers[1], &dimension.high) &&
                       (numbers.size() == 2 || absl::SimpleAtoi(numbers[2], &dimension.interior));
    if (!valid) return reader.ErrorAt(token, fmt::format("malformed padding '{}'", text));
    padding.push_back(dimension);
  }
  return absl::OkStatus();
}

absl::Status ParseSlice(TextReader& reader, std::vector<SliceDimension>& slice) {
  VKSPMD_RETURN_IF_ERROR(reader.ExpectPunct("{"));
  if (reader.TryConsume("}")) return absl::OkStatus();
  do {
    SliceDimension dimension;
    VKSPMD_RETURN_IF_ERROR(reader.ExpectPunct("["));
    VKSPMD_ASSIGN_OR_RETURN(dimension.start, reader.ReadInteger());
    VKSPMD_RETURN_IF_ERROR(reader.ExpectPunct(":"));
    VKSPMD_ASSIGN_OR_RETURN(dimension.limit, reader.ReadInteger());
    if (reader.TryConsume(":")) {
      VKSPMD_ASSIGN_OR_RETURN(dimension.stride, reader.ReadInteger());
    }
    VKSPMD_RETURN_IF_ERROR(reader.ExpectPunct("]"));
    slice.push_back(dimension);
  } while (reader.TryConsume(","));
  return reader.ExpectPunct("}");
}

absl::Status ParseSourceTargetPairs(TextReader& reader,
                                    std::vector<std::pair<int64_t, int64_t>>& pairs) {
  VKSPMD_RETURN_IF_ERROR(reader.ExpectPunct("{"));
  if (reader.TryConsume("}")) return absl::OkStatus();
  do {
    const Token token = reader.current();
    VKSPMD_ASSIGN_OR_RETURN(std::vector<int64_t> pair, reader.ReadIntegerList());
    if (pair.size() != 2) return reader.ErrorAt(token, "expected a {source,target} pair");
    pairs.emplace_back(pair[0], pair[1]);
  } while (reader.TryConsume(","));
  return reader.ExpectPunct("}");
}

// Whether an op takes a meaningful attribute; an attribute on the wrong op is an error rather
// than something silently dropped when printing.
bool AttributeAppliesTo(std::string_view name, Opcode opcode) {
  const bool collective = IsCollective(opcode);
  const bool grouped = collective && opcode != Opcode::kCollectivePermute;
  const bool has_global_flag = opcode == Opcode::kAllReduce || opcode == Opcode::kAllGather ||
                               opcode == Opcode::kReduceScatter;
  if (name == "dimensions") {
    return opcode == Opcode::kBroadcast || opcode == Opcode::kTranspose ||
           opcode == Opcode::kConcatenate || opcode == Opcode::kReverse ||
           opcode == Opcode::kReduce || (grouped && opcode != Opcode::kAllReduce);
  }
  if (name == "iota_dimension") return opcode == Opcode::kIota;
  if (name == "index") return opcode == Opcode::kGetTupleElement;
  if (name == "slice") return opcode == Opcode::kSlice;
  if (name == "dynamic_slice_sizes") return opcode == Opcode::kDynamicSlice;
  if (name == "padding") return opcode == Opcode::kPad;
  if (name == "lhs_batch_dims" || name == "rhs_batch_dims" || name == "lhs_contracting_dims" ||
      name == "rhs_contracting_dims") {
    return opcode == Opcode::kDot;
  }
  if (name == "direction" || name == "type") return opcode == Opcode::kCompare;
  if (name == "to_apply") {
    return opcode == Opcode::kReduce || opcode == Opcode::kAllReduce ||
           opcode == Opcode::kReduceScatter || opcode == Opcode::kScatter;
  }
  if (IsGatherScatterAttribute(name)) return GatherScatterAttributeAppliesTo(name, opcode);
  if (name == "replica_groups") return grouped;
  if (name == "channel_id") return collective;
  if (name == "use_global_device_ids") return has_global_flag;
  if (name == "source_target_pairs") return opcode == Opcode::kCollectivePermute;
  if (name == "custom_call_target") return opcode == Opcode::kCustomCall;
  return true;
}

absl::Status ModuleParser::ParseAttribute(Instruction& instruction) {
  const Token name_token = reader_.current();
  VKSPMD_ASSIGN_OR_RETURN(std::string name, reader_.ReadWord("an attribute name"));
  if (!AttributeAppliesTo(name, instruction.opcode())) {
    return reader_.ErrorAt(name_token, fmt::format("attribute {} does not apply to {}", name,
                                                   OpcodeName(instruction.opcode())));
  }
  VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct("="));
  InstructionAttributes& attributes = instruction.attributes();
  if (name == "dimensions") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.dimensions, reader_.ReadIntegerList());
  } else if (name == "iota_dimension") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.iota_dimension, reader_.ReadInteger());
  } else if (name == "index") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.tuple_index, reader_.ReadInteger());
  } else if (name == "slice") {
    return ParseSlice(reader_, attributes.slice);
  } else if (name == "dynamic_slice_sizes") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.dynamic_slice_sizes, reader_.ReadIntegerList());
  } else if (name == "padding") {
    return ParsePadding(reader_, attributes.padding);
  } else if (name == "lhs_batch_dims") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.dot.lhs_batch, reader_.ReadIntegerList());
  } else if (name == "rhs_batch_dims") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.dot.rhs_batch, reader_.ReadIntegerList());
  } else if (name == "lhs_contracting_dims") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.dot.lhs_contracting, reader_.ReadIntegerList());
  } else if (name == "rhs_contracting_dims") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.dot.rhs_contracting, reader_.ReadIntegerList());
  } else if (name == "direction") {
    const Token token = reader_.current();
    VKSPMD_ASSIGN_OR_RETURN(std::string direction, reader_.ReadWord("a comparison direction"));
    const std::optional<ComparisonDirection> parsed = ComparisonDirectionFromName(direction);
    if (!parsed.has_value()) {
      return reader_.ErrorAt(token, fmt::format("unknown comparison direction '{}'", direction));
    }
    attributes.direction = *parsed;
  } else if (name == "type") {
    // FLOAT/SIGNED/UNSIGNED repeat what the operand type says; TOTALORDER would change NaN order.
    const Token token = reader_.current();
    VKSPMD_ASSIGN_OR_RETURN(std::string type, reader_.ReadWord("a comparison type"));
    if (type != "FLOAT" && type != "SIGNED" && type != "UNSIGNED") {
      return reader_.ErrorAt(token, fmt::format("unsupported comparison type {}", type));
    }
  } else if (name == "to_apply") {
    const Token token = reader_.current();
    VKSPMD_ASSIGN_OR_RETURN(std::string callee, reader_.ReadName());
    attributes.to_apply = module_->FindComputation(callee);
    if (attributes.to_apply == nullptr) {
      return reader_.ErrorAt(token, fmt::format("unknown computation %{}", callee));
    }
  } else if (name == "replica_groups") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.replica_groups, reader_.ReadReplicaGroups());
  } else if (name == "channel_id") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.channel_id, reader_.ReadInteger());
  } else if (name == "use_global_device_ids") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.use_global_device_ids, reader_.ReadBool());
  } else if (name == "source_target_pairs") {
    return ParseSourceTargetPairs(reader_, attributes.source_target_pairs);
  } else if (name == "custom_call_target") {
    if (reader_.current().kind != TokenKind::kString) return reader_.Expected("a quoted target");
    attributes.custom_call_target = reader_.current().text;
    reader_.Advance();
  } else if (name == "algorithm" && instruction.opcode() == Opcode::kRngBitGenerator) {
    VKSPMD_ASSIGN_OR_RETURN(attributes.rng_algorithm, ParseRngAlgorithm(reader_));
  } else if (IsGatherScatterAttribute(name)) {
    return ParseGatherScatterAttribute(reader_, name, attributes.gather);
  } else if (name == "sharding") {
    VKSPMD_ASSIGN_OR_RETURN(Sharding sharding, reader_.ReadSharding());
    instruction.set_sharding(std::move(sharding));
  } else if (IgnoredAttributes().contains(name) ||
             (name == "algorithm" && instruction.opcode() == Opcode::kDot)) {
    return reader_.SkipValue();
  } else {
    return reader_.ErrorAt(name_token, fmt::format("unsupported attribute {}", name));
  }
  return absl::OkStatus();
}

// Every message of the public entry points may quote the input: escape what it quotes.
absl::Status Escaped(const absl::Status& status) {
  return absl::Status(status.code(), base::EscapeControlBytes(std::string(status.message())));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Module>> ParseModule(std::string_view text) {
  absl::StatusOr<std::unique_ptr<Module>> module = ModuleParser(text).Parse();
  if (!module.ok()) return Escaped(module.status());
  return module;
}

absl::StatusOr<std::unique_ptr<Module>> ParseAndVerifyModule(std::string_view text) {
  VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, ParseModule(text));
  absl::Status verified = VerifyModule(*module);
  if (!verified.ok()) return Escaped(verified);
  return module;
}

absl::StatusOr<Sharding> ParseSharding(std::string_view text) {
  TextReader reader(text);
  absl::StatusOr<Sharding> sharding = reader.ReadSharding();
  if (sharding.ok() && !reader.AtEnd()) sharding = reader.Expected("end of input");
  if (!sharding.ok()) return Escaped(sharding.status());
  return sharding;
}

}  // namespace vkspmd::ir
