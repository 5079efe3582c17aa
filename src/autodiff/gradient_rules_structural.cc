// Gradient rules of the shape ops, dot and reduce. Shape ops move the adjoint back to where each
// element came from; dot contracts the adjoint with the other operand; reduce broadcasts it back
// (max/min route it to the arg-max positions, ties splitting it evenly as JAX does).
#include <algorithm>
#include <numeric>

#include "src/autodiff/gradient_rules.h"
#include "src/base/status_macros.h"

namespace vkspmd::autodiff {
namespace {

using ir::ComparisonDirection;
using ir::Instruction;
using ir::Opcode;

std::vector<int64_t> Complement(int64_t rank, const std::vector<int64_t>& dimensions) {
  std::vector<int64_t> rest;
  for (int64_t dimension = 0; dimension < rank; ++dimension) {
    if (std::find(dimensions.begin(), dimensions.end(), dimension) == dimensions.end()) {
      rest.push_back(dimension);
    }
  }
  return rest;
}

int64_t RankAmongSorted(const std::vector<int64_t>& values, int64_t value) {
  return std::count_if(values.begin(), values.end(), [&](int64_t other) { return other < value; });
}

absl::StatusOr<Instruction*> TransposeUnlessIdentity(GradientEmitter& emit, Instruction* operand,
                                                     std::vector<int64_t> permutation) {
  std::vector<int64_t> identity(permutation.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (permutation == identity) return operand;
  return emit.builder().Transpose(operand, std::move(permutation));
}

// The adjoint g transposed by `permutation`. Where g is a dot the backward pass just emitted (a
// weight's gradient reaching the weight through the transpose of x @ W^T) and the permutation
// swaps its lhs-free and rhs-free dims, the dot of the operands in the other order is that
// transpose: no transpose is emitted, and the optimizer's update can read the gradient at its own
// index (one kernel with the dot on devices, as a dot epilogue).
absl::StatusOr<Instruction*> TransposeAdjoint(GradientEmitter& emit, Instruction* g,
                                              std::vector<int64_t> permutation) {
  const Instruction& dot = *g;  // Read through the const accessors (no attribute storage made).
  if (dot.opcode() == Opcode::kDot && !dot.sharding().has_value()) {
    const ir::DotDimensions& dims = dot.attributes().dot;
    const int64_t batch = static_cast<int64_t>(dims.lhs_batch.size());
    const int64_t lhs_free =
        g->operand(0)->shape().rank() - batch - static_cast<int64_t>(dims.lhs_contracting.size());
    const int64_t rhs_free = g->shape().rank() - batch - lhs_free;
    std::vector<int64_t> swapped(g->shape().rank());
    std::iota(swapped.begin(), swapped.begin() + batch, 0);
    std::iota(swapped.begin() + batch, swapped.begin() + batch + rhs_free, batch + lhs_free);
    std::iota(swapped.begin() + batch + rhs_free, swapped.end(), batch);
    if (lhs_free > 0 && rhs_free > 0 && permutation == swapped) {
      ir::InstructionAttributes attributes = dot.attributes();
      attributes.dot = {dims.rhs_batch, dims.lhs_batch, dims.rhs_contracting, dims.lhs_contracting};
      std::vector<int64_t> dimensions;
      for (int64_t from : permutation) dimensions.push_back(g->shape().dimensions()[from]);
      return emit.Add(Opcode::kDot, {g->operand(1), g->operand(0)}, std::move(attributes),
                      ir::Shape(g->shape().dtype(), std::move(dimensions)));
    }
  }
  return TransposeUnlessIdentity(emit, g, std::move(permutation));
}

absl::StatusOr<Instruction*> Slice(GradientEmitter& emit, Instruction* operand,
                                   std::vector<ir::SliceDimension> slice) {
  ir::InstructionAttributes attributes;
  attributes.slice = std::move(slice);
  return emit.Add(Opcode::kSlice, {operand}, std::move(attributes));
}

absl::StatusOr<Instruction*> Pad(GradientEmitter& emit, Instruction* operand,
                                 std::vector<ir::PaddingDimension> padding) {
  VKSPMD_ASSIGN_OR_RETURN(Instruction * zero, emit.ScalarConstant(0, operand->shape().dtype()));
  ir::InstructionAttributes attributes;
  attributes.padding = std::move(padding);
  return emit.Add(Opcode::kPad, {operand, zero}, std::move(attributes));
}

bool HasZeroSizedDimension(const ir::Shape& shape) {
  return std::any_of(shape.dimensions().begin(), shape.dimensions().end(),
                     [](int64_t size) { return size == 0; });
}

// slice: scatter the adjoint back with a pad (interior padding undoes the stride).
absl::StatusOr<Instruction*> SliceGradient(const RuleInput& input, GradientEmitter& emit) {
  const ir::Shape& operand = input.forward.operand(0)->shape();
  if (HasZeroSizedDimension(input.forward.shape())) return emit.Zeros(operand);
  std::vector<ir::PaddingDimension> padding;
  for (int64_t dimension = 0; dimension < operand.rank(); ++dimension) {
    const ir::SliceDimension& slice = input.forward.attributes().slice[dimension];
    int64_t count = input.forward.shape().dimension(dimension);
    int64_t last = slice.start + (count - 1) * slice.stride;
    padding.push_back({slice.start, operand.dimension(dimension) - last - 1, slice.stride - 1});
  }
  return Pad(emit, input.adjoint, std::move(padding));
}

// pad: the operand's elements are a strided window of the adjoint, after restoring what negative
// padding cropped; the padding value receives everything else.
absl::StatusOr<OperandAdjoints> PadGradient(const RuleInput& input, GradientEmitter& emit) {
  const ir::Shape& operand = input.forward.operand(0)->shape();
  const auto& config = input.forward.attributes().padding;
  Instruction* operand_adjoint = nullptr;
  if (HasZeroSizedDimension(operand)) {
    VKSPMD_ASSIGN_OR_RETURN(operand_adjoint, emit.Zeros(operand));
  } else {
    std::vector<ir::PaddingDimension> restore;
    std::vector<ir::SliceDimension> window;
    for (int64_t dimension = 0; dimension < operand.rank(); ++dimension) {
      const ir::PaddingDimension& pad = config[dimension];
      restore.push_back({std::max<int64_t>(-pad.low, 0), std::max<int64_t>(-pad.high, 0), 0});
      int64_t start = std::max<int64_t>(pad.low, 0);
      int64_t stride = pad.interior + 1;
      window.push_back({start, start + (operand.dimension(dimension) - 1) * stride + 1, stride});
    }
    Instruction* restored = input.adjoint;
    bool cropped = std::any_of(restore.begin(), restore.end(),
                               [](const ir::PaddingDimension& pad) { return pad.low || pad.high; });
    if (cropped) {
      VKSPMD_ASSIGN_OR_RETURN(restored, Pad(emit, input.adjoint, restore));
    }
    VKSPMD_ASSIGN_OR_RETURN(operand_adjoint, Slice(emit, restored, window));
  }
  Instruction* value_adjoint = nullptr;
  if (input.wanted[1]) {
    std::vector<int64_t> all(input.adjoint->shape().rank());
    std::iota(all.begin(), all.end(), 0);
    VKSPMD_ASSIGN_OR_RETURN(Instruction * total, emit.Sum(input.adjoint, all));
    std::vector<int64_t> operand_all(operand.rank());
    std::iota(operand_all.begin(), operand_all.end(), 0);
    VKSPMD_ASSIGN_OR_RETURN(Instruction * inside, emit.Sum(operand_adjoint, operand_all));
    VKSPMD_ASSIGN_OR_RETURN(value_adjoint, emit.Binary(Opcode::kSubtract, total, inside));
  }
  return OperandAdjoints{operand_adjoint, value_adjoint};
}

absl::StatusOr<OperandAdjoints> ConcatenateGradient(const RuleInput& input, GradientEmitter& emit) {
  const int64_t axis = input.forward.attributes().dimensions.at(0);
  OperandAdjoints result;
  int64_t offset = 0;
  for (int64_t index = 0; index < input.forward.operand_count(); ++index) {
    const ir::Shape& operand = input.forward.operand(index)->shape();
    if (input.wanted[index]) {
      std::vector<ir::SliceDimension> window;
      for (int64_t dimension = 0; dimension < operand.rank(); ++dimension) {
        int64_t start = dimension == axis ? offset : 0;
        window.push_back({start, start + operand.dimension(dimension), 1});
      }
      VKSPMD_ASSIGN_OR_RETURN(Instruction * piece, Slice(emit, input.adjoint, window));
      result.push_back(piece);
    } else {
      result.push_back(nullptr);
    }
    offset += operand.dimension(axis);
  }
  return result;
}

absl::StatusOr<Instruction*> BroadcastGradient(const RuleInput& input, GradientEmitter& emit) {
  const std::vector<int64_t>& mapped = input.forward.attributes().dimensions;
  VKSPMD_ASSIGN_OR_RETURN(
      Instruction * summed,
      emit.Sum(input.adjoint, Complement(input.forward.shape().rank(), mapped)));
  std::vector<int64_t> sorted = mapped;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> permutation;
  for (int64_t dimension : mapped) permutation.push_back(RankAmongSorted(sorted, dimension));
  return TransposeUnlessIdentity(emit, summed, permutation);
}

absl::StatusOr<Instruction*> DotOperandGradient(const RuleInput& input, GradientEmitter& emit,
                                                bool for_lhs) {
  const ir::DotDimensions& dims = input.forward.attributes().dot;
  Instruction* self = input.forward.operand(for_lhs ? 0 : 1);
  Instruction* other = input.forward.operand(for_lhs ? 1 : 0);
  const std::vector<int64_t>& self_batch = for_lhs ? dims.lhs_batch : dims.rhs_batch;
  const std::vector<int64_t>& self_contracting =
      for_lhs ? dims.lhs_contracting : dims.rhs_contracting;
  const std::vector<int64_t>& other_batch = for_lhs ? dims.rhs_batch : dims.lhs_batch;
  const std::vector<int64_t>& other_contracting =
      for_lhs ? dims.rhs_contracting : dims.lhs_contracting;
  std::vector<int64_t> self_used = self_batch;
  self_used.insert(self_used.end(), self_contracting.begin(), self_contracting.end());
  std::vector<int64_t> other_used = other_batch;
  other_used.insert(other_used.end(), other_contracting.begin(), other_contracting.end());
  const std::vector<int64_t> self_free = Complement(self->shape().rank(), self_used);
  const std::vector<int64_t> other_free = Complement(other->shape().rank(), other_used);
  const int64_t batch = static_cast<int64_t>(self_batch.size());
  const int64_t lhs_free_count =
      static_cast<int64_t>(Complement(input.forward.operand(0)->shape().rank(),
                                      [&] {
                                        std::vector<int64_t> used = dims.lhs_batch;
                                        used.insert(used.end(), dims.lhs_contracting.begin(),
                                                    dims.lhs_contracting.end());
                                        return used;
                                      }())
                               .size());

  // The adjoint's dims: [batch..., lhs free..., rhs free...]; contract its `other` free part
  // with `other`. Either operand order works; the one whose result already has `self`'s layout
  // saves a transpose (dot(x, g) rather than dot(g, x) for the weights of x @ w).
  ir::DotDimensions adjoint_first;
  ir::DotDimensions other_first;
  const int64_t other_free_offset = for_lhs ? batch + lhs_free_count : batch;
  for (int64_t i = 0; i < batch; ++i) {
    adjoint_first.lhs_batch.push_back(i);
    adjoint_first.rhs_batch.push_back(other_batch[i]);
    other_first.lhs_batch.push_back(other_batch[i]);
    other_first.rhs_batch.push_back(i);
  }
  for (size_t j = 0; j < other_free.size(); ++j) {
    adjoint_first.lhs_contracting.push_back(other_free_offset + static_cast<int64_t>(j));
    adjoint_first.rhs_contracting.push_back(other_free[j]);
    other_first.lhs_contracting.push_back(other_free[j]);
    other_first.rhs_contracting.push_back(other_free_offset + static_cast<int64_t>(j));
  }
  // Where each of self's dims lands in either product. Adjoint first: [batch..., self free...,
  // other's contracting dims ascending...]; other first: [batch..., other's contracting dims
  // ascending..., self free...].
  std::vector<int64_t> sorted_other_contracting = other_contracting;
  std::sort(sorted_other_contracting.begin(), sorted_other_contracting.end());
  const int64_t free_count = static_cast<int64_t>(self_free.size());
  const int64_t contracting_count = static_cast<int64_t>(self_contracting.size());
  std::vector<int64_t> adjoint_first_permutation(self->shape().rank());
  std::vector<int64_t> other_first_permutation(self->shape().rank());
  for (int64_t i = 0; i < batch; ++i) {
    adjoint_first_permutation[self_batch[i]] = i;
    other_first_permutation[self_batch[i]] = i;
  }
  for (int64_t j = 0; j < free_count; ++j) {
    adjoint_first_permutation[self_free[j]] = batch + j;
    other_first_permutation[self_free[j]] = batch + contracting_count + j;
  }
  for (int64_t k = 0; k < contracting_count; ++k) {
    int64_t rank = RankAmongSorted(sorted_other_contracting, other_contracting[k]);
    adjoint_first_permutation[self_contracting[k]] = batch + free_count + rank;
    other_first_permutation[self_contracting[k]] = batch + rank;
  }
  std::vector<int64_t> identity(self->shape().rank());
  std::iota(identity.begin(), identity.end(), 0);
  if (other_first_permutation == identity && adjoint_first_permutation != identity) {
    return emit.builder().Dot(other, input.adjoint, other_first);
  }
  VKSPMD_ASSIGN_OR_RETURN(Instruction * product,
                          emit.builder().Dot(input.adjoint, other, adjoint_first));
  std::vector<int64_t> permutation = adjoint_first_permutation;
  return TransposeUnlessIdentity(emit, product, permutation);
}

// The binary op a reducer applies to its two parameters, e.g. add for {p0, p1} -> add(p0, p1).
absl::StatusOr<Opcode> ScalarReducerOpcode(const ir::Computation& reducer) {
  const Instruction* root = reducer.root();
  if (reducer.parameter_count() == 2 && root->operand_count() == 2 &&
      ir::IsElementwiseBinary(root->opcode()) && root->operand(0)->opcode() == Opcode::kParameter &&
      root->operand(1)->opcode() == Opcode::kParameter && root->operand(0) != root->operand(1)) {
    return root->opcode();
  }
  return absl::UnimplementedError("no gradient rule for a reduce whose reducer %" + reducer.name() +
                                  " is not a single binary op of its two parameters");
}

absl::StatusOr<OperandAdjoints> ReduceGradient(const RuleInput& input, GradientEmitter& emit) {
  if (input.forward.operand_count() != 2) {
    return absl::UnimplementedError("no gradient rule for a variadic reduce");
  }
  Instruction* x = input.forward.operand(0);
  const std::vector<int64_t>& reduced = input.forward.attributes().dimensions;
  const std::vector<int64_t> kept = Complement(x->shape().rank(), reduced);
  absl::StatusOr<Opcode> reducer = ScalarReducerOpcode(*input.forward.attributes().to_apply);
  if (!reducer.ok()) return reducer.status();
  OperandAdjoints result(2, nullptr);
  if (*reducer == Opcode::kAdd) {
    if (input.wanted[0]) {
      VKSPMD_ASSIGN_OR_RETURN(result[0], emit.Broadcast(input.adjoint, x->shape(), kept));
    }
    if (input.wanted[1]) {
      std::vector<int64_t> all(input.adjoint->shape().rank());
      std::iota(all.begin(), all.end(), 0);
      VKSPMD_ASSIGN_OR_RETURN(result[1], emit.Sum(input.adjoint, all));
    }
    return result;
  }
  if (*reducer != Opcode::kMaximum && *reducer != Opcode::kMinimum) {
    return absl::UnimplementedError("no gradient rule for a reduce with " +
                                    std::string(ir::OpcodeName(*reducer)));
  }
  if (input.wanted[1]) {
    return absl::UnimplementedError(
        "no gradient rule for the init value of a max/min reduce (use a constant init)");
  }
  // Every position equal to the result shares the adjoint evenly.
  Instruction* y = const_cast<Instruction*>(&input.forward);
  VKSPMD_ASSIGN_OR_RETURN(Instruction * y_full, emit.Broadcast(y, x->shape(), kept));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * at_extremum,
                          emit.Compare(x, y_full, ComparisonDirection::kEq));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * ones, emit.Full(1, x->shape()));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * zeros, emit.Zeros(x->shape()));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * indicator, emit.Select(at_extremum, ones, zeros));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * tied, emit.Sum(indicator, reduced));
  // No position equals the result when a non-identity init won: share among at least one, so
  // the gradient there is 0 rather than 0/0.
  VKSPMD_ASSIGN_OR_RETURN(Instruction * one, emit.Full(1, tied->shape()));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * counts, emit.Binary(Opcode::kMaximum, tied, one));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * share, emit.Binary(Opcode::kDivide, input.adjoint, counts));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * share_full, emit.Broadcast(share, x->shape(), kept));
  VKSPMD_ASSIGN_OR_RETURN(result[0], emit.Binary(Opcode::kMultiply, share_full, indicator));
  return result;
}

}  // namespace

absl::StatusOr<OperandAdjoints> StructuralGradient(const RuleInput& input, GradientEmitter& emit) {
  const Instruction& forward = input.forward;
  Instruction* g = input.adjoint;
  OperandAdjoints result(forward.operand_count(), nullptr);
  switch (forward.opcode()) {
    case Opcode::kBroadcast: {
      VKSPMD_ASSIGN_OR_RETURN(result[0], BroadcastGradient(input, emit));
      return result;
    }
    case Opcode::kReshape: {
      VKSPMD_ASSIGN_OR_RETURN(result[0],
                              emit.builder().Reshape(g, forward.operand(0)->shape().dimensions()));
      return result;
    }
    case Opcode::kTranspose: {
      const std::vector<int64_t>& permutation = forward.attributes().dimensions;
      std::vector<int64_t> inverse(permutation.size());
      for (size_t i = 0; i < permutation.size(); ++i)
        inverse[permutation[i]] = static_cast<int64_t>(i);
      VKSPMD_ASSIGN_OR_RETURN(result[0], TransposeAdjoint(emit, g, inverse));
      return result;
    }
    case Opcode::kReverse: {
      ir::InstructionAttributes attributes;
      attributes.dimensions = forward.attributes().dimensions;
      VKSPMD_ASSIGN_OR_RETURN(result[0], emit.Add(Opcode::kReverse, {g}, attributes));
      return result;
    }
    case Opcode::kSlice: {
      VKSPMD_ASSIGN_OR_RETURN(result[0], SliceGradient(input, emit));
      return result;
    }
    case Opcode::kPad:
      return PadGradient(input, emit);
    case Opcode::kConcatenate:
      return ConcatenateGradient(input, emit);
    case Opcode::kDynamicSlice: {
      VKSPMD_ASSIGN_OR_RETURN(Instruction * zeros, emit.Zeros(forward.operand(0)->shape()));
      std::vector<Instruction*> operands = {zeros, g};
      for (int64_t i = 1; i < forward.operand_count(); ++i) operands.push_back(forward.operand(i));
      VKSPMD_ASSIGN_OR_RETURN(result[0], emit.Add(Opcode::kDynamicUpdateSlice, operands, {}));
      return result;
    }
    case Opcode::kDynamicUpdateSlice: {
      Instruction* update = forward.operand(1);
      std::vector<Instruction*> indices(forward.operands().begin() + 2, forward.operands().end());
      if (input.wanted[0]) {
        VKSPMD_ASSIGN_OR_RETURN(Instruction * zeros, emit.Zeros(update->shape()));
        std::vector<Instruction*> operands = {g, zeros};
        operands.insert(operands.end(), indices.begin(), indices.end());
        VKSPMD_ASSIGN_OR_RETURN(result[0], emit.Add(Opcode::kDynamicUpdateSlice, operands, {}));
      }
      if (input.wanted[1]) {
        std::vector<Instruction*> operands = {g};
        operands.insert(operands.end(), indices.begin(), indices.end());
        ir::InstructionAttributes attributes;
        attributes.dynamic_slice_sizes = update->shape().dimensions();
        VKSPMD_ASSIGN_OR_RETURN(result[1], emit.Add(Opcode::kDynamicSlice, operands, attributes));
      }
      return result;
    }
    case Opcode::kDot: {
      if (input.wanted[0]) {
        VKSPMD_ASSIGN_OR_RETURN(result[0], DotOperandGradient(input, emit, true));
      }
      if (input.wanted[1]) {
        VKSPMD_ASSIGN_OR_RETURN(result[1], DotOperandGradient(input, emit, false));
      }
      return result;
    }
    case Opcode::kReduce:
      return ReduceGradient(input, emit);
    default:
      return absl::UnimplementedError("no gradient rule for " +
                                      std::string(ir::OpcodeName(forward.opcode())));
  }
}

// A Sharding custom-call (a sharding constraint, as mark_sharding traces it) is the identity: its
// adjoint is the result's adjoint under the same constraint, as XLA differentiates
// with_sharding_constraint, so a sharded parameter's gradient comes out sharded like it.
static absl::StatusOr<OperandAdjoints> CustomCallGradient(const RuleInput& input,
                                                          GradientEmitter& emit) {
  const std::string& target = input.forward.attributes().custom_call_target;
  if (target != "Sharding") return ManualBoundaryGradient(input, emit);
  if (!input.wanted[0]) return OperandAdjoints{nullptr};
  ir::InstructionAttributes attributes;
  attributes.custom_call_target = "Sharding";
  VKSPMD_ASSIGN_OR_RETURN(Instruction * constrained, emit.Add(Opcode::kCustomCall, {input.adjoint},
                                                              attributes, input.forward.shape()));
  constrained->set_sharding(input.forward.sharding());
  return OperandAdjoints{constrained};
}

bool HasZeroGradient(Opcode opcode) {
  switch (opcode) {
    case Opcode::kSign:
    case Opcode::kFloor:
    case Opcode::kCeil:
    case Opcode::kRoundNearestEven:
    case Opcode::kCompare:
    case Opcode::kIsFinite:
    case Opcode::kNot:
    case Opcode::kIota:
    case Opcode::kConstant:
    case Opcode::kRngBitGenerator:
    case Opcode::kPartitionId:
    case Opcode::kReplicaId:
      return true;
    default:
      return false;
  }
}

bool HasGradientRule(Opcode opcode) {
  if (HasZeroGradient(opcode)) return true;
  switch (opcode) {
    case Opcode::kCustomCall:
    case Opcode::kAnd:
    case Opcode::kOr:
    case Opcode::kXor:
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightLogical:
    case Opcode::kShiftRightArithmetic:
      return false;
    default:
      return true;
  }
}

absl::StatusOr<OperandAdjoints> ApplyGradientRule(const RuleInput& input, GradientEmitter& emit) {
  Opcode opcode = input.forward.opcode();
  if (opcode == Opcode::kCustomCall) return CustomCallGradient(input, emit);
  if (!HasGradientRule(opcode)) {
    return absl::UnimplementedError("no gradient rule for " + std::string(ir::OpcodeName(opcode)));
  }
  if (HasZeroGradient(opcode)) return OperandAdjoints(input.forward.operand_count(), nullptr);
  if (opcode == Opcode::kAllReduce || opcode == Opcode::kAllGather ||
      opcode == Opcode::kReduceScatter || opcode == Opcode::kAllToAll ||
      opcode == Opcode::kCollectivePermute) {
    return CollectiveGradient(input, emit);
  }
  if (ir::IsElementwiseUnary(opcode) || ir::IsElementwiseBinary(opcode) ||
      opcode == Opcode::kSelect || opcode == Opcode::kClamp || opcode == Opcode::kConvert ||
      opcode == Opcode::kCopy || opcode == Opcode::kReducePrecision) {
    return ElementwiseGradient(input, emit);
  }
  if (opcode == Opcode::kGather || opcode == Opcode::kScatter) return IndexingGradient(input, emit);
  if (opcode == Opcode::kSort) return SortGradient(input, emit);
  return StructuralGradient(input, emit);
}

}  // namespace vkspmd::autodiff
