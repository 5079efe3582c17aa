// Data-movement ops, each written as "for every result index, find the source index" so that the
// code reads like the op's definition.
#include "src/interp/shape_ops.h"

#include <algorithm>
#include <cstring>

#include "src/interp/index_value.h"

namespace vkspmd::interp {

using ir::Literal;

int64_t LinearIndex(const std::vector<int64_t>& index, const std::vector<int64_t>& strides) {
  int64_t linear = 0;
  for (size_t i = 0; i < index.size(); ++i) linear += index[i] * strides[i];
  return linear;
}

void CopyElement(const Literal& source, int64_t source_index, Literal& destination,
                 int64_t destination_index) {
  const int64_t size = ir::DTypeByteSize(source.dtype());
  std::memcpy(destination.bytes().data() + destination_index * size,
              source.bytes().data() + source_index * size, size);
}

void CopyBlock(const Literal& source, const std::vector<int64_t>& source_start,
               Literal& destination, const std::vector<int64_t>& destination_start,
               const std::vector<int64_t>& block) {
  const auto source_strides = ir::RowMajorStrides(source.shape().dimensions());
  const auto destination_strides = ir::RowMajorStrides(destination.shape().dimensions());
  ForEachIndex(ir::Shape(source.dtype(), block), [&](const std::vector<int64_t>& index, int64_t) {
    int64_t from = 0, to = 0;
    for (size_t i = 0; i < index.size(); ++i) {
      from += (source_start[i] + index[i]) * source_strides[i];
      to += (destination_start[i] + index[i]) * destination_strides[i];
    }
    CopyElement(source, from, destination, to);
  });
}

Literal EvaluateIota(const ir::Instruction& instruction) {
  Literal result(instruction.shape());
  const int64_t dimension = instruction.attributes().iota_dimension;
  ForEachIndex(instruction.shape(), [&](const std::vector<int64_t>& index, int64_t linear) {
    result.SetFromInt64(linear, index[dimension]);
  });
  return result;
}

Literal EvaluateBroadcast(const ir::Instruction& instruction, const Literal& operand) {
  Literal result(instruction.shape());
  const std::vector<int64_t>& dimensions = instruction.attributes().dimensions;
  const auto strides = ir::RowMajorStrides(operand.shape().dimensions());
  ForEachIndex(instruction.shape(), [&](const std::vector<int64_t>& index, int64_t linear) {
    int64_t source = 0;
    for (size_t i = 0; i < dimensions.size(); ++i) source += index[dimensions[i]] * strides[i];
    CopyElement(operand, source, result, linear);
  });
  return result;
}

Literal EvaluateReshape(const ir::Shape& shape, const Literal& operand) {
  Literal result(shape);
  result.bytes() = operand.bytes();
  return result;
}

Literal EvaluateTranspose(const ir::Instruction& instruction, const Literal& operand) {
  Literal result(instruction.shape());
  const std::vector<int64_t>& permutation = instruction.attributes().dimensions;
  const auto strides = ir::RowMajorStrides(operand.shape().dimensions());
  ForEachIndex(instruction.shape(), [&](const std::vector<int64_t>& index, int64_t linear) {
    int64_t source = 0;
    for (size_t i = 0; i < permutation.size(); ++i) source += index[i] * strides[permutation[i]];
    CopyElement(operand, source, result, linear);
  });
  return result;
}

Literal EvaluateSlice(const ir::Instruction& instruction, const Literal& operand) {
  Literal result(instruction.shape());
  const auto& slice = instruction.attributes().slice;
  const auto strides = ir::RowMajorStrides(operand.shape().dimensions());
  ForEachIndex(instruction.shape(), [&](const std::vector<int64_t>& index, int64_t linear) {
    int64_t source = 0;
    for (size_t i = 0; i < slice.size(); ++i) {
      source += (slice[i].start + index[i] * slice[i].stride) * strides[i];
    }
    CopyElement(operand, source, result, linear);
  });
  return result;
}

namespace {

std::vector<int64_t> ClampedStarts(const std::vector<const Literal*>& operands, size_t first,
                                   const ir::Shape& operand, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> starts;
  for (int64_t i = 0; i < operand.rank(); ++i) {
    const Literal& index = *operands[first + i];
    const int64_t start = IndexValue(index, 0);
    starts.push_back(std::clamp<int64_t>(start, 0, operand.dimension(i) - sizes[i]));
  }
  return starts;
}

}  // namespace

Literal EvaluateDynamicSlice(const ir::Instruction& instruction,
                             const std::vector<const Literal*>& operands) {
  const Literal& operand = *operands[0];
  const std::vector<int64_t>& sizes = instruction.attributes().dynamic_slice_sizes;
  Literal result(instruction.shape());
  const auto starts = ClampedStarts(operands, 1, operand.shape(), sizes);
  CopyBlock(operand, starts, result, std::vector<int64_t>(sizes.size(), 0), sizes);
  return result;
}

Literal EvaluateDynamicUpdateSlice(const std::vector<const Literal*>& operands) {
  Literal result = *operands[0];
  const Literal& update = *operands[1];
  const auto& sizes = update.shape().dimensions();
  const auto starts = ClampedStarts(operands, 2, result.shape(), sizes);
  CopyBlock(update, std::vector<int64_t>(sizes.size(), 0), result, starts, sizes);
  return result;
}

Literal EvaluateConcatenate(const ir::Instruction& instruction,
                            const std::vector<const Literal*>& operands) {
  Literal result(instruction.shape());
  const int64_t axis = instruction.attributes().dimensions[0];
  std::vector<int64_t> destination_start(instruction.shape().rank(), 0);
  for (const Literal* operand : operands) {
    CopyBlock(*operand, std::vector<int64_t>(destination_start.size(), 0), result,
              destination_start, operand->shape().dimensions());
    destination_start[axis] += operand->shape().dimension(axis);
  }
  return result;
}

Literal EvaluatePad(const ir::Instruction& instruction, const Literal& operand,
                    const Literal& padding_value) {
  Literal result(instruction.shape());
  for (int64_t i = 0; i < result.ElementCount(); ++i) CopyElement(padding_value, 0, result, i);
  const auto& padding = instruction.attributes().padding;
  const auto result_strides = ir::RowMajorStrides(instruction.shape().dimensions());
  // Each operand element lands at low + index * (interior + 1); negative padding drops elements.
  ForEachIndex(operand.shape(), [&](const std::vector<int64_t>& index, int64_t linear) {
    int64_t destination = 0;
    for (size_t i = 0; i < index.size(); ++i) {
      const int64_t position = padding[i].low + index[i] * (padding[i].interior + 1);
      if (position < 0 || position >= instruction.shape().dimension(i)) return;
      destination += position * result_strides[i];
    }
    CopyElement(operand, linear, result, destination);
  });
  return result;
}

Literal EvaluateReverse(const ir::Instruction& instruction, const Literal& operand) {
  Literal result(instruction.shape());
  const auto strides = ir::RowMajorStrides(operand.shape().dimensions());
  const std::vector<int64_t>& reversed = instruction.attributes().dimensions;
  ForEachIndex(instruction.shape(), [&](const std::vector<int64_t>& index, int64_t linear) {
    std::vector<int64_t> source = index;
    for (int64_t axis : reversed) source[axis] = operand.shape().dimension(axis) - 1 - index[axis];
    CopyElement(operand, LinearIndex(source, strides), result, linear);
  });
  return result;
}

}  // namespace vkspmd::interp
