// Module verifier: structure (entry, roots, parameters, operands defined in the same
// computation), then per-instruction shape inference, shardings and aliasing.
#include "src/ir/verifier.h"

#include "absl/container/flat_hash_set.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/ir/shape_inference.h"

namespace vkspmd::ir {
namespace {

constexpr int64_t kMaxDevices = 1 << 16;

absl::Status InstructionError(const Instruction& instruction, std::string_view message) {
  return absl::InvalidArgumentError(fmt::format("{}: {}", instruction.Describe(), message));
}

absl::Status VerifyInstruction(const Instruction& instruction,
                               const absl::flat_hash_set<const Instruction*>& defined,
                               const ShapeInferenceContext& context) {
  for (const Instruction* operand : instruction.operands()) {
    if (operand == nullptr || !defined.contains(operand)) {
      return InstructionError(instruction, "operand is not defined before it in the computation");
    }
  }
  for (const Computation* callee : instruction.attributes().CalledComputations()) {
    if (callee == instruction.parent()) {
      return InstructionError(instruction,
                              fmt::format("calls its own computation %{}", callee->name()));
    }
  }
  absl::StatusOr<Shape> inferred = InferShape(instruction, context);
  if (!inferred.ok())
    return InstructionError(instruction, std::string(inferred.status().message()));
  if (*inferred != instruction.shape()) {
    return InstructionError(instruction,
                            fmt::format("shape {} does not match the inferred shape {}",
                                        instruction.shape().ToString(), inferred->ToString()));
  }
  if (instruction.sharding().has_value()) {
    absl::Status status = instruction.sharding()->ValidateForShape(instruction.shape());
    // A module that declares no num_partitions (1) leaves the device ids to the mesh it is
    // partitioned over.
    if (status.ok() && context.partition_count > 1) {
      status = instruction.sharding()->ValidateDevices(context.partition_count);
    }
    if (!status.ok()) return InstructionError(instruction, std::string(status.message()));
  }
  return absl::OkStatus();
}

absl::Status VerifyComputation(const Computation& computation,
                               const absl::flat_hash_set<const Computation*>& earlier,
                               const ShapeInferenceContext& context) {
  if (computation.root() == nullptr) {
    return absl::InvalidArgumentError(fmt::format("computation %{} is empty", computation.name()));
  }
  for (int64_t i = 0; i < computation.parameter_count(); ++i) {
    if (computation.parameter(i) == nullptr) {
      return absl::InvalidArgumentError(
          fmt::format("computation %{} has no parameter({})", computation.name(), i));
    }
  }
  absl::flat_hash_set<const Instruction*> defined;
  for (const auto& instruction : computation.instructions()) {
    for (const Computation* callee : instruction->attributes().CalledComputations()) {
      if (callee != nullptr && callee != &computation && !earlier.contains(callee)) {
        return InstructionError(
            *instruction, fmt::format("%{} must be a computation defined earlier", callee->name()));
      }
    }
    if (instruction->parent() != &computation) {
      return InstructionError(*instruction, "instruction belongs to another computation");
    }
    VKSPMD_RETURN_IF_ERROR(VerifyInstruction(*instruction, defined, context));
    defined.insert(instruction.get());
  }
  if (!defined.contains(computation.root())) {
    return absl::InvalidArgumentError(
        fmt::format("root of computation %{} is not one of its instructions", computation.name()));
  }
  return absl::OkStatus();
}

absl::Status VerifyAliases(const Module& module) {
  const Computation& entry = *module.entry();
  const Shape& output = entry.root()->shape();
  for (const InputOutputAlias& alias : module.input_output_aliases()) {
    if (alias.parameter_number < 0 || alias.parameter_number >= entry.parameter_count()) {
      return absl::InvalidArgumentError(
          fmt::format("input_output_alias names parameter {} but the entry has {}",
                      alias.parameter_number, entry.parameter_count()));
    }
    const Shape* output_part = &output;
    for (int64_t index : alias.output_index) {
      if (!output_part->IsTuple() || index < 0 ||
          index >= static_cast<int64_t>(output_part->tuple_elements().size())) {
        return absl::InvalidArgumentError("input_output_alias output index is out of range");
      }
      output_part = &output_part->tuple_elements()[index];
    }
    const Shape* parameter_part = &entry.parameter(alias.parameter_number)->shape();
    for (int64_t index : alias.parameter_index) {
      if (!parameter_part->IsTuple() || index < 0 ||
          index >= static_cast<int64_t>(parameter_part->tuple_elements().size())) {
        return absl::InvalidArgumentError("input_output_alias parameter index is out of range");
      }
      parameter_part = &parameter_part->tuple_elements()[index];
    }
    if (*output_part != *parameter_part) {
      return absl::InvalidArgumentError(
          fmt::format("input_output_alias pairs output {} with parameter {} of another shape",
                      output_part->ToString(), parameter_part->ToString()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status VerifyModule(const Module& module) {
  if (module.entry() == nullptr)
    return absl::InvalidArgumentError("module has no entry computation");
  if (module.replica_count() < 1 || module.partition_count() < 1 ||
      module.replica_count() * module.partition_count() > kMaxDevices) {
    return absl::InvalidArgumentError("replica_count x num_partitions must be in 1..65536");
  }
  const ShapeInferenceContext context{module.replica_count(), module.partition_count()};
  absl::flat_hash_set<const Computation*> earlier;
  for (const auto& computation : module.computations()) {
    VKSPMD_RETURN_IF_ERROR(VerifyComputation(*computation, earlier, context));
    earlier.insert(computation.get());
  }
  return VerifyAliases(module);
}

}  // namespace vkspmd::ir
