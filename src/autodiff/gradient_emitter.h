// Emits the ops of a backward pass into the gradient computation: arithmetic on arrays with
// scalar constants broadcast as needed, sums over dimensions, and caches so the same constant or
// broadcast is emitted once and shared by every rule that needs it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/builder.h"
#include "src/ir/module.h"

namespace vkspmd::autodiff {

class GradientEmitter {
 public:
  // `builder` and `module` are borrowed; reducers the backward pass needs are added to `module`.
  GradientEmitter(ir::ComputationBuilder& builder, ir::Module& module)
      : builder_(builder), module_(module) {}

  ir::ComputationBuilder& builder() { return builder_; }
  // The module's partition count: the devices a replicated value is on (manual regions).
  int64_t partition_count() const { return module_.partition_count(); }

  // `value` of `type` as an array of `shape`'s dimensions (one cached broadcast per shape).
  absl::StatusOr<ir::Instruction*> Full(double value, const ir::Shape& shape);
  absl::StatusOr<ir::Instruction*> Zeros(const ir::Shape& shape) { return Full(0, shape); }
  absl::StatusOr<ir::Instruction*> ScalarConstant(double value, ir::DType type);

  absl::StatusOr<ir::Instruction*> Unary(ir::Opcode opcode, ir::Instruction* operand);
  absl::StatusOr<ir::Instruction*> Binary(ir::Opcode opcode, ir::Instruction* lhs,
                                          ir::Instruction* rhs);
  // lhs OP value, with the scalar broadcast to lhs's shape.
  absl::StatusOr<ir::Instruction*> BinaryWithScalar(ir::Opcode opcode, ir::Instruction* lhs,
                                                    double value);
  absl::StatusOr<ir::Instruction*> Compare(ir::Instruction* lhs, ir::Instruction* rhs,
                                           ir::ComparisonDirection direction);
  absl::StatusOr<ir::Instruction*> Select(ir::Instruction* predicate, ir::Instruction* on_true,
                                          ir::Instruction* on_false);
  absl::StatusOr<ir::Instruction*> Add(ir::Opcode opcode, std::vector<ir::Instruction*> operands,
                                       ir::InstructionAttributes attributes,
                                       std::optional<ir::Shape> declared = std::nullopt);

  // Sum over `dimensions` (reduce with an add reducer of the operand's type).
  absl::StatusOr<ir::Instruction*> Sum(ir::Instruction* operand, std::vector<int64_t> dimensions);
  // Sums `gradient` down to `shape` when `shape` is a scalar broadcast into it (clamp's bounds);
  // returns it unchanged when the shapes already agree.
  absl::StatusOr<ir::Instruction*> SumToShape(ir::Instruction* gradient, const ir::Shape& shape);
  // Broadcast `operand` into `shape`, operand dimension i becoming dimension dimensions[i].
  absl::StatusOr<ir::Instruction*> Broadcast(ir::Instruction* operand, const ir::Shape& shape,
                                             std::vector<int64_t> dimensions);
  // The (a, b) -> a + b computation over scalars of `type` (one per type).
  absl::StatusOr<ir::Computation*> AddReducer(ir::DType type);
  // The computation `make` builds, added to the module once per `key` under a name no other
  // computation of the module has (comparators and combiners the rules need).
  ir::Computation* SharedComputation(const std::string& key,
                                     const std::function<std::unique_ptr<ir::Computation>()>& make);

 private:
  ir::ComputationBuilder& builder_;
  ir::Module& module_;
  std::map<std::pair<ir::DType, double>, ir::Instruction*> scalars_;
  std::map<std::tuple<ir::DType, double, std::vector<int64_t>>, ir::Instruction*> fulls_;
  std::map<ir::DType, ir::Computation*> add_reducers_;
  std::map<std::string, ir::Computation*> shared_;
};

// A copy of `source`; computations it calls are replaced by their images in `computations`
// (kept where absent, as for a computation already in the module the copy goes to). The copy is
// appended to `into` when given (which may already hold parameters of its own).
std::unique_ptr<ir::Computation> CloneComputation(
    const ir::Computation& source,
    const std::map<const ir::Computation*, ir::Computation*>& computations,
    std::unique_ptr<ir::Computation> into = nullptr);
// `instruction`'s attributes with its called computations replaced as CloneComputation does.
ir::InstructionAttributes RemapAttributes(
    const ir::Instruction& instruction,
    const std::map<const ir::Computation*, ir::Computation*>& computations);

}  // namespace vkspmd::autodiff
