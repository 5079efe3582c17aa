// Builder API for computations: shape inference on every add, names "<op>.<n>".
// Instructions are appended, so the order is topological by construction.
#include "src/ir/builder.h"

#include "fmt/format.h"
#include "src/base/status_macros.h"

namespace vkspmd::ir {

std::string ComputationBuilder::UniqueName(std::string_view base) {
  return fmt::format("{}.{}", base, next_id_++);
}

absl::StatusOr<Instruction*> ComputationBuilder::Add(Opcode opcode,
                                                     std::vector<Instruction*> operands,
                                                     InstructionAttributes attributes,
                                                     std::optional<Shape> declared) {
  auto instruction =
      std::make_unique<Instruction>(opcode, declared.value_or(Shape()), std::move(operands));
  instruction->set_attributes(std::move(attributes));
  instruction->set_parent(computation_.get());
  absl::StatusOr<Shape> inferred = InferShape(*instruction, context_);
  if (!inferred.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", OpcodeName(opcode), std::string(inferred.status().message())));
  }
  if (declared.has_value() && *declared != *inferred) {
    return absl::InvalidArgumentError(fmt::format("{}: shape {} does not match the inferred {}",
                                                  OpcodeName(opcode), declared->ToString(),
                                                  inferred->ToString()));
  }
  instruction->set_shape(*inferred);
  instruction->set_name(UniqueName(OpcodeName(opcode)));
  return computation_->AddInstruction(std::move(instruction));
}

Instruction* ComputationBuilder::Parameter(int64_t number, const Shape& shape, std::string name) {
  auto instruction =
      std::make_unique<Instruction>(Opcode::kParameter, shape, std::vector<Instruction*>{});
  instruction->attributes().parameter_number = number;
  instruction->set_name(name.empty() ? UniqueName("parameter") : std::move(name));
  return computation_->AddInstruction(std::move(instruction));
}

Instruction* ComputationBuilder::Constant(Literal literal) {
  auto instruction = std::make_unique<Instruction>(Opcode::kConstant, literal.shape(),
                                                   std::vector<Instruction*>{});
  instruction->attributes().literal = std::move(literal);
  instruction->set_name(UniqueName("constant"));
  return computation_->AddInstruction(std::move(instruction));
}

absl::StatusOr<Instruction*> ComputationBuilder::Unary(Opcode opcode, Instruction* operand) {
  return Add(opcode, {operand});
}

absl::StatusOr<Instruction*> ComputationBuilder::Binary(Opcode opcode, Instruction* lhs,
                                                        Instruction* rhs) {
  return Add(opcode, {lhs, rhs});
}

absl::StatusOr<Instruction*> ComputationBuilder::Compare(Instruction* lhs, Instruction* rhs,
                                                         ComparisonDirection direction) {
  InstructionAttributes attributes;
  attributes.direction = direction;
  return Add(Opcode::kCompare, {lhs, rhs}, std::move(attributes));
}

absl::StatusOr<Instruction*> ComputationBuilder::Convert(Instruction* operand, DType type) {
  return Add(Opcode::kConvert, {operand}, {}, Shape(type, operand->shape().dimensions()));
}

absl::StatusOr<Instruction*> ComputationBuilder::Broadcast(Instruction* operand, const Shape& shape,
                                                           std::vector<int64_t> dimensions) {
  InstructionAttributes attributes;
  attributes.dimensions = std::move(dimensions);
  return Add(Opcode::kBroadcast, {operand}, std::move(attributes), shape);
}

absl::StatusOr<Instruction*> ComputationBuilder::Reshape(Instruction* operand,
                                                         std::vector<int64_t> dimensions) {
  return Add(Opcode::kReshape, {operand}, {},
             Shape(operand->shape().dtype(), std::move(dimensions)));
}

absl::StatusOr<Instruction*> ComputationBuilder::Transpose(Instruction* operand,
                                                           std::vector<int64_t> permutation) {
  InstructionAttributes attributes;
  attributes.dimensions = std::move(permutation);
  return Add(Opcode::kTranspose, {operand}, std::move(attributes));
}

absl::StatusOr<Instruction*> ComputationBuilder::Dot(Instruction* lhs, Instruction* rhs,
                                                     DotDimensions dimensions) {
  InstructionAttributes attributes;
  attributes.dot = std::move(dimensions);
  return Add(Opcode::kDot, {lhs, rhs}, std::move(attributes));
}

absl::StatusOr<Instruction*> ComputationBuilder::Reduce(Instruction* operand, Instruction* init,
                                                        std::vector<int64_t> dimensions,
                                                        Computation* reducer) {
  InstructionAttributes attributes;
  attributes.dimensions = std::move(dimensions);
  attributes.to_apply = reducer;
  return Add(Opcode::kReduce, {operand, init}, std::move(attributes));
}

absl::StatusOr<Instruction*> ComputationBuilder::Tuple(std::vector<Instruction*> elements) {
  return Add(Opcode::kTuple, std::move(elements));
}

absl::StatusOr<Instruction*> ComputationBuilder::GetTupleElement(Instruction* tuple,
                                                                 int64_t index) {
  InstructionAttributes attributes;
  attributes.tuple_index = index;
  return Add(Opcode::kGetTupleElement, {tuple}, std::move(attributes));
}

std::unique_ptr<Computation> ComputationBuilder::Build(Instruction* root) {
  computation_->set_root(root);
  return std::move(computation_);
}

std::unique_ptr<Computation> MakeScalarReducer(std::string name, Opcode opcode, DType type) {
  ComputationBuilder builder(std::move(name));
  Instruction* lhs = builder.Parameter(0, Shape::Scalar(type), "lhs");
  Instruction* rhs = builder.Parameter(1, Shape::Scalar(type), "rhs");
  absl::StatusOr<Instruction*> result = builder.Binary(opcode, lhs, rhs);
  return builder.Build(result.ok() ? *result : nullptr);
}

}  // namespace vkspmd::ir
