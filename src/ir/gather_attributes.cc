// Gather and scatter attributes (see gather_attributes.h). One table names each field under both
// ops' spellings, so parsing and printing cannot disagree.
#include "src/ir/gather_attributes.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"

namespace vkspmd::ir {
namespace {

using ListField = std::vector<int64_t> GatherDimensions::*;

struct ListAttribute {
  std::string_view gather_name;
  std::string_view scatter_name;  // Empty: gather only.
  ListField field;
};

// In XLA's printing order; index_vector_dim follows start_index_map.
constexpr ListAttribute kListAttributes[] = {
    {"offset_dims", "update_window_dims", &GatherDimensions::offset_dims},
    {"collapsed_slice_dims", "inserted_window_dims", &GatherDimensions::collapsed_slice_dims},
    {"operand_batching_dims", "input_batching_dims", &GatherDimensions::operand_batching_dims},
    {"start_indices_batching_dims", "scatter_indices_batching_dims",
     &GatherDimensions::start_indices_batching_dims},
    {"start_index_map", "scatter_dims_to_operand_dims", &GatherDimensions::start_index_map},
};

const ListAttribute* FindList(std::string_view name) {
  for (const ListAttribute& attribute : kListAttributes) {
    if (attribute.gather_name == name || attribute.scatter_name == name) return &attribute;
  }
  return nullptr;
}

std::string Braced(const std::vector<int64_t>& values) {
  return fmt::format("{{{}}}", absl::StrJoin(values, ","));
}

bool Contains(const std::vector<int64_t>& values, int64_t value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

}  // namespace

GatherIndexSpaces DescribeGather(const GatherDimensions& dimensions, int64_t operand_rank,
                                 const Shape& indices, int64_t result_rank) {
  GatherIndexSpaces spaces;
  for (int64_t d = 0; d < result_rank; ++d) {
    if (!Contains(dimensions.offset_dims, d)) spaces.result_batch.push_back(d);
  }
  for (int64_t d = 0; d < indices.rank(); ++d) {
    if (d != dimensions.index_vector_dim) spaces.indices_batch.push_back(d);
  }
  for (int64_t d = 0; d < operand_rank; ++d) {
    if (!Contains(dimensions.collapsed_slice_dims, d) &&
        !Contains(dimensions.operand_batching_dims, d)) {
      spaces.operand_window.push_back(d);
    }
  }
  spaces.explicit_index_vector = dimensions.index_vector_dim < indices.rank();
  if (spaces.explicit_index_vector) {
    spaces.index_vector_size = indices.dimension(dimensions.index_vector_dim);
  }
  return spaces;
}

bool IsGatherScatterAttribute(std::string_view name) {
  return FindList(name) != nullptr || name == "index_vector_dim" || name == "slice_sizes" ||
         name == "indices_are_sorted" || name == "unique_indices";
}

bool GatherScatterAttributeAppliesTo(std::string_view name, Opcode opcode) {
  if (name == "index_vector_dim" || name == "indices_are_sorted") {
    return opcode == Opcode::kGather || opcode == Opcode::kScatter;
  }
  if (name == "slice_sizes") return opcode == Opcode::kGather;
  if (name == "unique_indices") return opcode == Opcode::kScatter;
  const ListAttribute* list = FindList(name);
  if (list == nullptr) return false;
  return opcode == (list->gather_name == name ? Opcode::kGather : Opcode::kScatter);
}

absl::Status ParseGatherScatterAttribute(TextReader& reader, std::string_view name,
                                         GatherDimensions& dimensions) {
  if (const ListAttribute* list = FindList(name)) {
    VKSPMD_ASSIGN_OR_RETURN(dimensions.*(list->field), reader.ReadIntegerList());
  } else if (name == "index_vector_dim") {
    VKSPMD_ASSIGN_OR_RETURN(dimensions.index_vector_dim, reader.ReadInteger());
  } else if (name == "slice_sizes") {
    VKSPMD_ASSIGN_OR_RETURN(dimensions.slice_sizes, reader.ReadIntegerList());
  } else if (name == "indices_are_sorted") {
    VKSPMD_ASSIGN_OR_RETURN(dimensions.indices_are_sorted, reader.ReadBool());
  } else {
    VKSPMD_ASSIGN_OR_RETURN(dimensions.unique_indices, reader.ReadBool());
  }
  return absl::OkStatus();
}

std::vector<std::string> GatherScatterAttributeStrings(const Instruction& instruction) {
  const GatherDimensions& dimensions = instruction.attributes().gather;
  const bool gather = instruction.opcode() == Opcode::kGather;
  std::vector<std::string> parts;
  for (const ListAttribute& list : kListAttributes) {
    const std::vector<int64_t>& values = dimensions.*(list.field);
    // XLA omits empty batching dims; the others are always printed.
    const bool batching = list.field == &GatherDimensions::operand_batching_dims ||
                          list.field == &GatherDimensions::start_indices_batching_dims;
    if (batching && values.empty()) continue;
    parts.push_back(
        fmt::format("{}={}", gather ? list.gather_name : list.scatter_name, Braced(values)));
  }
  parts.push_back(fmt::format("index_vector_dim={}", dimensions.index_vector_dim));
  if (gather) parts.push_back("slice_sizes=" + Braced(dimensions.slice_sizes));
  if (dimensions.indices_are_sorted) parts.push_back("indices_are_sorted=true");
  if (!gather && dimensions.unique_indices) parts.push_back("unique_indices=true");
  return parts;
}

}  // namespace vkspmd::ir
