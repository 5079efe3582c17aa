// Builder API for computations: adds instructions with inferred shapes and unique names, so the
// rest of the library constructs IR without writing text.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/module.h"
#include "src/ir/shape_inference.h"

namespace vkspmd::ir {

class ComputationBuilder {
 public:
  explicit ComputationBuilder(std::string name, ShapeInferenceContext context = {})
      : computation_(std::make_unique<Computation>(std::move(name))), context_(context) {}

  // Adds any op. `declared` is needed where the result is stated rather than derived (iota,
  // broadcast, reshape, convert, shard-shape custom-calls, rng-bit-generator); otherwise it is
  // inferred and, if given, must match.
  absl::StatusOr<Instruction*> Add(Opcode opcode, std::vector<Instruction*> operands,
                                   InstructionAttributes attributes = {},
                                   std::optional<Shape> declared = std::nullopt);

  Instruction* Parameter(int64_t number, const Shape& shape, std::string name = "");
  Instruction* Constant(Literal literal);
  absl::StatusOr<Instruction*> Unary(Opcode opcode, Instruction* operand);
  absl::StatusOr<Instruction*> Binary(Opcode opcode, Instruction* lhs, Instruction* rhs);
  absl::StatusOr<Instruction*> Compare(Instruction* lhs, Instruction* rhs,
                                       ComparisonDirection direction);
  absl::StatusOr<Instruction*> Convert(Instruction* operand, DType type);
  absl::StatusOr<Instruction*> Broadcast(Instruction* operand, const Shape& shape,
                                         std::vector<int64_t> dimensions);
  absl::StatusOr<Instruction*> Reshape(Instruction* operand, std::vector<int64_t> dimensions);
  absl::StatusOr<Instruction*> Transpose(Instruction* operand, std::vector<int64_t> permutation);
  absl::StatusOr<Instruction*> Dot(Instruction* lhs, Instruction* rhs, DotDimensions dimensions);
  absl::StatusOr<Instruction*> Reduce(Instruction* operand, Instruction* init,
                                      std::vector<int64_t> dimensions, Computation* reducer);
  absl::StatusOr<Instruction*> Tuple(std::vector<Instruction*> elements);
  absl::StatusOr<Instruction*> GetTupleElement(Instruction* tuple, int64_t index);

  // Finishes the computation with `root` (the last instruction when null).
  std::unique_ptr<Computation> Build(Instruction* root = nullptr);

 private:
  std::string UniqueName(std::string_view base);

  std::unique_ptr<Computation> computation_;
  ShapeInferenceContext context_;
  int64_t next_id_ = 0;
};

// A computation (a, b) -> a OP b over scalars of `type`, the usual to_apply of reductions.
std::unique_ptr<Computation> MakeScalarReducer(std::string name, Opcode opcode, DType type);

}  // namespace vkspmd::ir
