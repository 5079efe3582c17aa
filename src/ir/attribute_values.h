// Instruction attributes in HLO text: which op takes which attribute, which attributes are
// ignored, and the grammars of padding=, slice= and source_target_pairs= values.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "src/ir/instruction.h"
#include "src/ir/opcode.h"
#include "src/ir/text_reader.h"

namespace vkspmd::ir {

// Whether an op takes a meaningful attribute; an attribute on the wrong op is an error rather
// than something silently dropped when printing.
bool AttributeAppliesTo(std::string_view name, Opcode opcode);

// Attributes that only carry provenance, scheduling, layout or backend hints: read and dropped.
bool IsIgnoredAttribute(std::string_view name);

// padding=0_1x2_0 (low_high[_interior] per dimension).
absl::Status ParsePadding(TextReader& reader, std::vector<PaddingDimension>& padding);

// slice={[start:limit(:stride)], ...}.
absl::Status ParseSlice(TextReader& reader, std::vector<SliceDimension>& slice);

// source_target_pairs={{0,1},{1,0}}.
absl::Status ParseSourceTargetPairs(TextReader& reader,
                                    std::vector<std::pair<int64_t, int64_t>>& pairs);

}  // namespace vkspmd::ir
