// The factor rule of every op of the IR. A factor is one index space of an op; tensors list per
// dim which factors they span. Dims an op cannot split get kNeedReplication factors of their own.
#include "src/spmd/op_rules.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "src/ir/gather_attributes.h"

namespace vkspmd::spmd {
namespace {

using ir::Instruction;
using ir::Opcode;

class RuleBuilder {
 public:
  explicit RuleBuilder(const Instruction& instruction) : instruction_(instruction) {}

  int64_t AddFactor(int64_t size, FactorKind kind = FactorKind::kPassThrough) {
    rule_.factors.push_back(Factor{size, kind});
    return static_cast<int64_t>(rule_.factors.size()) - 1;
  }
  // One pass-through factor per dim of `shape`.
  std::vector<int64_t> AddDimFactors(const ir::Shape& shape) {
    std::vector<int64_t> factors;
    for (int64_t size : shape.dimensions()) factors.push_back(AddFactor(size));
    return factors;
  }
  void AddOperand(int64_t index, const std::vector<int64_t>& factor_per_dim) {
    rule_.operands.push_back({instruction_.operand(index), 0});
    rule_.operand_dims.push_back(Singletons(factor_per_dim));
  }
  void AddScalarOperand(int64_t index) { AddOperand(index, {}); }
  void AddResult(const std::vector<int64_t>& factor_per_dim, int64_t leaf = 0) {
    rule_.results.push_back({&instruction_, leaf});
    rule_.result_dims.push_back(Singletons(factor_per_dim));
  }
  void AddResultDims(DimFactors dims) {
    rule_.results.push_back({&instruction_, 0});
    rule_.result_dims.push_back(std::move(dims));
  }
  void AddOperandDims(int64_t index, DimFactors dims) {
    rule_.operands.push_back({instruction_.operand(index), 0});
    rule_.operand_dims.push_back(std::move(dims));
  }
  void set_may_gather_reductions() { rule_.may_gather_reductions = true; }
  OpRule Take() { return std::move(rule_); }

 private:
  static DimFactors Singletons(const std::vector<int64_t>& factors) {
    DimFactors dims;
    for (int64_t factor : factors) dims.push_back({factor});
    return dims;
  }
  const Instruction& instruction_;
  OpRule rule_;
};

// Every dim shared by all operands of the same rank and the result; scalars take no part.
OpRule ElementwiseRule(const Instruction& instruction) {
  RuleBuilder rule(instruction);
  const std::vector<int64_t> factors = rule.AddDimFactors(instruction.shape());
  for (int64_t i = 0; i < instruction.operand_count(); ++i) {
    const bool scalar =
        instruction.operand(i)->shape().rank() == 0 && instruction.shape().rank() > 0;
    rule.AddOperand(i, scalar ? std::vector<int64_t>{} : factors);
  }
  rule.AddResult(factors);
  return rule.Take();
}

// A dim the op changes (slice window, padding, reversal, concatenation): kept whole, with a
// factor per tensor so that neither side constrains the other.
int64_t Unsplittable(RuleBuilder& rule, int64_t size) {
  return rule.AddFactor(size, FactorKind::kNeedReplication);
}

// How a window-like op treats each dim. kMasked: a dynamic-slice dim with a data-dependent start,
// whose operand dim is a reduction factor (each device slices what it holds of the window, zeroes
// the rest, and an all-reduce sums, as GSPMD does for a vocabulary-sharded gather) and whose result
// dim is whole.
enum class WindowDim { kUnchanged, kShifted, kMasked, kWhole };

// bitcast-convert: between types of one width elementwise; a width change adds or drops a last
// dim of narrow elements (ir::BitcastConvertShape), which is whole (each device needs all the
// bytes of its wide elements); the dims before it pass through.
OpRule BitcastConvertRule(const Instruction& instruction) {
  const ir::Shape& operand = instruction.operand(0)->shape();
  const ir::Shape& result = instruction.shape();
  if (operand.rank() == result.rank()) return ElementwiseRule(instruction);
  RuleBuilder rule(instruction);
  const int64_t common = std::min(operand.rank(), result.rank());
  std::vector<int64_t> operand_factors, result_factors;
  for (int64_t d = 0; d < common; ++d) {
    const int64_t factor = rule.AddFactor(result.dimension(d));
    operand_factors.push_back(factor);
    result_factors.push_back(factor);
  }
  if (operand.rank() > common) {
    operand_factors.push_back(Unsplittable(rule, operand.dimension(common)));
  } else {
    result_factors.push_back(Unsplittable(rule, result.dimension(common)));
  }
  rule.AddOperand(0, operand_factors);
  rule.AddResult(result_factors);
  return rule.Take();
}

// Dims left alone by a window-like op pass through; dims it only moves elements along (slices of
// any stride, padding of any kind, reversal, constant dynamic-slice starts) share a window factor
// (kWindow); the others are whole on both sides.
OpRule WindowRule(const Instruction& instruction, const std::vector<WindowDim>& dims) {
  RuleBuilder rule(instruction);
  const ir::Shape& operand = instruction.operand(0)->shape();
  std::vector<int64_t> operand_factors, result_factors;
  for (int64_t d = 0; d < operand.rank(); ++d) {
    if (dims[d] == WindowDim::kMasked) {
      rule.set_may_gather_reductions();
      operand_factors.push_back(rule.AddFactor(operand.dimension(d), FactorKind::kReduction));
      result_factors.push_back(Unsplittable(rule, instruction.shape().dimension(d)));
    } else if (dims[d] != WindowDim::kWhole) {
      const int64_t factor = rule.AddFactor(operand.dimension(d), dims[d] == WindowDim::kUnchanged
                                                                      ? FactorKind::kPassThrough
                                                                      : FactorKind::kWindow);
      operand_factors.push_back(factor);
      result_factors.push_back(factor);
    } else {
      operand_factors.push_back(Unsplittable(rule, operand.dimension(d)));
      result_factors.push_back(Unsplittable(rule, instruction.shape().dimension(d)));
    }
  }
  rule.AddOperand(0, operand_factors);
  for (int64_t i = 1; i < instruction.operand_count(); ++i) rule.AddScalarOperand(i);
  rule.AddResult(result_factors);
  return rule.Take();
}

OpRule DotRule(const Instruction& instruction) {
  RuleBuilder rule(instruction);
  const ir::DotDimensions& dot = instruction.attributes().dot;
  const ir::Shape& lhs = instruction.operand(0)->shape();
  const ir::Shape& rhs = instruction.operand(1)->shape();
  std::vector<int64_t> lhs_factors(lhs.rank(), -1), rhs_factors(rhs.rank(), -1), result;
  for (size_t i = 0; i < dot.lhs_batch.size(); ++i) {
    const int64_t factor = rule.AddFactor(lhs.dimension(dot.lhs_batch[i]));
    lhs_factors[dot.lhs_batch[i]] = rhs_factors[dot.rhs_batch[i]] = factor;
    result.push_back(factor);
  }
  for (size_t i = 0; i < dot.lhs_contracting.size(); ++i) {
    const int64_t factor =
        rule.AddFactor(lhs.dimension(dot.lhs_contracting[i]), FactorKind::kReduction);
    lhs_factors[dot.lhs_contracting[i]] = rhs_factors[dot.rhs_contracting[i]] = factor;
  }
  for (std::vector<int64_t>* factors : {&lhs_factors, &rhs_factors}) {
    const ir::Shape& shape = factors == &lhs_factors ? lhs : rhs;
    for (int64_t d = 0; d < shape.rank(); ++d) {
      if ((*factors)[d] >= 0) continue;
      (*factors)[d] = rule.AddFactor(shape.dimension(d));
      result.push_back((*factors)[d]);
    }
  }
  rule.AddOperand(0, lhs_factors);
  rule.AddOperand(1, rhs_factors);
  rule.AddResult(result);
  return rule.Take();
}

// Reduce: reduced dims are reduction factors; a variadic reduce (arg-max) cannot combine
// partial results with one all-reduce, so its reduced dims must be unsharded instead.
OpRule ReduceRule(const Instruction& instruction) {
  RuleBuilder rule(instruction);
  const int64_t inputs = instruction.operand_count() / 2;
  const ir::Shape& operand = instruction.operand(0)->shape();
  const std::vector<int64_t>& reduced = instruction.attributes().dimensions;
  std::vector<int64_t> operand_factors, result_factors;
  for (int64_t d = 0; d < operand.rank(); ++d) {
    const bool is_reduced = std::find(reduced.begin(), reduced.end(), d) != reduced.end();
    const FactorKind kind = !is_reduced   ? FactorKind::kPassThrough
                            : inputs == 1 ? FactorKind::kReduction
                                          : FactorKind::kNeedReplication;
    operand_factors.push_back(rule.AddFactor(operand.dimension(d), kind));
    if (!is_reduced) result_factors.push_back(operand_factors.back());
  }
  for (int64_t i = 0; i < inputs; ++i) rule.AddOperand(i, operand_factors);
  for (int64_t i = inputs; i < 2 * inputs; ++i) rule.AddScalarOperand(i);
  for (int64_t i = 0; i < inputs; ++i) rule.AddResult(result_factors, inputs == 1 ? 0 : i);
  return rule.Take();
}

// Reshape: the common refinement of both shapes. Dims whose sizes do not divide each other
// get unsplittable factors.
OpRule ReshapeRule(const Instruction& instruction) {
  RuleBuilder rule(instruction);
  const ir::Shape& from = instruction.operand(0)->shape();
  const ir::Shape& to = instruction.shape();
  DimFactors operand_dims(from.rank()), result_dims(to.rank());
  int64_t i = 0, j = 0;
  int64_t left_i = i < from.rank() ? from.dimension(0) : 1;
  int64_t left_j = j < to.rank() ? to.dimension(0) : 1;
  const auto next_i = [&] {
    ++i;
    left_i = i < from.rank() ? from.dimension(i) : 1;
  };
  const auto next_j = [&] {
    ++j;
    left_j = j < to.rank() ? to.dimension(j) : 1;
  };
  while (i < from.rank() || j < to.rank()) {
    // A size-1 dim is on one side only: split, it holds its element on one device and padding on
    // the others, which the other side has no dim to carry, so it must be whole.
    if (i < from.rank() && from.dimension(i) == 1) {
      operand_dims[i].push_back(Unsplittable(rule, 1));
      next_i();
    } else if (j < to.rank() && to.dimension(j) == 1) {
      result_dims[j].push_back(Unsplittable(rule, 1));
      next_j();
    } else if (i >= from.rank() || j >= to.rank()) {
      break;  // only size-0 dims can leave one side unfinished
    } else if (left_i == left_j) {
      const int64_t factor = rule.AddFactor(left_i);
      operand_dims[i].push_back(factor);
      result_dims[j].push_back(factor);
      next_i();
      next_j();
    } else if (left_i != 0 && left_j % left_i == 0) {
      const int64_t factor = rule.AddFactor(left_i);
      operand_dims[i].push_back(factor);
      result_dims[j].push_back(factor);
      left_j /= left_i;
      next_i();
    } else if (left_j != 0 && left_i % left_j == 0) {
      const int64_t factor = rule.AddFactor(left_j);
      operand_dims[i].push_back(factor);
      result_dims[j].push_back(factor);
      left_i /= left_j;
      next_j();
    } else {
      break;
    }
  }
  // What is left does not factor cleanly: whole dims that stay unsplit.
  for (; i < from.rank(); next_i()) {
    operand_dims[i] = {Unsplittable(rule, from.dimension(i))};
  }
  for (; j < to.rank(); next_j()) result_dims[j] = {Unsplittable(rule, to.dimension(j))};
  rule.AddOperandDims(0, std::move(operand_dims));
  rule.AddResultDims(std::move(result_dims));
  return rule.Take();
}

OpRule ConcatenateRule(const Instruction& instruction) {
  RuleBuilder rule(instruction);
  const int64_t axis = instruction.attributes().dimensions[0];
  // Dims other than the concatenated one are shared by every operand and the result.
  std::vector<int64_t> shared(instruction.shape().rank(), -1);
  for (int64_t d = 0; d < instruction.shape().rank(); ++d) {
    if (d != axis) shared[d] = rule.AddFactor(instruction.shape().dimension(d));
  }
  // The concatenated dim: one window factor, split alike in every operand and the result.
  shared[axis] = rule.AddFactor(instruction.shape().dimension(axis), FactorKind::kWindow);
  for (int64_t i = 0; i < instruction.operand_count(); ++i) rule.AddOperand(i, shared);
  rule.AddResult(shared);
  return rule.Take();
}

// Dynamic-update-slice: a dim the update covers whole is shared by all three tensors; a dim it
// covers in part passes through from the operand to the result, each device writing the rows of
// the update that land in its shard (EmitLocalDynamicUpdateSlice), while the update itself is
// whole along it (GSPMD's HandleDynamicUpdateSlice replicates it too).
OpRule DynamicUpdateSliceRule(const Instruction& instruction) {
  RuleBuilder rule(instruction);
  const ir::Shape& operand = instruction.operand(0)->shape();
  const ir::Shape& update = instruction.operand(1)->shape();
  std::vector<int64_t> operand_factors, update_factors;
  for (int64_t d = 0; d < operand.rank(); ++d) {
    operand_factors.push_back(rule.AddFactor(operand.dimension(d)));
    update_factors.push_back(update.dimension(d) == operand.dimension(d)
                                 ? operand_factors.back()
                                 : Unsplittable(rule, update.dimension(d)));
  }
  rule.AddOperand(0, operand_factors);
  rule.AddOperand(1, update_factors);
  for (int64_t i = 2; i < instruction.operand_count(); ++i) rule.AddScalarOperand(i);
  rule.AddResult(operand_factors);
  return rule.Take();
}

// Gather: the indices' batch dims pass through to the result's batch dims (and to the operand's
// batching dims); an operand dim the slice takes whole passes through to its offset dim; an
// indexed dim with one-element slices is a reduction factor (each device gathers the rows it
// holds, zeroes the others, and an all-reduce sums: GSPMD's vocabulary-sharded embedding); the
// index vector and partly sliced dims stay whole.
OpRule GatherRule(const Instruction& instruction) {
  RuleBuilder rule(instruction);
  const ir::GatherDimensions& dims = instruction.attributes().gather;
  const ir::Shape& operand = instruction.operand(0)->shape();
  const ir::Shape& indices = instruction.operand(1)->shape();
  const ir::GatherIndexSpaces spaces =
      ir::DescribeGather(dims, operand.rank(), indices, instruction.shape().rank());
  std::vector<int64_t> operand_factors(operand.rank(), -1), index_factors(indices.rank(), -1),
      result_factors(instruction.shape().rank(), -1);
  for (size_t j = 0; j < spaces.indices_batch.size(); ++j) {
    const int64_t factor = rule.AddFactor(indices.dimension(spaces.indices_batch[j]));
    index_factors[spaces.indices_batch[j]] = result_factors[spaces.result_batch[j]] = factor;
  }
  if (spaces.explicit_index_vector) {
    index_factors[dims.index_vector_dim] = Unsplittable(rule, spaces.index_vector_size);
  }
  for (size_t b = 0; b < dims.operand_batching_dims.size(); ++b) {
    operand_factors[dims.operand_batching_dims[b]] =
        index_factors[dims.start_indices_batching_dims[b]];
  }
  std::vector<bool> whole(operand.rank(), false);
  for (int64_t d = 0; d < operand.rank(); ++d) {
    if (operand_factors[d] >= 0) continue;
    const bool indexed = std::find(dims.start_index_map.begin(), dims.start_index_map.end(), d) !=
                         dims.start_index_map.end();
    whole[d] = dims.slice_sizes[d] == operand.dimension(d);
    if (whole[d]) {
      operand_factors[d] = rule.AddFactor(operand.dimension(d));
    } else if (indexed && dims.slice_sizes[d] == 1) {
      operand_factors[d] = rule.AddFactor(operand.dimension(d), FactorKind::kReduction);
    } else {
      operand_factors[d] = Unsplittable(rule, operand.dimension(d));
    }
  }
  for (size_t w = 0; w < spaces.operand_window.size(); ++w) {
    const int64_t d = spaces.operand_window[w];
    result_factors[dims.offset_dims[w]] =
        whole[d] ? operand_factors[d] : Unsplittable(rule, dims.slice_sizes[d]);
  }
  rule.AddOperand(0, operand_factors);
  rule.AddOperand(1, index_factors);
  rule.AddResult(result_factors);
  return rule.Take();
}

// Scatter: the result is split as the operand. Operand dims the update windows cover whole pass
// through to the updates' window dims, batching dims to the indices' and updates' batch dims, and
// indexed dims with one-element windows split the operand alone (each device shifts the indices
// by its offset and the updates of other devices' rows fall out of bounds, which scatter skips).
// The scatter positions and the index vector stay whole: splitting them would need the partial
// results combined, which only an additive combiner allows.
OpRule ScatterRule(const Instruction& instruction) {
  RuleBuilder rule(instruction);
  const ir::GatherDimensions& dims = instruction.attributes().gather;
  const ir::Shape& operand = instruction.operand(0)->shape();
  const ir::Shape& indices = instruction.operand(1)->shape();
  const ir::Shape& updates = instruction.operand(2)->shape();
  const ir::GatherIndexSpaces spaces =
      ir::DescribeGather(dims, operand.rank(), indices, updates.rank());
  std::vector<int64_t> operand_factors(operand.rank(), -1), index_factors(indices.rank(), -1),
      update_factors(updates.rank(), -1);
  for (size_t j = 0; j < spaces.indices_batch.size(); ++j) {
    const int64_t index_dim = spaces.indices_batch[j];
    const auto batching = std::find(dims.start_indices_batching_dims.begin(),
                                    dims.start_indices_batching_dims.end(), index_dim);
    int64_t factor = -1;
    if (batching != dims.start_indices_batching_dims.end()) {
      factor = rule.AddFactor(indices.dimension(index_dim));
      operand_factors[dims.operand_batching_dims[batching -
                                                 dims.start_indices_batching_dims.begin()]] =
          factor;
    } else {
      factor = Unsplittable(rule, indices.dimension(index_dim));
    }
    index_factors[index_dim] = update_factors[spaces.result_batch[j]] = factor;
  }
  if (spaces.explicit_index_vector) {
    index_factors[dims.index_vector_dim] = Unsplittable(rule, spaces.index_vector_size);
  }
  std::vector<int64_t> window(operand.rank(), 1);
  for (size_t w = 0; w < spaces.operand_window.size(); ++w) {
    window[spaces.operand_window[w]] = updates.dimension(dims.offset_dims[w]);
  }
  for (int64_t d = 0; d < operand.rank(); ++d) {
    if (operand_factors[d] >= 0) continue;
    const bool indexed = std::find(dims.start_index_map.begin(), dims.start_index_map.end(), d) !=
                         dims.start_index_map.end();
    const bool passes = indexed ? window[d] == 1 : window[d] == operand.dimension(d);
    operand_factors[d] =
        passes ? rule.AddFactor(operand.dimension(d)) : Unsplittable(rule, operand.dimension(d));
  }
  for (size_t w = 0; w < spaces.operand_window.size(); ++w) {
    const int64_t d = spaces.operand_window[w];
    const bool shared = window[d] == operand.dimension(d) && window[d] > 1;
    update_factors[dims.offset_dims[w]] =
        shared ? operand_factors[d] : Unsplittable(rule, window[d]);
  }
  rule.AddOperand(0, operand_factors);
  rule.AddOperand(1, index_factors);
  rule.AddOperand(2, update_factors);
  rule.AddResult(operand_factors);
  return rule.Take();
}

// Sort: every operand and result alike; the sorted dim stays whole (GSPMD gathers it too), the
// others pass through, so rows sort where they are.
OpRule SortRule(const Instruction& instruction) {
  RuleBuilder rule(instruction);
  const ir::Shape& shape = instruction.operand(0)->shape();
  const int64_t sorted = instruction.attributes().dimensions[0];
  std::vector<int64_t> factors;
  for (int64_t d = 0; d < shape.rank(); ++d) {
    factors.push_back(d == sorted ? Unsplittable(rule, shape.dimension(d))
                                  : rule.AddFactor(shape.dimension(d)));
  }
  const int64_t count = instruction.operand_count();
  for (int64_t i = 0; i < count; ++i) rule.AddOperand(i, factors);
  for (int64_t i = 0; i < count; ++i) rule.AddResult(factors, count == 1 ? 0 : i);
  return rule.Take();
}

absl::Status Unsupported(const Instruction& instruction, std::string_view why) {
  return absl::UnimplementedError(
      fmt::format("{}: the partitioner does not support {} {}", instruction.Describe(),
                  ir::OpcodeName(instruction.opcode()), std::string(why)));
}

}  // namespace

const ir::Shape& LeafShape(const TensorRef& tensor) {
  const ir::Shape& shape = tensor.instruction->shape();
  return shape.IsTuple() ? shape.tuple_elements()[tensor.leaf] : shape;
}

int64_t LeafCount(const ir::Shape& shape) {
  return shape.IsTuple() ? static_cast<int64_t>(shape.tuple_elements().size()) : 1;
}

std::string OpRule::ToString() const {
  const auto tensors = [](const std::vector<DimFactors>& all) {
    std::vector<std::string> parts;
    for (const DimFactors& dims : all) {
      std::vector<std::string> names;
      for (const std::vector<int64_t>& dim : dims) {
        std::vector<std::string> letters;
        for (int64_t factor : dim) letters.push_back(fmt::format("f{}", factor));
        names.push_back(absl::StrJoin(letters, "*"));
      }
      parts.push_back(fmt::format("[{}]", absl::StrJoin(names, ",")));
    }
    return absl::StrJoin(parts, ",");
  };
  return fmt::format("({})->({})", tensors(operand_dims), tensors(result_dims));
}

absl::StatusOr<OpRule> PartiallyManualCollectiveRule(const Instruction& instruction) {
  const ir::Opcode opcode = instruction.opcode();
  if (instruction.operand_count() != 1 || instruction.shape().IsTuple()) {
    return Unsupported(instruction,
                       "inside a partially manual region with several operands or a tuple result "
                       "(the user's collectives there are partitioned one array at a time)");
  }
  if (opcode == ir::Opcode::kAllReduce || opcode == ir::Opcode::kCollectivePermute) {
    return ElementwiseRule(instruction);
  }
  // all-gather, reduce-scatter and all-to-all concatenate, scatter or exchange the group's values
  // along one dim: that dim stays whole on both sides (each side its own factor), the others
  // pass through, so every device runs the collective on its shard of them.
  const std::vector<int64_t>& dims = instruction.attributes().dimensions;
  if ((opcode != ir::Opcode::kAllGather && opcode != ir::Opcode::kReduceScatter &&
       opcode != ir::Opcode::kAllToAll) ||
      dims.size() != 1) {
    return Unsupported(instruction,
                       "inside a partially manual region (of the user's collectives all-reduce, "
                       "collective-permute, and all-gather, reduce-scatter and all-to-all along "
                       "one dimension are partitioned there)");
  }
  RuleBuilder rule(instruction);
  const ir::Shape& operand = instruction.operand(0)->shape();
  std::vector<int64_t> operand_factors, result_factors;
  for (int64_t d = 0; d < operand.rank(); ++d) {
    if (d == dims[0]) {
      operand_factors.push_back(Unsplittable(rule, operand.dimension(d)));
      result_factors.push_back(Unsplittable(rule, instruction.shape().dimension(d)));
    } else {
      operand_factors.push_back(rule.AddFactor(operand.dimension(d)));
      result_factors.push_back(operand_factors.back());
    }
  }
  rule.AddOperand(0, operand_factors);
  rule.AddResult(result_factors);
  return rule.Take();
}

absl::StatusOr<std::vector<OpRule>> RulesFor(const Instruction& instruction) {
  const Opcode opcode = instruction.opcode();
  for (const Instruction* operand : instruction.operands()) {
    for (const ir::Shape& element : operand->shape().tuple_elements()) {
      if (element.IsTuple()) return Unsupported(instruction, "on nested tuples");
    }
  }
  if (ir::IsElementwiseUnary(opcode) || ir::IsElementwiseBinary(opcode)) {
    return std::vector<OpRule>{ElementwiseRule(instruction)};
  }
  if (ir::IsCollective(opcode)) {
    return Unsupported(instruction, "in its input: collectives belong to partitioned programs");
  }
  const ir::InstructionAttributes& attributes = instruction.attributes();
  switch (opcode) {
    case Opcode::kCompare:
    case Opcode::kSelect:
    case Opcode::kClamp:
    case Opcode::kConvert:
    case Opcode::kCopy:
    case Opcode::kReducePrecision:
      return std::vector<OpRule>{ElementwiseRule(instruction)};
    case Opcode::kBitcastConvert:
      return std::vector<OpRule>{BitcastConvertRule(instruction)};
    case Opcode::kCustomCall:
      // The manual-region boundaries relate a sharded value to per-device values: no factors.
      if (attributes.custom_call_target != "Sharding") return std::vector<OpRule>{};
      return std::vector<OpRule>{ElementwiseRule(instruction)};
    case Opcode::kParameter:
    case Opcode::kConstant:
    case Opcode::kIota: {
      std::vector<OpRule> rules;
      for (int64_t leaf = 0; leaf < LeafCount(instruction.shape()); ++leaf) {
        RuleBuilder rule(instruction);
        rule.AddResult(rule.AddDimFactors(LeafShape({&instruction, leaf})), leaf);
        rules.push_back(rule.Take());
      }
      return rules;
    }
    case Opcode::kRngBitGenerator: {
      // Philox streams depend on the whole shape: generate whole, then slice.
      RuleBuilder rule(instruction);
      rule.AddOperand(0, {Unsplittable(rule, instruction.operand(0)->shape().dimension(0))});
      for (int64_t leaf = 0; leaf < 2; ++leaf) {
        std::vector<int64_t> factors;
        for (int64_t size : LeafShape({&instruction, leaf}).dimensions()) {
          factors.push_back(Unsplittable(rule, size));
        }
        rule.AddResult(factors, leaf);
      }
      return std::vector<OpRule>{rule.Take()};
    }
    case Opcode::kPartitionId:
    case Opcode::kReplicaId:
      return Unsupported(instruction, "in its input (the program is not yet partitioned)");
    case Opcode::kBroadcast: {
      RuleBuilder rule(instruction);
      const std::vector<int64_t> factors = rule.AddDimFactors(instruction.shape());
      std::vector<int64_t> operand_factors;
      for (int64_t d : attributes.dimensions) operand_factors.push_back(factors[d]);
      rule.AddOperand(0, operand_factors);
      rule.AddResult(factors);
      return std::vector<OpRule>{rule.Take()};
    }
    case Opcode::kTranspose: {
      RuleBuilder rule(instruction);
      const std::vector<int64_t> factors = rule.AddDimFactors(instruction.shape());
      std::vector<int64_t> operand_factors(factors.size());
      for (size_t i = 0; i < factors.size(); ++i)
        operand_factors[attributes.dimensions[i]] = factors[i];
      rule.AddOperand(0, operand_factors);
      rule.AddResult(factors);
      return std::vector<OpRule>{rule.Take()};
    }
    case Opcode::kReshape:
      return std::vector<OpRule>{ReshapeRule(instruction)};
    case Opcode::kSlice: {
      std::vector<WindowDim> dims;
      const ir::Shape& operand = instruction.operand(0)->shape();
      for (int64_t d = 0; d < operand.rank(); ++d) {
        const ir::SliceDimension& slice = attributes.slice[d];
        dims.push_back(slice.start == 0 && slice.limit == operand.dimension(d) && slice.stride == 1
                           ? WindowDim::kUnchanged
                           : WindowDim::kShifted);
      }
      return std::vector<OpRule>{WindowRule(instruction, dims)};
    }
    case Opcode::kPad: {
      std::vector<WindowDim> dims;
      for (const ir::PaddingDimension& padding : attributes.padding) {
        dims.push_back(padding.low == 0 && padding.high == 0 && padding.interior == 0
                           ? WindowDim::kUnchanged
                           : WindowDim::kShifted);
      }
      return std::vector<OpRule>{WindowRule(instruction, dims)};
    }
    case Opcode::kReverse: {
      std::vector<WindowDim> dims(instruction.shape().rank(), WindowDim::kUnchanged);
      for (int64_t d : attributes.dimensions) dims[d] = WindowDim::kShifted;
      return std::vector<OpRule>{WindowRule(instruction, dims)};
    }
    case Opcode::kDynamicSlice: {
      std::vector<WindowDim> dims;
      const ir::Shape& operand = instruction.operand(0)->shape();
      const auto cut = [&](int64_t d) {
        return attributes.dynamic_slice_sizes[d] != operand.dimension(d);
      };
      // A window is masked where a start is known only at run time, or where every dim it cuts
      // is one element long (a scan's read of its stacked xs at an unrolled, constant step). A
      // constant window longer than one element on some dim stays a static slice, whose split
      // dims may not move at all ([16,8] split by columns, sizes {1,4} at (3,2): each device
      // holds its half of the row's window).
      bool run_time = false;
      bool one_element = true;
      for (int64_t d = 0; d < operand.rank(); ++d) {
        if (!cut(d)) continue;
        run_time = run_time || instruction.operand(1 + d)->opcode() != Opcode::kConstant;
        one_element = one_element && attributes.dynamic_slice_sizes[d] == 1;
      }
      const bool masked = run_time || one_element;
      for (int64_t d = 0; d < operand.rank(); ++d) {
        // Constant starts make the window a static slice (what XLA's simplifier turns it into
        // before partitioning); a start known only at run time is masked, and so are the
        // constant ones of the same window: the masked slice takes any start, and one
        // all-reduce sums the window where a halo along the constant dims would still leave
        // the run-time dims to mask (XLA's HandleDynamicSlice gathers every such dim). A
        // one-element window is held by one device: passed through, the result dim would be
        // split over shards all but one of which are empty, and making it whole costs an
        // all-gather of (g-1) rows per device where the masked slice's all-reduce sends
        // 2(g-1)/g rows (the partitioner still prices gathering the operand against it).
        dims.push_back(!cut(d)  ? WindowDim::kUnchanged
                       : masked ? WindowDim::kMasked
                                : WindowDim::kShifted);
      }
      return std::vector<OpRule>{WindowRule(instruction, dims)};
    }
    case Opcode::kDynamicUpdateSlice:
      return std::vector<OpRule>{DynamicUpdateSliceRule(instruction)};
    case Opcode::kConcatenate:
      return std::vector<OpRule>{ConcatenateRule(instruction)};
    case Opcode::kDot:
      return std::vector<OpRule>{DotRule(instruction)};
    case Opcode::kReduce:
      return std::vector<OpRule>{ReduceRule(instruction)};
    case Opcode::kGather:
      return std::vector<OpRule>{GatherRule(instruction)};
    case Opcode::kScatter:
      return std::vector<OpRule>{ScatterRule(instruction)};
    case Opcode::kSort:
      return std::vector<OpRule>{SortRule(instruction)};
    case Opcode::kTuple: {
      std::vector<OpRule> rules;
      for (int64_t i = 0; i < instruction.operand_count(); ++i) {
        RuleBuilder rule(instruction);
        const std::vector<int64_t> factors = rule.AddDimFactors(instruction.operand(i)->shape());
        rule.AddOperand(i, factors);
        rule.AddResult(factors, i);
        rules.push_back(rule.Take());
      }
      return rules;
    }
    case Opcode::kGetTupleElement: {
      RuleBuilder rule(instruction);
      const std::vector<int64_t> factors = rule.AddDimFactors(instruction.shape());
      rule.AddOperand(0, factors);
      rule.AddResult(factors);
      OpRule built = rule.Take();
      built.operands[0].leaf = attributes.tuple_index;
      return std::vector<OpRule>{built};
    }
    default:
      break;
  }
  return Unsupported(instruction, "(no sharding rule)");
}

}  // namespace vkspmd::spmd
