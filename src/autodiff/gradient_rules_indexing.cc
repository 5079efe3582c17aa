// Gradient rules of gather and scatter. A gather's operand adjoint is a scatter-add of the result's
// adjoint at the starts the gather read (clamped as it clamped them); an add-scatter passes its
// adjoint to the operand and gathers the updates' adjoints from where they were added, zero for
// updates the scatter skipped; an assigning scatter masks both by where each update landed.
#include <functional>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "src/autodiff/gradient_rules.h"
#include "src/base/status_macros.h"
#include "src/ir/gather_attributes.h"
#include "src/ir/module.h"

namespace vkspmd::autodiff {
namespace {

using ir::Instruction;
using ir::Opcode;

// A tensor of `indices`' shape and type whose index-vector entry k is values[k].
absl::StatusOr<Instruction*> PerComponent(GradientEmitter& emit, const Instruction& indices,
                                          int64_t index_vector_dim,
                                          const std::vector<int64_t>& values) {
  const ir::DType type = indices.shape().dtype();
  if (index_vector_dim == indices.shape().rank()) {
    VKSPMD_ASSIGN_OR_RETURN(Instruction * scalar,
                            emit.ScalarConstant(static_cast<double>(values[0]), type));
    return emit.Broadcast(scalar, indices.shape(), {});
  }
  ir::Literal vector(ir::Shape(type, {static_cast<int64_t>(values.size())}));
  for (size_t k = 0; k < values.size(); ++k) vector.SetFromInt64(k, values[k]);
  Instruction* constant = emit.builder().Constant(std::move(vector));
  return emit.Broadcast(constant, indices.shape(), {index_vector_dim});
}

// The largest start of each index-vector component: an operand dim minus the slice (window).
std::vector<int64_t> LargestStarts(const ir::GatherDimensions& dims, const ir::Shape& operand,
                                   const std::vector<int64_t>& window) {
  std::vector<int64_t> largest;
  for (int64_t d : dims.start_index_map) largest.push_back(operand.dimension(d) - window[d]);
  return largest;
}

// gather -> scatter-add into zeros, at indices clamped as the gather clamped them (so the
// scatter skips nothing).
absl::StatusOr<Instruction*> GatherOperandGradient(const RuleInput& input, GradientEmitter& emit) {
  const Instruction& gather = input.forward;
  const ir::GatherDimensions& dims = gather.attributes().gather;
  const ir::Shape& operand = gather.operand(0)->shape();
  Instruction* indices = gather.operand(1);
  VKSPMD_ASSIGN_OR_RETURN(Instruction * zero,
                          PerComponent(emit, *indices, dims.index_vector_dim,
                                       std::vector<int64_t>(dims.start_index_map.size(), 0)));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * largest,
                          PerComponent(emit, *indices, dims.index_vector_dim,
                                       LargestStarts(dims, operand, dims.slice_sizes)));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * clamped, emit.Binary(Opcode::kMaximum, indices, zero));
  VKSPMD_ASSIGN_OR_RETURN(clamped, emit.Binary(Opcode::kMinimum, clamped, largest));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * zeros, emit.Zeros(operand));
  VKSPMD_ASSIGN_OR_RETURN(ir::Computation * add, emit.AddReducer(operand.dtype()));
  ir::InstructionAttributes attributes;
  attributes.gather = dims;
  attributes.gather.slice_sizes.clear();
  attributes.to_apply = add;
  return emit.Add(Opcode::kScatter, {zeros, clamped, input.adjoint}, std::move(attributes));
}

bool IsAddition(const ir::Computation& combiner) {
  const Instruction* root = combiner.root();
  return root->opcode() == Opcode::kAdd && root->operand(0)->opcode() == Opcode::kParameter &&
         root->operand(1)->opcode() == Opcode::kParameter && root->operand(0) != root->operand(1);
}

// The operand elements each update covers: its window sizes per operand dim (1 where inserted).
std::vector<int64_t> UpdateWindow(const Instruction& scatter) {
  const ir::GatherDimensions& dims = scatter.attributes().gather;
  const ir::Shape& operand = scatter.operand(0)->shape();
  const ir::Shape& updates = scatter.operand(2)->shape();
  const ir::GatherIndexSpaces spaces =
      ir::DescribeGather(dims, operand.rank(), scatter.operand(1)->shape(), updates.rank());
  std::vector<int64_t> window(operand.rank(), 1);
  for (size_t w = 0; w < spaces.operand_window.size(); ++w) {
    window[spaces.operand_window[w]] = updates.dimension(dims.offset_dims[w]);
  }
  return window;
}

// `source` (of the scatter operand's dims) read at every update's window: updates-shaped.
absl::StatusOr<Instruction*> GatherAtUpdates(const Instruction& scatter, Instruction* source,
                                             GradientEmitter& emit) {
  ir::InstructionAttributes attributes;
  attributes.gather = scatter.attributes().gather;
  attributes.gather.unique_indices = false;
  attributes.gather.slice_sizes = UpdateWindow(scatter);
  return emit.Add(Opcode::kGather, {source, scatter.operand(1)}, attributes);
}

// scatter-add -> the updates' adjoint: the result's adjoint gathered at each update's window,
// zero where the scatter skipped the update.
absl::StatusOr<Instruction*> ScatterUpdatesGradient(const RuleInput& input, GradientEmitter& emit) {
  const Instruction& scatter = input.forward;
  const ir::GatherDimensions& dims = scatter.attributes().gather;
  const ir::Shape& operand = scatter.operand(0)->shape();
  Instruction* indices = scatter.operand(1);
  const ir::Shape& updates = scatter.operand(2)->shape();
  const ir::GatherIndexSpaces spaces =
      ir::DescribeGather(dims, operand.rank(), indices->shape(), updates.rank());
  VKSPMD_ASSIGN_OR_RETURN(Instruction * gathered, GatherAtUpdates(scatter, input.adjoint, emit));
  const std::vector<int64_t> window = UpdateWindow(scatter);
  // In bounds: 0 <= start <= largest for every component.
  VKSPMD_ASSIGN_OR_RETURN(Instruction * zero,
                          PerComponent(emit, *indices, dims.index_vector_dim,
                                       std::vector<int64_t>(dims.start_index_map.size(), 0)));
  VKSPMD_ASSIGN_OR_RETURN(
      Instruction * largest,
      PerComponent(emit, *indices, dims.index_vector_dim, LargestStarts(dims, operand, window)));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * above,
                          emit.Compare(indices, zero, ir::ComparisonDirection::kGe));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * below,
                          emit.Compare(indices, largest, ir::ComparisonDirection::kLe));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * inside, emit.Binary(Opcode::kAnd, above, below));
  if (spaces.explicit_index_vector) {
    // All components in bounds: a minimum over the index vector of 0/1.
    VKSPMD_ASSIGN_OR_RETURN(Instruction * ones, emit.builder().Convert(inside, updates.dtype()));
    VKSPMD_ASSIGN_OR_RETURN(Instruction * count, emit.Sum(ones, {dims.index_vector_dim}));
    VKSPMD_ASSIGN_OR_RETURN(Instruction * all, emit.Full(spaces.index_vector_size, count->shape()));
    VKSPMD_ASSIGN_OR_RETURN(inside, emit.Compare(count, all, ir::ComparisonDirection::kEq));
  }
  VKSPMD_ASSIGN_OR_RETURN(Instruction * mask,
                          emit.Broadcast(inside, ir::Shape(ir::DType::kPred, updates.dimensions()),
                                         spaces.result_batch));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * zeros, emit.Zeros(updates));
  return emit.Select(mask, gathered, zeros);
}

// The (old, new) -> new combiner of `type` (an assignment, as x.at[i].set(v) traces it).
std::unique_ptr<ir::Computation> Assignment(ir::DType type) {
  ir::ComputationBuilder builder(
      absl::StrCat("gradient_assign_", std::string(ir::DTypeName(type))));
  builder.Parameter(0, ir::Shape::Scalar(type), "old");
  Instruction* replacement = builder.Parameter(1, ir::Shape::Scalar(type), "new");
  return builder.Build(replacement);
}

// Gradients of an assigning scatter (x.at[i].set(v)). Which update lands where, duplicates and
// skipped (out-of-bounds) updates included, is found by scattering each update's number the same
// way into -1s: the operand keeps its adjoint where nothing landed, and an update gets the
// adjoint at each element of its window that still holds its own number (the last of duplicate
// updates wins, as the scatter applies them in order; a skipped update holds none).
absl::StatusOr<OperandAdjoints> AssignmentGradient(const RuleInput& input, GradientEmitter& emit) {
  const Instruction& scatter = input.forward;
  const ir::GatherDimensions& dims = scatter.attributes().gather;
  const ir::Shape& operand = scatter.operand(0)->shape();
  const ir::Shape& indices = scatter.operand(1)->shape();
  const ir::Shape& updates = scatter.operand(2)->shape();
  const ir::GatherIndexSpaces spaces =
      ir::DescribeGather(dims, operand.rank(), indices, updates.rank());
  // Update numbers 0, 1, ... over the scatter's batch dims, broadcast over each window.
  std::vector<int64_t> batch;
  for (int64_t d : spaces.indices_batch) batch.push_back(indices.dimension(d));
  const int64_t positions =
      std::accumulate(batch.begin(), batch.end(), int64_t{1}, std::multiplies<>());
  ir::InstructionAttributes iota;
  VKSPMD_ASSIGN_OR_RETURN(Instruction * numbers, emit.Add(Opcode::kIota, {}, iota,
                                                          ir::Shape(ir::DType::kS32, {positions})));
  if (batch.size() != 1) {
    VKSPMD_ASSIGN_OR_RETURN(numbers, emit.builder().Reshape(numbers, batch));
  }
  VKSPMD_ASSIGN_OR_RETURN(numbers,
                          emit.Broadcast(numbers, ir::Shape(ir::DType::kS32, updates.dimensions()),
                                         spaces.result_batch));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * none,
                          emit.Full(-1, ir::Shape(ir::DType::kS32, operand.dimensions())));
  ir::InstructionAttributes attributes = scatter.attributes();
  attributes.to_apply =
      emit.SharedComputation("assign s32", [] { return Assignment(ir::DType::kS32); });
  VKSPMD_ASSIGN_OR_RETURN(
      Instruction * landed,
      emit.Add(Opcode::kScatter, {none, scatter.operand(1), numbers}, std::move(attributes)));
  OperandAdjoints result(3, nullptr);
  if (input.wanted[0]) {
    VKSPMD_ASSIGN_OR_RETURN(Instruction * kept,
                            emit.Compare(landed, none, ir::ComparisonDirection::kEq));
    VKSPMD_ASSIGN_OR_RETURN(Instruction * zeros, emit.Zeros(operand));
    VKSPMD_ASSIGN_OR_RETURN(result[0], emit.Select(kept, input.adjoint, zeros));
  }
  if (input.wanted[2]) {
    VKSPMD_ASSIGN_OR_RETURN(Instruction * found, GatherAtUpdates(scatter, landed, emit));
    VKSPMD_ASSIGN_OR_RETURN(Instruction * own,
                            emit.Compare(found, numbers, ir::ComparisonDirection::kEq));
    VKSPMD_ASSIGN_OR_RETURN(Instruction * gathered, GatherAtUpdates(scatter, input.adjoint, emit));
    VKSPMD_ASSIGN_OR_RETURN(Instruction * zeros, emit.Zeros(updates));
    VKSPMD_ASSIGN_OR_RETURN(result[2], emit.Select(own, gathered, zeros));
  }
  return result;
}

bool IsAssignment(const ir::Computation& combiner) {
  const Instruction* root = combiner.root();
  return root->opcode() == Opcode::kParameter && root->attributes().parameter_number == 1;
}

}  // namespace

absl::StatusOr<OperandAdjoints> IndexingGradient(const RuleInput& input, GradientEmitter& emit) {
  const Instruction& forward = input.forward;
  OperandAdjoints result(forward.operand_count(), nullptr);
  if (forward.opcode() == Opcode::kGather) {
    if (input.wanted[0]) {
      VKSPMD_ASSIGN_OR_RETURN(result[0], GatherOperandGradient(input, emit));
    }
    return result;
  }
  const ir::Computation& combiner = *forward.attributes().to_apply;
  if (IsAssignment(combiner)) return AssignmentGradient(input, emit);
  if (!IsAddition(combiner)) {
    return absl::UnimplementedError(
        "no gradient rule for scatter combining with %" + combiner.name() +
        " (an add scatter, as x.at[i].add(v) emits, and an assignment, as x.at[i].set(v) "
        "emits, are differentiated)");
  }
  if (input.wanted[0]) result[0] = input.adjoint;
  if (input.wanted[2]) {
    VKSPMD_ASSIGN_OR_RETURN(result[2], ScatterUpdatesGradient(input, emit));
  }
  return result;
}

}  // namespace vkspmd::autodiff
