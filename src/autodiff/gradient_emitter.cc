// Backward-pass op emission with shared constants and reducers.
#include "src/autodiff/gradient_emitter.h"

#include <numeric>

#include "src/base/status_macros.h"

namespace vkspmd::autodiff {

using ir::Instruction;
using ir::Opcode;
using ir::Shape;

absl::StatusOr<Instruction*> GradientEmitter::ScalarConstant(double value, ir::DType type) {
  auto key = std::make_pair(type, value);
  if (auto found = scalars_.find(key); found != scalars_.end()) return found->second;
  ir::Literal literal{Shape::Scalar(type)};
  literal.SetFromDouble(0, value);
  Instruction* constant = builder_.Constant(std::move(literal));
  scalars_[key] = constant;
  return constant;
}

absl::StatusOr<Instruction*> GradientEmitter::Full(double value, const Shape& shape) {
  auto key = std::make_tuple(shape.dtype(), value, shape.dimensions());
  if (auto found = fulls_.find(key); found != fulls_.end()) return found->second;
  VKSPMD_ASSIGN_OR_RETURN(Instruction * scalar, ScalarConstant(value, shape.dtype()));
  Instruction* full = scalar;
  if (shape.rank() > 0) {
    VKSPMD_ASSIGN_OR_RETURN(full, builder_.Broadcast(scalar, shape, {}));
  }
  fulls_[key] = full;
  return full;
}

absl::StatusOr<Instruction*> GradientEmitter::Unary(Opcode opcode, Instruction* operand) {
  return builder_.Unary(opcode, operand);
}

absl::StatusOr<Instruction*> GradientEmitter::Binary(Opcode opcode, Instruction* lhs,
                                                     Instruction* rhs) {
  return builder_.Binary(opcode, lhs, rhs);
}

absl::StatusOr<Instruction*> GradientEmitter::BinaryWithScalar(Opcode opcode, Instruction* lhs,
                                                               double value) {
  VKSPMD_ASSIGN_OR_RETURN(Instruction * rhs, Full(value, lhs->shape()));
  return builder_.Binary(opcode, lhs, rhs);
}

absl::StatusOr<Instruction*> GradientEmitter::Compare(Instruction* lhs, Instruction* rhs,
                                                      ir::ComparisonDirection direction) {
  return builder_.Compare(lhs, rhs, direction);
}

absl::StatusOr<Instruction*> GradientEmitter::Select(Instruction* predicate, Instruction* on_true,
                                                     Instruction* on_false) {
  return builder_.Add(Opcode::kSelect, {predicate, on_true, on_false});
}

absl::StatusOr<Instruction*> GradientEmitter::Add(Opcode opcode, std::vector<Instruction*> operands,
                                                  ir::InstructionAttributes attributes,
                                                  std::optional<Shape> declared) {
  return builder_.Add(opcode, std::move(operands), std::move(attributes), std::move(declared));
}

absl::StatusOr<ir::Computation*> GradientEmitter::AddReducer(ir::DType type) {
  if (auto found = add_reducers_.find(type); found != add_reducers_.end()) return found->second;
  std::string name = "gradient_add_" + std::string(ir::DTypeName(type));
  ir::Computation* reducer =
      module_.AddComputation(ir::MakeScalarReducer(name, Opcode::kAdd, type));
  add_reducers_[type] = reducer;
  return reducer;
}

ir::Computation* GradientEmitter::SharedComputation(
    const std::string& key, const std::function<std::unique_ptr<ir::Computation>()>& make) {
  if (auto found = shared_.find(key); found != shared_.end()) return found->second;
  std::unique_ptr<ir::Computation> computation = make();
  const std::string base = computation->name();
  for (int suffix = 1; module_.FindComputation(computation->name()) != nullptr; ++suffix) {
    computation->set_name(base + "." + std::to_string(suffix));
  }
  ir::Computation* added = module_.AddComputation(std::move(computation));
  shared_[key] = added;
  return added;
}

ir::InstructionAttributes RemapAttributes(
    const Instruction& instruction,
    const std::map<const ir::Computation*, ir::Computation*>& computations) {
  const auto remap = [&](ir::Computation* called) {
    auto found = computations.find(called);
    return found == computations.end() ? called : found->second;
  };
  ir::InstructionAttributes attributes = instruction.attributes();
  if (attributes.to_apply != nullptr) attributes.to_apply = remap(attributes.to_apply);
  for (ir::Computation*& called : attributes.called) called = remap(called);
  return attributes;
}

std::unique_ptr<ir::Computation> CloneComputation(
    const ir::Computation& source,
    const std::map<const ir::Computation*, ir::Computation*>& computations,
    std::unique_ptr<ir::Computation> into) {
  std::unique_ptr<ir::Computation> clone =
      into != nullptr ? std::move(into) : std::make_unique<ir::Computation>(source.name());
  std::map<const Instruction*, Instruction*> mapped;
  for (const std::unique_ptr<Instruction>& instruction : source.instructions()) {
    std::vector<Instruction*> operands;
    for (const Instruction* operand : instruction->operands())
      operands.push_back(mapped.at(operand));
    auto copy = std::make_unique<Instruction>(instruction->opcode(), instruction->shape(),
                                              std::move(operands));
    copy->attributes() = RemapAttributes(*instruction, computations);
    copy->set_name(instruction->name());
    copy->set_sharding(instruction->sharding());
    mapped[instruction.get()] = clone->AddInstruction(std::move(copy));
  }
  clone->set_root(mapped.at(source.root()));
  return clone;
}

absl::StatusOr<Instruction*> GradientEmitter::Sum(Instruction* operand,
                                                  std::vector<int64_t> dimensions) {
  if (dimensions.empty()) return operand;
  VKSPMD_ASSIGN_OR_RETURN(ir::Computation * reducer, AddReducer(operand->shape().dtype()));
  VKSPMD_ASSIGN_OR_RETURN(Instruction * zero, ScalarConstant(0, operand->shape().dtype()));
  return builder_.Reduce(operand, zero, std::move(dimensions), reducer);
}

absl::StatusOr<Instruction*> GradientEmitter::SumToShape(Instruction* gradient,
                                                         const Shape& shape) {
  if (gradient->shape().dimensions() == shape.dimensions()) return gradient;
  if (shape.rank() != 0) {
    return absl::InvalidArgumentError("gradient of shape " + gradient->shape().ToString() +
                                      " cannot be summed to " + shape.ToString());
  }
  std::vector<int64_t> all(gradient->shape().rank());
  std::iota(all.begin(), all.end(), 0);
  return Sum(gradient, all);
}

absl::StatusOr<Instruction*> GradientEmitter::Broadcast(Instruction* operand, const Shape& shape,
                                                        std::vector<int64_t> dimensions) {
  if (operand->shape().dimensions() == shape.dimensions()) return operand;
  return builder_.Broadcast(operand, Shape(operand->shape().dtype(), shape.dimensions()),
                            std::move(dimensions));
}

}  // namespace vkspmd::autodiff
