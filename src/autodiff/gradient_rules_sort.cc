// Gradient rule of sort: a sort permutes every operand the same way along one dim, so an
// operand's adjoint is its output's adjoint permuted back. The permutation is an iota sorted along.
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "src/autodiff/gradient_rules.h"
#include "src/base/status_macros.h"
#include "src/ir/module.h"

namespace vkspmd::autodiff {
namespace {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;
using ir::Shape;

// Whether `operand` numbers the positions 0, 1, ... along `dimension` (argsort's and top_k's
// traces sort such an iota alongside the keys).
bool IsPositions(const Instruction& operand, int64_t dimension) {
  const ir::DType type = operand.shape().dtype();
  return operand.opcode() == Opcode::kIota && operand.attributes().iota_dimension == dimension &&
         (type == ir::DType::kS32 || type == ir::DType::kS64);
}

// The sort's comparator with two more parameters (the positions), which it ignores.
std::unique_ptr<Computation> ComparatorWithPositions(const Computation& comparator) {
  auto extended = std::make_unique<Computation>(comparator.name() + "_with_positions");
  const int64_t count = comparator.parameter_count();
  const char* const names[] = {"position_lhs", "position_rhs"};
  std::set<std::string> taken;
  for (const auto& instruction : comparator.instructions()) taken.insert(instruction->name());
  for (int64_t k = 0; k < 2; ++k) {
    auto parameter = std::make_unique<Instruction>(
        Opcode::kParameter, Shape::Scalar(ir::DType::kS32), std::vector<Instruction*>{});
    parameter->attributes().parameter_number = count + k;
    std::string name = names[k];
    while (taken.count(name)) name += "_";  // The comparator may use the name itself.
    parameter->set_name(name);
    extended->AddInstruction(std::move(parameter));
  }
  return CloneComputation(comparator, {}, std::move(extended));
}

// positions[..., j, ...] = the index along the sort dim that output element j came from.
absl::StatusOr<Instruction*> SortedPositions(const RuleInput& input, GradientEmitter& emit) {
  const Instruction& sort = input.forward;
  const int64_t dimension = sort.attributes().dimensions[0];
  Instruction* sorted = const_cast<Instruction*>(&sort);
  for (int64_t k = 0; k < sort.operand_count(); ++k) {
    if (sort.shape().IsTuple() && IsPositions(*sort.operand(k), dimension)) {
      return emit.builder().GetTupleElement(sorted, k);
    }
  }
  // No iota among the operands: sort one alongside the operands again (the sort is stable, so
  // ties fall as they fell in the forward sort).
  const Computation& comparator = *sort.attributes().to_apply;
  Computation* extended =
      emit.SharedComputation(absl::StrCat("sort positions for %", comparator.name()),
                             [&comparator] { return ComparatorWithPositions(comparator); });
  ir::InstructionAttributes iota_attributes;
  iota_attributes.iota_dimension = dimension;
  VKSPMD_ASSIGN_OR_RETURN(Instruction * iota,
                          emit.Add(Opcode::kIota, {}, iota_attributes,
                                   Shape(ir::DType::kS32, sort.operand(0)->shape().dimensions())));
  std::vector<Instruction*> operands = sort.operands();
  operands.push_back(iota);
  ir::InstructionAttributes attributes = sort.attributes();
  attributes.to_apply = extended;
  attributes.is_stable = true;
  VKSPMD_ASSIGN_OR_RETURN(Instruction * with_positions,
                          emit.Add(Opcode::kSort, std::move(operands), std::move(attributes)));
  return emit.builder().GetTupleElement(with_positions, sort.operand_count());
}

// (position_lhs, position_rhs, then a pair per value of `types`) -> position_lhs < position_rhs.
std::unique_ptr<Computation> ByPosition(ir::DType position_type,
                                        const std::vector<ir::DType>& types) {
  ir::ComputationBuilder builder("gradient_unsort");
  Instruction* lhs = builder.Parameter(0, Shape::Scalar(position_type), "position_lhs");
  Instruction* rhs = builder.Parameter(1, Shape::Scalar(position_type), "position_rhs");
  for (size_t k = 0; k < types.size(); ++k) {
    builder.Parameter(2 + 2 * k, Shape::Scalar(types[k]), absl::StrCat("lhs_", k));
    builder.Parameter(3 + 2 * k, Shape::Scalar(types[k]), absl::StrCat("rhs_", k));
  }
  // Two scalars of one integer type: the compare cannot fail shape inference.
  absl::StatusOr<Instruction*> less = builder.Compare(lhs, rhs, ir::ComparisonDirection::kLt);
  return builder.Build(less.value());
}

}  // namespace

// Sorting the adjoints by the positions their elements came from undoes the permutation, for
// every operand in one sort; a row stays a row, so this is no costlier than the forward sort
// (and needs no scatter, whose device kernel bounds the number of positions).
absl::StatusOr<OperandAdjoints> SortGradient(const RuleInput& input, GradientEmitter& emit) {
  const Instruction& sort = input.forward;
  const int64_t count = sort.operand_count();
  OperandAdjoints result(count, nullptr);
  std::vector<int64_t> differentiated;  // Operands that get an adjoint.
  std::vector<Instruction*> adjoints;
  for (int64_t k = 0; k < count; ++k) {
    Instruction* adjoint = sort.shape().IsTuple() ? input.element_adjoints[k] : input.adjoint;
    if (input.wanted[k] && adjoint != nullptr) {
      differentiated.push_back(k);
      adjoints.push_back(adjoint);
    }
  }
  if (adjoints.empty()) return result;
  VKSPMD_ASSIGN_OR_RETURN(Instruction * positions, SortedPositions(input, emit));
  std::vector<ir::DType> types;
  for (const Instruction* adjoint : adjoints) types.push_back(adjoint->shape().dtype());
  const ir::DType position_type = positions->shape().dtype();
  std::string key = absl::StrCat("unsort ", std::string(ir::DTypeName(position_type)));
  for (ir::DType type : types) absl::StrAppend(&key, " ", std::string(ir::DTypeName(type)));
  Computation* by_position =
      emit.SharedComputation(key, [&] { return ByPosition(position_type, types); });
  std::vector<Instruction*> operands = {positions};
  operands.insert(operands.end(), adjoints.begin(), adjoints.end());
  ir::InstructionAttributes attributes;
  attributes.dimensions = sort.attributes().dimensions;
  attributes.is_stable = true;
  attributes.to_apply = by_position;
  VKSPMD_ASSIGN_OR_RETURN(Instruction * unsorted,
                          emit.Add(Opcode::kSort, std::move(operands), std::move(attributes)));
  for (size_t j = 0; j < differentiated.size(); ++j) {
    VKSPMD_ASSIGN_OR_RETURN(result[differentiated[j]],
                            emit.builder().GetTupleElement(unsorted, 1 + j));
  }
  return result;
}

}  // namespace vkspmd::autodiff
