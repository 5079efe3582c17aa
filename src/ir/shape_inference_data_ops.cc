// Shape inference for data-movement ops (broadcast, reshape, transpose, slices, concatenate,
// pad, reverse), dot, reduce and the collectives, following XLA's ShapeInference.
#include <algorithm>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/ir/collective_groups.h"
#include "src/ir/module.h"
#include "src/ir/shape_inference_internal.h"

namespace vkspmd::ir::shape_inference_internal {
namespace {

absl::Status CheckScalarIndices(const Instruction& instruction, int64_t first) {
  for (int64_t i = first; i < instruction.operand_count(); ++i) {
    const Shape& index = instruction.operand(i)->shape();
    if (index.rank() != 0 || !IsInteger(index.dtype())) {
      return Invalid(fmt::format("start index operand {} must be an integer scalar, got {}", i,
                                 index.ToString()));
    }
  }
  return absl::OkStatus();
}

// A reducer takes (accumulators..., values...) scalars and returns the accumulators.
absl::Status CheckReducer(const Instruction& instruction, const std::vector<DType>& types) {
  const Computation* reducer = instruction.attributes().to_apply;
  if (reducer == nullptr)
    return Invalid(fmt::format("{} needs to_apply=", OpcodeName(instruction.opcode())));
  const int64_t count = static_cast<int64_t>(types.size());
  if (reducer->parameter_count() != 2 * count) {
    return Invalid(fmt::format("to_apply=%{} must take {} parameters", reducer->name(), 2 * count));
  }
  std::vector<Shape> scalars;
  for (DType type : types) scalars.push_back(Shape::Scalar(type));
  for (int64_t i = 0; i < 2 * count; ++i) {
    if (reducer->parameter(i)->shape() != scalars[i % count]) {
      return Invalid(fmt::format("to_apply=%{} parameter {} must be {}", reducer->name(), i,
                                 scalars[i % count].ToString()));
    }
  }
  const Shape expected = count == 1 ? scalars[0] : Shape::Tuple(scalars);
  if (reducer->root()->shape() != expected) {
    return Invalid(
        fmt::format("to_apply=%{} must return {}", reducer->name(), expected.ToString()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Shape> InferBroadcast(const Instruction& instruction) {
  VKSPMD_RETURN_IF_ERROR(CheckOperandCount(instruction, 1));
  VKSPMD_RETURN_IF_ERROR(CheckArrays(instruction));
  const Shape& operand = instruction.operand(0)->shape();
  const Shape& result = instruction.shape();
  const std::vector<int64_t>& dimensions = instruction.attributes().dimensions;
  if (result.IsTuple()) return Invalid("broadcast result must be an array");
  if (static_cast<int64_t>(dimensions.size()) != operand.rank()) {
    return Invalid(
        fmt::format("broadcast dimensions={{{}}} must have one entry per operand dim ({})",
                    absl::StrJoin(dimensions, ","), operand.rank()));
  }
  VKSPMD_RETURN_IF_ERROR(CheckDimensionsInRange(dimensions, result.rank(), true));
  std::vector<int64_t> expected = result.dimensions();
  for (size_t i = 0; i < dimensions.size(); ++i) {
    if (i > 0 && dimensions[i] <= dimensions[i - 1]) {
      return Invalid("broadcast dimensions must be strictly increasing");
    }
    const int64_t size = operand.dimension(static_cast<int64_t>(i));
    if (result.dimension(dimensions[i]) != size) {
      return Invalid(fmt::format(
          "broadcast operand dimension {} (size {}) does not match result dimension {} (size {})",
          i, size, dimensions[i], result.dimension(dimensions[i])));
    }
    expected[dimensions[i]] = size;
  }
  return Shape(operand.dtype(), expected);
}

absl::StatusOr<Shape> InferShapeOps(const Instruction& instruction) {
  const InstructionAttributes& attributes = instruction.attributes();
  const Shape& operand = instruction.operand(0)->shape();
  const Shape& declared = instruction.shape();
  switch (instruction.opcode()) {
    case Opcode::kReshape:
      if (declared.IsTuple() || declared.ElementCount() != operand.ElementCount()) {
        return Invalid(fmt::format("reshape from {} to {} changes the element count",
                                   operand.ToString(), declared.ToString()));
      }
      return Shape(operand.dtype(), declared.dimensions());
    case Opcode::kTranspose: {
      if (!IsPermutation(attributes.dimensions, operand.rank())) {
        return Invalid(fmt::format("dimensions={{{}}} is not a permutation of rank {}",
                                   absl::StrJoin(attributes.dimensions, ","), operand.rank()));
      }
      std::vector<int64_t> dims;
      for (int64_t axis : attributes.dimensions) dims.push_back(operand.dimension(axis));
      return Shape(operand.dtype(), dims);
    }
    case Opcode::kReverse:
      VKSPMD_RETURN_IF_ERROR(CheckDimensionsInRange(attributes.dimensions, operand.rank(), true));
      return operand;
    case Opcode::kSlice: {
      if (static_cast<int64_t>(attributes.slice.size()) != operand.rank()) {
        return Invalid(fmt::format("slice has {} ranges for rank {}", attributes.slice.size(),
                                   operand.rank()));
      }
      std::vector<int64_t> dims;
      for (int64_t i = 0; i < operand.rank(); ++i) {
        const SliceDimension& range = attributes.slice[i];
        if (range.start < 0 || range.start > range.limit || range.limit > operand.dimension(i) ||
            range.stride <= 0) {
          return Invalid(fmt::format("slice [{}:{}:{}] is invalid for dimension {} of size {}",
                                     range.start, range.limit, range.stride, i,
                                     operand.dimension(i)));
        }
        dims.push_back((range.limit - range.start + range.stride - 1) / range.stride);
      }
      return Shape(operand.dtype(), dims);
    }
    default:
      break;
  }
  return Invalid("internal: not a shape op");
}

absl::StatusOr<Shape> InferDynamicSlices(const Instruction& instruction) {
  VKSPMD_RETURN_IF_ERROR(CheckArrays(instruction));
  const Shape& operand = instruction.operand(0)->shape();
  if (instruction.opcode() == Opcode::kDynamicSlice) {
    VKSPMD_RETURN_IF_ERROR(CheckOperandCount(instruction, 1 + operand.rank()));
    VKSPMD_RETURN_IF_ERROR(CheckScalarIndices(instruction, 1));
    const std::vector<int64_t>& sizes = instruction.attributes().dynamic_slice_sizes;
    if (static_cast<int64_t>(sizes.size()) != operand.rank()) {
      return Invalid("dynamic_slice_sizes must have one entry per operand dim");
    }
    for (int64_t i = 0; i < operand.rank(); ++i) {
      if (sizes[i] < 0 || sizes[i] > operand.dimension(i)) {
        return Invalid(fmt::format("dynamic slice size {} exceeds dimension {} of size {}",
                                   sizes[i], i, operand.dimension(i)));
      }
    }
    return Shape(operand.dtype(), sizes);
  }
  VKSPMD_RETURN_IF_ERROR(CheckOperandCount(instruction, 2 + operand.rank()));
  VKSPMD_RETURN_IF_ERROR(CheckScalarIndices(instruction, 2));
  const Shape& update = instruction.operand(1)->shape();
  if (update.dtype() != operand.dtype() || update.rank() != operand.rank()) {
    return Invalid(
        fmt::format("update {} does not fit operand {}", update.ToString(), operand.ToString()));
  }
  for (int64_t i = 0; i < operand.rank(); ++i) {
    if (update.dimension(i) > operand.dimension(i)) {
      return Invalid(fmt::format("update {} is larger than operand {}", update.ToString(),
                                 operand.ToString()));
    }
  }
  return operand;
}

absl::StatusOr<Shape> InferConcatenate(const Instruction& instruction) {
  if (instruction.operand_count() == 0) return Invalid("concatenate needs operands");
  VKSPMD_RETURN_IF_ERROR(CheckArrays(instruction));
  const std::vector<int64_t>& dimensions = instruction.attributes().dimensions;
  const Shape& first = instruction.operand(0)->shape();
  if (dimensions.size() != 1) return Invalid("concatenate needs exactly one dimension");
  VKSPMD_RETURN_IF_ERROR(CheckDimensionsInRange(dimensions, first.rank(), true));
  std::vector<int64_t> dims = first.dimensions();
  dims[dimensions[0]] = 0;
  for (const Instruction* operand : instruction.operands()) {
    const Shape& shape = operand->shape();
    bool compatible = shape.dtype() == first.dtype() && shape.rank() == first.rank();
    for (int64_t i = 0; compatible && i < shape.rank(); ++i) {
      compatible = i == dimensions[0] || shape.dimension(i) == first.dimension(i);
    }
    if (!compatible) {
      return Invalid(fmt::format("cannot concatenate {} with {} along dimension {}",
                                 first.ToString(), shape.ToString(), dimensions[0]));
    }
    dims[dimensions[0]] += shape.dimension(dimensions[0]);
  }
  return Shape(first.dtype(), dims);
}

absl::StatusOr<Shape> InferPad(const Instruction& instruction) {
  VKSPMD_RETURN_IF_ERROR(CheckOperandCount(instruction, 2));
  VKSPMD_RETURN_IF_ERROR(CheckArrays(instruction));
  const Shape& operand = instruction.operand(0)->shape();
  const Shape& value = instruction.operand(1)->shape();
  if (value != Shape::Scalar(operand.dtype())) {
    return Invalid(fmt::format("padding value must be {}[], got {}", DTypeName(operand.dtype()),
                               value.ToString()));
  }
  const std::vector<PaddingDimension>& padding = instruction.attributes().padding;
  if (static_cast<int64_t>(padding.size()) != operand.rank()) {
    return Invalid(
        fmt::format("padding has {} entries for rank {}", padding.size(), operand.rank()));
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < operand.rank(); ++i) {
    const PaddingDimension& pad = padding[i];
    const int64_t size = operand.dimension(i);
    const int64_t result =
        pad.low + pad.high + size + std::max<int64_t>(size - 1, 0) * pad.interior;
    if (pad.interior < 0 || result < 0) {
      return Invalid(fmt::format("padding {}_{}_{} is invalid for dimension {} of size {}", pad.low,
                                 pad.high, pad.interior, i, size));
    }
    dims.push_back(result);
  }
  return Shape(operand.dtype(), dims);
}

absl::StatusOr<Shape> InferDot(const Instruction& instruction) {
  VKSPMD_RETURN_IF_ERROR(CheckOperandCount(instruction, 2));
  VKSPMD_RETURN_IF_ERROR(CheckArrays(instruction));
  const Shape& lhs = instruction.operand(0)->shape();
  const Shape& rhs = instruction.operand(1)->shape();
  const DotDimensions& dot = instruction.attributes().dot;
  if (lhs.dtype() != rhs.dtype()) return Invalid("dot operands must have the same element type");
  if (dot.lhs_batch.size() != dot.rhs_batch.size() ||
      dot.lhs_contracting.size() != dot.rhs_contracting.size()) {
    return Invalid("dot needs as many lhs as rhs batch and contracting dims");
  }
  std::vector<int64_t> lhs_used = dot.lhs_batch, rhs_used = dot.rhs_batch;
  lhs_used.insert(lhs_used.end(), dot.lhs_contracting.begin(), dot.lhs_contracting.end());
  rhs_used.insert(rhs_used.end(), dot.rhs_contracting.begin(), dot.rhs_contracting.end());
  VKSPMD_RETURN_IF_ERROR(CheckDimensionsInRange(lhs_used, lhs.rank(), true));
  VKSPMD_RETURN_IF_ERROR(CheckDimensionsInRange(rhs_used, rhs.rank(), true));
  for (size_t i = 0; i < lhs_used.size(); ++i) {
    if (lhs.dimension(lhs_used[i]) != rhs.dimension(rhs_used[i])) {
      return Invalid(fmt::format(
          "dot lhs dimension {} (size {}) does not match rhs dimension {} "
          "(size {})",
          lhs_used[i], lhs.dimension(lhs_used[i]), rhs_used[i], rhs.dimension(rhs_used[i])));
    }
  }
  std::vector<int64_t> dims;
  for (int64_t axis : dot.lhs_batch) dims.push_back(lhs.dimension(axis));
  for (int64_t i = 0; i < lhs.rank(); ++i) {
    if (std::find(lhs_used.begin(), lhs_used.end(), i) == lhs_used.end()) {
      dims.push_back(lhs.dimension(i));
    }
  }
  for (int64_t i = 0; i < rhs.rank(); ++i) {
    if (std::find(rhs_used.begin(), rhs_used.end(), i) == rhs_used.end()) {
      dims.push_back(rhs.dimension(i));
    }
  }
  return Shape(lhs.dtype(), dims);
}

absl::StatusOr<Shape> InferReduce(const Instruction& instruction) {
  const int64_t total = instruction.operand_count();
  if (total < 2 || total % 2 != 0) return Invalid("reduce takes inputs and as many init values");
  VKSPMD_RETURN_IF_ERROR(CheckArrays(instruction));
  const int64_t count = total / 2;
  const Shape& first = instruction.operand(0)->shape();
  const std::vector<int64_t>& dimensions = instruction.attributes().dimensions;
  VKSPMD_RETURN_IF_ERROR(CheckDimensionsInRange(dimensions, first.rank(), true));
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < first.rank(); ++i) {
    if (std::find(dimensions.begin(), dimensions.end(), i) == dimensions.end()) {
      kept.push_back(first.dimension(i));
    }
  }
  std::vector<DType> types;
  std::vector<Shape> results;
  for (int64_t i = 0; i < count; ++i) {
    const Shape& input = instruction.operand(i)->shape();
    const Shape& init = instruction.operand(count + i)->shape();
    if (input.dimensions() != first.dimensions()) {
      return Invalid("reduce inputs must have the same dimensions");
    }
    if (init != Shape::Scalar(input.dtype())) {
      return Invalid(
          fmt::format("init value {} must be {}[]", init.ToString(), DTypeName(input.dtype())));
    }
    types.push_back(input.dtype());
    results.emplace_back(input.dtype(), kept);
  }
  VKSPMD_RETURN_IF_ERROR(CheckReducer(instruction, types));
  return count == 1 ? results[0] : Shape::Tuple(results);
}

absl::StatusOr<Shape> InferCollective(const Instruction& instruction,
                                      const ShapeInferenceContext& context) {
  VKSPMD_RETURN_IF_ERROR(CheckOperandCount(instruction, 1));
  VKSPMD_RETURN_IF_ERROR(CheckArrays(instruction));
  const Shape& operand = instruction.operand(0)->shape();
  if (instruction.opcode() == Opcode::kCollectivePermute) {
    VKSPMD_RETURN_IF_ERROR(
        CollectivePermuteDevicePairs(instruction, context.replica_count, context.partition_count)
            .status());
    return operand;
  }
  VKSPMD_ASSIGN_OR_RETURN(auto groups, CollectiveDeviceGroups(instruction, context.replica_count,
                                                              context.partition_count));
  const int64_t group_size = static_cast<int64_t>(groups.front().size());
  if (instruction.opcode() == Opcode::kAllReduce) {
    VKSPMD_RETURN_IF_ERROR(CheckReducer(instruction, {operand.dtype()}));
    return operand;
  }
  const std::vector<int64_t>& dimensions = instruction.attributes().dimensions;
  if (dimensions.size() != 1) return Invalid("the collective needs dimensions={d}");
  VKSPMD_RETURN_IF_ERROR(CheckDimensionsInRange(dimensions, operand.rank(), true));
  std::vector<int64_t> dims = operand.dimensions();
  const int64_t axis = dimensions[0];
  switch (instruction.opcode()) {
    case Opcode::kAllGather:
      dims[axis] *= group_size;
      break;
    case Opcode::kReduceScatter:
      VKSPMD_RETURN_IF_ERROR(CheckReducer(instruction, {operand.dtype()}));
      [[fallthrough]];
    case Opcode::kAllToAll:
      if (dims[axis] % group_size != 0) {
        return Invalid(fmt::format("dimension {} of size {} is not divisible by the group size {}",
                                   axis, dims[axis], group_size));
      }
      if (instruction.opcode() == Opcode::kReduceScatter) dims[axis] /= group_size;
      break;
    default:
      break;
  }
  return Shape(operand.dtype(), dims);
}

}  // namespace vkspmd::ir::shape_inference_internal
