// Inlining of called computations, map expansion and bitcast lowering (see inline_calls.h).
#include "src/ir/inline_calls.h"

#include <numeric>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"

namespace vkspmd::ir {
namespace {

absl::Status CheckArguments(const Computation& callee, absl::Span<Instruction* const> arguments,
                            bool scalar_parameters) {
  if (callee.parameter_count() != static_cast<int64_t>(arguments.size())) {
    return absl::InvalidArgumentError(
        fmt::format("computation %{} takes {} parameters but is given {} operands", callee.name(),
                    callee.parameter_count(), arguments.size()));
  }
  for (size_t i = 0; i < arguments.size(); ++i) {
    const Shape& parameter = callee.parameter(static_cast<int64_t>(i))->shape();
    const Shape& argument = arguments[i]->shape();
    const bool matches = scalar_parameters
                             ? argument.IsArray() && parameter.IsArray() && parameter.rank() == 0 &&
                                   parameter.dtype() == argument.dtype()
                             : parameter == argument;
    if (!matches) {
      return absl::InvalidArgumentError(
          fmt::format("parameter {} of %{} is {} but operand %{} is {}", i, callee.name(),
                      parameter.ToString(), arguments[i]->name(), argument.ToString()));
    }
  }
  return absl::OkStatus();
}

std::unique_ptr<Instruction> CloneWith(const Instruction& original, Shape shape,
                                       std::vector<Instruction*> operands) {
  auto clone =
      std::make_unique<Instruction>(original.opcode(), std::move(shape), std::move(operands));
  clone->attributes() = original.attributes();
  clone->set_name(original.name());
  clone->set_sharding(original.sharding());
  clone->set_location(original.location());
  return clone;
}

bool IsIdentity(absl::Span<const int64_t> permutation) {
  for (size_t i = 0; i < permutation.size(); ++i) {
    if (permutation[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// Major-to-minor order of a minor-to-major layout.
std::vector<int64_t> MajorToMinor(absl::Span<const int64_t> minor_to_major) {
  return std::vector<int64_t>(minor_to_major.rbegin(), minor_to_major.rend());
}

}  // namespace

absl::StatusOr<Instruction*> InlineComputation(const Computation& callee,
                                               absl::Span<Instruction* const> arguments,
                                               const AddInstructionFn& add) {
  VKSPMD_RETURN_IF_ERROR(CheckArguments(callee, arguments, /*scalar_parameters=*/false));
  absl::flat_hash_map<const Instruction*, Instruction*> mapped;
  for (const auto& instruction : callee.instructions()) {
    if (instruction->opcode() == Opcode::kParameter) {
      mapped[instruction.get()] = arguments[instruction->attributes().parameter_number];
      continue;
    }
    std::vector<Instruction*> operands;
    for (const Instruction* operand : instruction->operands()) operands.push_back(mapped[operand]);
    mapped[instruction.get()] =
        add(CloneWith(*instruction, instruction->shape(), std::move(operands)));
  }
  return mapped[callee.root()];
}

absl::StatusOr<Instruction*> MapComputation(const Computation& callee,
                                            absl::Span<Instruction* const> arguments,
                                            const AddInstructionFn& add) {
  VKSPMD_RETURN_IF_ERROR(CheckArguments(callee, arguments, /*scalar_parameters=*/true));
  if (arguments.empty()) {
    return absl::InvalidArgumentError(fmt::format("map of %{} has no operands", callee.name()));
  }
  const std::vector<int64_t>& dimensions = arguments[0]->shape().dimensions();
  for (Instruction* argument : arguments) {
    if (argument->shape().dimensions() != dimensions) {
      return absl::InvalidArgumentError(fmt::format("map operands differ in shape: {} and {}",
                                                    arguments[0]->shape().ToString(),
                                                    argument->shape().ToString()));
    }
  }
  absl::flat_hash_map<const Instruction*, Instruction*> mapped;
  for (const auto& instruction : callee.instructions()) {
    const Opcode opcode = instruction->opcode();
    if (opcode == Opcode::kParameter) {
      mapped[instruction.get()] = arguments[instruction->attributes().parameter_number];
      continue;
    }
    const Shape& shape = instruction->shape();
    if (!shape.IsArray() || shape.rank() != 0) {
      return absl::InvalidArgumentError(
          fmt::format("map: %{} of computation %{} is {}, not a scalar", instruction->name(),
                      callee.name(), shape.ToString()));
    }
    const Shape array(shape.dtype(), dimensions);
    // A scalar broadcast to a scalar (XLA's comparison expander writes its constants so) is the
    // value itself.
    if (opcode == Opcode::kBroadcast || opcode == Opcode::kReshape) {
      mapped[instruction.get()] = mapped[instruction->operand(0)];
      continue;
    }
    if (opcode == Opcode::kConstant) {
      Instruction* scalar = add(CloneWith(*instruction, shape, {}));
      auto broadcast = std::make_unique<Instruction>(Opcode::kBroadcast, array,
                                                     std::vector<Instruction*>{scalar});
      broadcast->set_name(instruction->name());
      broadcast->set_location(instruction->location());
      mapped[instruction.get()] = add(std::move(broadcast));
      continue;
    }
    const bool elementwise = IsElementwiseUnary(opcode) || IsElementwiseBinary(opcode) ||
                             opcode == Opcode::kCompare || opcode == Opcode::kSelect ||
                             opcode == Opcode::kClamp || opcode == Opcode::kConvert ||
                             opcode == Opcode::kCopy || opcode == Opcode::kBitcastConvert ||
                             opcode == Opcode::kReducePrecision;
    if (!elementwise) {
      return absl::InvalidArgumentError(
          fmt::format("map: %{} of computation %{} is a {}, which is not elementwise",
                      instruction->name(), callee.name(), OpcodeName(opcode)));
    }
    std::vector<Instruction*> operands;
    for (const Instruction* operand : instruction->operands()) operands.push_back(mapped[operand]);
    auto clone = CloneWith(*instruction, array, std::move(operands));
    clone->set_sharding(std::nullopt);
    mapped[instruction.get()] = add(std::move(clone));
  }
  return mapped[callee.root()];
}

absl::StatusOr<Instruction*> BitcastAsShapeOps(Instruction* operand,
                                               absl::Span<const int64_t> operand_layout,
                                               const Shape& shape,
                                               absl::Span<const int64_t> result_layout,
                                               const AddInstructionFn& add) {
  const Shape& from = operand->shape();
  if (!from.IsArray() || !shape.IsArray()) {
    return absl::InvalidArgumentError("bitcast of a tuple is not supported");
  }
  if (from.dtype() != shape.dtype()) {
    return absl::InvalidArgumentError(
        fmt::format("bitcast from {} to {} changes the element type; XLA writes that as "
                    "bitcast-convert",
                    from.ToString(), shape.ToString()));
  }
  if (from.ElementCount() != shape.ElementCount()) {
    return absl::InvalidArgumentError(fmt::format("bitcast from {} to {} changes the element count",
                                                  from.ToString(), shape.ToString()));
  }
  auto add_op = [&](Opcode opcode, Instruction* input, Shape result,
                    std::vector<int64_t> dimensions) {
    auto instruction =
        std::make_unique<Instruction>(opcode, std::move(result), std::vector<Instruction*>{input});
    instruction->attributes().dimensions = std::move(dimensions);
    instruction->set_name(std::string(OpcodeName(opcode)));
    return add(std::move(instruction));
  };
  // Operand in its physical (major-to-minor) order.
  const std::vector<int64_t> operand_order = MajorToMinor(operand_layout);
  Instruction* value = operand;
  if (!IsIdentity(operand_order)) {
    std::vector<int64_t> dimensions;
    for (int64_t axis : operand_order) dimensions.push_back(from.dimension(axis));
    value = add_op(Opcode::kTranspose, value, Shape(from.dtype(), dimensions), operand_order);
  }
  // The result's physical dimensions, then its logical order.
  const std::vector<int64_t> result_order = MajorToMinor(result_layout);
  std::vector<int64_t> physical;
  for (int64_t axis : result_order) physical.push_back(shape.dimension(axis));
  if (value->shape().dimensions() != physical) {
    value = add_op(Opcode::kReshape, value, Shape(shape.dtype(), physical), {});
  }
  if (!IsIdentity(result_order)) {
    std::vector<int64_t> inverse(result_order.size());
    for (size_t k = 0; k < result_order.size(); ++k) inverse[result_order[k]] = k;
    value = add_op(Opcode::kTranspose, value, shape, inverse);
  }
  return value;
}

}  // namespace vkspmd::ir
