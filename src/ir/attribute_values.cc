// Instruction attributes in HLO text (attribute_values.h): which op takes which, and the value
// grammars of padding, slice and source_target_pairs.
#include "src/ir/attribute_values.h"

#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/ir/gather_attributes.h"

namespace vkspmd::ir {

bool IsIgnoredAttribute(std::string_view name) {
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
                                                "origin",
                                                "output_to_operand_aliasing",
                                                "is_host_transfer",
                                                "async_execution_thread"};
  return names->contains(name);
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

bool AttributeAppliesTo(std::string_view name, Opcode opcode) {
  const bool collective = IsCollective(opcode);
  const bool grouped = collective && opcode != Opcode::kCollectivePermute;
  const bool has_global_flag = opcode == Opcode::kAllReduce || opcode == Opcode::kAllGather ||
                               opcode == Opcode::kReduceScatter;
  if (name == "dimensions") {
    return opcode == Opcode::kBroadcast || opcode == Opcode::kTranspose ||
           opcode == Opcode::kConcatenate || opcode == Opcode::kReverse ||
           opcode == Opcode::kReduce || opcode == Opcode::kSort ||
           (grouped && opcode != Opcode::kAllReduce);
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
    // custom-call: the comparator of a "TopK" (rewritten as it is read).
    return opcode == Opcode::kReduce || opcode == Opcode::kAllReduce ||
           opcode == Opcode::kReduceScatter || opcode == Opcode::kScatter ||
           opcode == Opcode::kSort || opcode == Opcode::kCustomCall;
  }
  if (name == "is_stable") return opcode == Opcode::kSort;
  if (name == "condition" || name == "body") return opcode == Opcode::kWhile;
  if (name == "true_computation" || name == "false_computation" || name == "branch_computations") {
    return opcode == Opcode::kConditional;
  }
  if (IsGatherScatterAttribute(name)) return GatherScatterAttributeAppliesTo(name, opcode);
  if (name == "replica_groups") return grouped;
  if (name == "channel_id") return collective;
  if (name == "use_global_device_ids") return has_global_flag;
  if (name == "source_target_pairs") return opcode == Opcode::kCollectivePermute;
  if (name == "custom_call_target") return opcode == Opcode::kCustomCall;
  if (name == "exponent_bits" || name == "mantissa_bits") {
    return opcode == Opcode::kReducePrecision;
  }
  return true;
}

}  // namespace vkspmd::ir
