// Shape inference: the dispatcher and the elementwise, leaf, tuple and custom-call rules (XLA's,
// with no implicit broadcasting; operand element types agree unless the op converts).
#include "src/ir/shape_inference.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/ir/shape_inference_internal.h"

namespace vkspmd::ir {
namespace shape_inference_internal {

absl::Status Invalid(std::string message) { return absl::InvalidArgumentError(std::move(message)); }

absl::Status CheckOperandCount(const Instruction& instruction, int64_t count) {
  if (instruction.operand_count() != count) {
    return Invalid(fmt::format("{} takes {} operand(s), got {}", OpcodeName(instruction.opcode()),
                               count, instruction.operand_count()));
  }
  return absl::OkStatus();
}

absl::Status CheckArrays(const Instruction& instruction) {
  for (const Instruction* operand : instruction.operands()) {
    if (operand->shape().IsTuple()) {
      return Invalid(fmt::format("operand %{} must be an array, not {}", operand->name(),
                                 operand->shape().ToString()));
    }
  }
  return absl::OkStatus();
}

bool IsPermutation(const std::vector<int64_t>& values, int64_t size) {
  if (static_cast<int64_t>(values.size()) != size) return false;
  std::vector<bool> seen(size, false);
  for (int64_t value : values) {
    if (value < 0 || value >= size || seen[value]) return false;
    seen[value] = true;
  }
  return true;
}

absl::Status CheckDimensionsInRange(const std::vector<int64_t>& dimensions, int64_t rank,
                                    bool unique) {
  std::vector<bool> seen(rank, false);
  for (int64_t dimension : dimensions) {
    if (dimension < 0 || dimension >= rank) {
      return Invalid(fmt::format("dimension {} is out of range for rank {}", dimension, rank));
    }
    if (unique && seen[dimension]) return Invalid(fmt::format("dimension {} repeats", dimension));
    seen[dimension] = true;
  }
  return absl::OkStatus();
}

}  // namespace shape_inference_internal

namespace {

using shape_inference_internal::CheckArrays;
using shape_inference_internal::CheckOperandCount;
using shape_inference_internal::InferBroadcast;
using shape_inference_internal::InferCollective;
using shape_inference_internal::InferConcatenate;
using shape_inference_internal::InferConditional;
using shape_inference_internal::InferDot;
using shape_inference_internal::InferDynamicSlices;
using shape_inference_internal::InferGather;
using shape_inference_internal::InferPad;
using shape_inference_internal::InferReduce;
using shape_inference_internal::InferScatter;
using shape_inference_internal::InferShapeOps;
using shape_inference_internal::InferSort;
using shape_inference_internal::InferWhile;
using shape_inference_internal::Invalid;

absl::StatusOr<Shape> InferUnary(const Instruction& instruction) {
  VKSPMD_RETURN_IF_ERROR(CheckOperandCount(instruction, 1));
  VKSPMD_RETURN_IF_ERROR(CheckArrays(instruction));
  const Shape& shape = instruction.operand(0)->shape();
  const DType type = shape.dtype();
  switch (instruction.opcode()) {
    case Opcode::kNot:
      if (IsFloat(type)) return Invalid("not needs a pred or integer operand");
      return shape;
    case Opcode::kIsFinite:
      if (!IsFloat(type)) return Invalid("is-finite needs a floating-point operand");
      return Shape(DType::kPred, shape.dimensions());
    case Opcode::kNegate:
    case Opcode::kAbs:
    case Opcode::kSign:
      if (type == DType::kPred) return Invalid("pred operands are not numbers");
      return shape;
    default:
      if (!IsFloat(type)) {
        return Invalid(fmt::format("{} needs a floating-point operand, got {}",
                                   OpcodeName(instruction.opcode()), shape.ToString()));
      }
      return shape;
  }
}

absl::Status CheckSameShape(const Shape& lhs, const Shape& rhs) {
  if (lhs != rhs) {
    return Invalid(fmt::format("operand shapes {} and {} differ", lhs.ToString(), rhs.ToString()));
  }
  return absl::OkStatus();
}

absl::StatusOr<Shape> InferBinary(const Instruction& instruction) {
  VKSPMD_RETURN_IF_ERROR(CheckOperandCount(instruction, 2));
  VKSPMD_RETURN_IF_ERROR(CheckArrays(instruction));
  const Shape& lhs = instruction.operand(0)->shape();
  VKSPMD_RETURN_IF_ERROR(CheckSameShape(lhs, instruction.operand(1)->shape()));
  const DType type = lhs.dtype();
  const std::string_view name = OpcodeName(instruction.opcode());
  switch (instruction.opcode()) {
    case Opcode::kAnd:
    case Opcode::kOr:
    case Opcode::kXor:
      if (IsFloat(type)) return Invalid(fmt::format("{} needs pred or integer operands", name));
      break;
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightLogical:
    case Opcode::kShiftRightArithmetic:
      if (!IsInteger(type)) return Invalid(fmt::format("{} needs integer operands", name));
      break;
    case Opcode::kAtan2:
      if (!IsFloat(type)) return Invalid("atan2 needs floating-point operands");
      break;
    case Opcode::kMaximum:
    case Opcode::kMinimum:
      break;
    default:
      if (type == DType::kPred) return Invalid(fmt::format("{} does not take pred operands", name));
  }
  return lhs;
}

absl::StatusOr<Shape> InferCompareSelectClamp(const Instruction& instruction) {
  const Opcode opcode = instruction.opcode();
  if (opcode == Opcode::kCompare) {
    VKSPMD_RETURN_IF_ERROR(CheckOperandCount(instruction, 2));
    VKSPMD_RETURN_IF_ERROR(CheckArrays(instruction));
    const Shape& lhs = instruction.operand(0)->shape();
    VKSPMD_RETURN_IF_ERROR(CheckSameShape(lhs, instruction.operand(1)->shape()));
    return Shape(DType::kPred, lhs.dimensions());
  }
  VKSPMD_RETURN_IF_ERROR(CheckOperandCount(instruction, 3));
  VKSPMD_RETURN_IF_ERROR(CheckArrays(instruction));
  const Shape& first = instruction.operand(0)->shape();
  const Shape& middle = instruction.operand(1)->shape();
  const Shape& last = instruction.operand(2)->shape();
  if (opcode == Opcode::kSelect) {
    if (first.dtype() != DType::kPred) return Invalid("select's first operand must be pred");
    VKSPMD_RETURN_IF_ERROR(CheckSameShape(middle, last));
    if (first.rank() != 0 && first.dimensions() != middle.dimensions()) {
      return Invalid(fmt::format("select predicate {} does not match {}", first.ToString(),
                                 middle.ToString()));
    }
    return middle;
  }
  for (const Shape* bound : {&first, &last}) {
    if (bound->dtype() != middle.dtype() || (bound->rank() != 0 && *bound != middle)) {
      return Invalid(fmt::format("clamp bound {} must be a scalar or the shape {}",
                                 bound->ToString(), middle.ToString()));
    }
  }
  return middle;
}

absl::StatusOr<Shape> InferCustomCall(const Instruction& instruction) {
  const std::string& target = instruction.attributes().custom_call_target;
  if (target != "Sharding" && target != "SPMDFullToShardShape" &&
      target != "SPMDShardToFullShape") {
    return Invalid(fmt::format("unsupported custom-call target \"{}\"", target));
  }
  VKSPMD_RETURN_IF_ERROR(CheckOperandCount(instruction, 1));
  VKSPMD_RETURN_IF_ERROR(CheckArrays(instruction));
  const Shape& operand = instruction.operand(0)->shape();
  if (target == "Sharding") return operand;
  const Shape& declared = instruction.shape();
  if (declared.IsTuple() || declared.rank() != operand.rank() ||
      declared.dtype() != operand.dtype()) {
    return Invalid(fmt::format("{} must keep rank and type of {}", target, operand.ToString()));
  }
  return declared;
}

absl::StatusOr<Shape> InferLeaf(const Instruction& instruction) {
  VKSPMD_RETURN_IF_ERROR(CheckOperandCount(instruction, 0));
  const Shape& declared = instruction.shape();
  switch (instruction.opcode()) {
    case Opcode::kParameter:
      return declared;
    case Opcode::kConstant:
      return instruction.attributes().literal->shape();
    case Opcode::kIota: {
      const int64_t dimension = instruction.attributes().iota_dimension;
      if (declared.IsTuple() || dimension < 0 || dimension >= declared.rank()) {
        return Invalid(fmt::format("iota_dimension={} is out of range for {}", dimension,
                                   declared.ToString()));
      }
      if (declared.dtype() == DType::kPred) return Invalid("iota cannot produce pred");
      return declared;
    }
    default:
      return Shape::Scalar(DType::kU32);
  }
}

}  // namespace

absl::StatusOr<Shape> InferShape(const Instruction& instruction,
                                 const ShapeInferenceContext& context) {
  const Opcode opcode = instruction.opcode();
  if (IsElementwiseUnary(opcode)) return InferUnary(instruction);
  if (IsElementwiseBinary(opcode)) return InferBinary(instruction);
  if (IsCollective(opcode)) return InferCollective(instruction, context);
  switch (opcode) {
    case Opcode::kCompare:
    case Opcode::kSelect:
    case Opcode::kClamp:
      return InferCompareSelectClamp(instruction);
    case Opcode::kConvert:
      VKSPMD_RETURN_IF_ERROR(CheckOperandCount(instruction, 1));
      VKSPMD_RETURN_IF_ERROR(CheckArrays(instruction));
      if (instruction.shape().IsTuple()) return Invalid("convert result must be an array");
      return Shape(instruction.shape().dtype(), instruction.operand(0)->shape().dimensions());
    case Opcode::kCopy:
      VKSPMD_RETURN_IF_ERROR(CheckOperandCount(instruction, 1));
      return instruction.operand(0)->shape();
    case Opcode::kBitcastConvert: {
      VKSPMD_RETURN_IF_ERROR(CheckOperandCount(instruction, 1));
      VKSPMD_RETURN_IF_ERROR(CheckArrays(instruction));
      if (instruction.shape().IsTuple()) return Invalid("bitcast-convert result must be an array");
      const DType from = instruction.operand(0)->shape().dtype();
      const DType to = instruction.shape().dtype();
      if (from == DType::kPred || to == DType::kPred) {
        return Invalid(fmt::format("bitcast-convert from {} to {}: pred has no bit width to read",
                                   DTypeName(from), DTypeName(to)));
      }
      return BitcastConvertShape(instruction.operand(0)->shape(), to);
    }
    case Opcode::kReducePrecision: {
      VKSPMD_RETURN_IF_ERROR(CheckOperandCount(instruction, 1));
      VKSPMD_RETURN_IF_ERROR(CheckArrays(instruction));
      const Shape& operand = instruction.operand(0)->shape();
      if (!IsFloat(operand.dtype())) {
        return Invalid(
            fmt::format("reduce-precision needs a float operand, got {}", operand.ToString()));
      }
      if (instruction.attributes().exponent_bits < 1) {
        return Invalid("reduce-precision needs exponent_bits= (at least 1)");
      }
      return operand;
    }
    case Opcode::kParameter:
    case Opcode::kConstant:
    case Opcode::kIota:
    case Opcode::kPartitionId:
    case Opcode::kReplicaId:
      return InferLeaf(instruction);
    case Opcode::kRngBitGenerator: {
      VKSPMD_RETURN_IF_ERROR(CheckOperandCount(instruction, 1));
      VKSPMD_RETURN_IF_ERROR(CheckArrays(instruction));
      const Shape& declared = instruction.shape();
      const Shape& state = instruction.operand(0)->shape();
      if (state.dtype() != DType::kU64 || state.rank() != 1) {
        return Invalid(
            fmt::format("rng-bit-generator state must be u64[n], got {}", state.ToString()));
      }
      if (!declared.IsTuple() || declared.tuple_elements().size() != 2 ||
          declared.tuple_elements()[1].IsTuple() ||
          !IsInteger(declared.tuple_elements()[1].dtype())) {
        return Invalid("rng-bit-generator returns (state, unsigned integer array)");
      }
      return Shape::Tuple({state, declared.tuple_elements()[1]});
    }
    case Opcode::kBroadcast:
      return InferBroadcast(instruction);
    case Opcode::kReshape:
    case Opcode::kTranspose:
    case Opcode::kSlice:
    case Opcode::kReverse:
      VKSPMD_RETURN_IF_ERROR(CheckOperandCount(instruction, 1));
      VKSPMD_RETURN_IF_ERROR(CheckArrays(instruction));
      return InferShapeOps(instruction);
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
      if (instruction.operand_count() == 0) return Invalid("missing operand");
      return InferDynamicSlices(instruction);
    case Opcode::kConcatenate:
      return InferConcatenate(instruction);
    case Opcode::kPad:
      return InferPad(instruction);
    case Opcode::kDot:
      return InferDot(instruction);
    case Opcode::kReduce:
      return InferReduce(instruction);
    case Opcode::kGather:
      return InferGather(instruction);
    case Opcode::kScatter:
      return InferScatter(instruction);
    case Opcode::kSort:
      return InferSort(instruction);
    case Opcode::kTuple: {
      std::vector<Shape> elements;
      for (const Instruction* operand : instruction.operands())
        elements.push_back(operand->shape());
      return Shape::Tuple(elements);
    }
    case Opcode::kGetTupleElement: {
      VKSPMD_RETURN_IF_ERROR(CheckOperandCount(instruction, 1));
      const Shape& tuple = instruction.operand(0)->shape();
      const int64_t index = instruction.attributes().tuple_index;
      if (!tuple.IsTuple() || index < 0 ||
          index >= static_cast<int64_t>(tuple.tuple_elements().size())) {
        return Invalid(fmt::format("index={} is out of range for {}", index, tuple.ToString()));
      }
      return tuple.tuple_elements()[index];
    }
    case Opcode::kWhile:
      return InferWhile(instruction);
    case Opcode::kConditional:
      return InferConditional(instruction);
    case Opcode::kCustomCall:
      return InferCustomCall(instruction);
    default:
      return Invalid("internal: op without shape inference");
  }
}

absl::StatusOr<Shape> BitcastConvertShape(const Shape& operand, DType to) {
  const DType from = operand.dtype();
  const int64_t from_bytes = DTypeByteSize(from), to_bytes = DTypeByteSize(to);
  std::vector<int64_t> dims = operand.dimensions();
  if (from_bytes > to_bytes) {
    dims.push_back(from_bytes / to_bytes);
  } else if (from_bytes < to_bytes) {
    const int64_t ratio = to_bytes / from_bytes;
    if (dims.empty() || dims.back() != ratio) {
      return absl::InvalidArgumentError(fmt::format(
          "bitcast-convert from {} to {} needs a last dim of {} (the width ratio), got {}",
          DTypeName(from), DTypeName(to), ratio, operand.ToString()));
    }
    dims.pop_back();
  }
  return Shape(to, std::move(dims));
}

}  // namespace vkspmd::ir
