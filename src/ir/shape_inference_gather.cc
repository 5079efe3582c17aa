// Shape inference for gather, scatter and sort, following XLA's ShapeInference: every dimension
// number is checked against the ranks and sizes it indexes, and errors name the attribute at fault.
#include <algorithm>
#include <array>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/ir/gather_attributes.h"
#include "src/ir/module.h"
#include "src/ir/shape_inference_internal.h"

namespace vkspmd::ir::shape_inference_internal {
namespace {

std::string Braced(const std::vector<int64_t>& values) {
  return fmt::format("{{{}}}", absl::StrJoin(values, ","));
}

bool Contains(const std::vector<int64_t>& values, int64_t value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

// Dims in [0, rank), unique, and (when `sorted`) increasing; the message names the attribute.
absl::Status CheckDims(std::string_view attribute, const std::vector<int64_t>& dims, int64_t rank,
                       bool sorted) {
  absl::Status status = CheckDimensionsInRange(dims, rank, /*unique=*/true);
  if (!status.ok()) {
    return Invalid(
        fmt::format("{}={}: {}", attribute, Braced(dims), std::string(status.message())));
  }
  if (sorted && !std::is_sorted(dims.begin(), dims.end())) {
    return Invalid(fmt::format("{}={} must be sorted", attribute, Braced(dims)));
  }
  return absl::OkStatus();
}

// The checks gather and scatter share; `names` are the op's spellings of
// {offset_dims, collapsed_slice_dims, start_index_map, operand_batching_dims,
// start_indices_batching_dims}.
absl::Status CheckIndexing(const GatherDimensions& dims, const Shape& operand, const Shape& indices,
                           const std::array<std::string_view, 5>& names) {
  if (!IsInteger(indices.dtype())) {
    return Invalid(fmt::format("indices must be integers, got {}", indices.ToString()));
  }
  if (dims.index_vector_dim < 0 || dims.index_vector_dim > indices.rank()) {
    return Invalid(fmt::format("index_vector_dim={} is out of range for indices {}",
                               dims.index_vector_dim, indices.ToString()));
  }
  const int64_t vector_size =
      dims.index_vector_dim < indices.rank() ? indices.dimension(dims.index_vector_dim) : 1;
  if (static_cast<int64_t>(dims.start_index_map.size()) != vector_size) {
    return Invalid(fmt::format("{}={} must have one entry per index vector element ({})", names[2],
                               Braced(dims.start_index_map), vector_size));
  }
  VKSPMD_RETURN_IF_ERROR(CheckDims(names[1], dims.collapsed_slice_dims, operand.rank(), true));
  VKSPMD_RETURN_IF_ERROR(CheckDims(names[2], dims.start_index_map, operand.rank(), false));
  VKSPMD_RETURN_IF_ERROR(CheckDims(names[3], dims.operand_batching_dims, operand.rank(), true));
  VKSPMD_RETURN_IF_ERROR(
      CheckDims(names[4], dims.start_indices_batching_dims, indices.rank(), false));
  for (int64_t d : dims.operand_batching_dims) {
    if (Contains(dims.collapsed_slice_dims, d) || Contains(dims.start_index_map, d)) {
      return Invalid(fmt::format("operand dim {} is in {} and also in {} or {}", d, names[3],
                                 names[1], names[2]));
    }
  }
  if (dims.operand_batching_dims.size() != dims.start_indices_batching_dims.size()) {
    return Invalid(fmt::format("{}={} and {}={} must have the same length", names[3],
                               Braced(dims.operand_batching_dims), names[4],
                               Braced(dims.start_indices_batching_dims)));
  }
  for (size_t i = 0; i < dims.operand_batching_dims.size(); ++i) {
    const int64_t index_dim = dims.start_indices_batching_dims[i];
    if (index_dim == dims.index_vector_dim) {
      return Invalid(fmt::format("{} must not contain index_vector_dim={}", names[4], index_dim));
    }
    const int64_t operand_size = operand.dimension(dims.operand_batching_dims[i]);
    if (indices.dimension(index_dim) != operand_size) {
      return Invalid(fmt::format(
          "batching dims differ in size: operand dim {} is {}, indices dim {} is {}",
          dims.operand_batching_dims[i], operand_size, index_dim, indices.dimension(index_dim)));
    }
  }
  return absl::OkStatus();
}

// Dims of the indices other than the index vector.
int64_t BatchRank(const GatherDimensions& dims, const Shape& indices) {
  return indices.rank() - (dims.index_vector_dim < indices.rank() ? 1 : 0);
}

// Operand dims neither collapsed (inserted) nor batching: one offset (window) dim each.
absl::StatusOr<int64_t> WindowRank(const GatherDimensions& dims, const Shape& operand,
                                   std::string_view offsets, std::string_view collapsed) {
  const int64_t rank = operand.rank() - static_cast<int64_t>(dims.collapsed_slice_dims.size() +
                                                             dims.operand_batching_dims.size());
  if (static_cast<int64_t>(dims.offset_dims.size()) != rank) {
    return Invalid(
        fmt::format("{}={} must have one entry per operand dim neither {} nor batching ({})",
                    offsets, Braced(dims.offset_dims), collapsed, rank));
  }
  return rank;
}

}  // namespace

absl::StatusOr<Shape> InferGather(const Instruction& instruction) {
  VKSPMD_RETURN_IF_ERROR(CheckOperandCount(instruction, 2));
  VKSPMD_RETURN_IF_ERROR(CheckArrays(instruction));
  const Shape& operand = instruction.operand(0)->shape();
  const Shape& indices = instruction.operand(1)->shape();
  const GatherDimensions& dims = instruction.attributes().gather;
  VKSPMD_RETURN_IF_ERROR(CheckIndexing(dims, operand, indices,
                                       {"offset_dims", "collapsed_slice_dims", "start_index_map",
                                        "operand_batching_dims", "start_indices_batching_dims"}));
  if (static_cast<int64_t>(dims.slice_sizes.size()) != operand.rank()) {
    return Invalid(fmt::format("slice_sizes={} must have one entry per operand dim ({})",
                               Braced(dims.slice_sizes), operand.rank()));
  }
  for (int64_t d = 0; d < operand.rank(); ++d) {
    const int64_t size = dims.slice_sizes[d];
    if (size < 0 || size > operand.dimension(d)) {
      return Invalid(fmt::format("slice_sizes[{}]={} is out of range for operand {}", d, size,
                                 operand.ToString()));
    }
    const bool collapsed =
        Contains(dims.collapsed_slice_dims, d) || Contains(dims.operand_batching_dims, d);
    if (collapsed && size > 1) {
      return Invalid(fmt::format(
          "slice_sizes[{}]={} must be at most 1 for a collapsed or batching dim", d, size));
    }
  }
  const int64_t batch_rank = BatchRank(dims, indices);
  VKSPMD_ASSIGN_OR_RETURN(const int64_t window_rank,
                          WindowRank(dims, operand, "offset_dims", "collapsed"));
  const int64_t rank = batch_rank + window_rank;
  VKSPMD_RETURN_IF_ERROR(CheckDims("offset_dims", dims.offset_dims, rank, true));
  const GatherIndexSpaces spaces = DescribeGather(dims, operand.rank(), indices, rank);
  std::vector<int64_t> result(rank);
  for (size_t i = 0; i < spaces.result_batch.size(); ++i) {
    result[spaces.result_batch[i]] = indices.dimension(spaces.indices_batch[i]);
  }
  for (size_t i = 0; i < dims.offset_dims.size(); ++i) {
    result[dims.offset_dims[i]] = dims.slice_sizes[spaces.operand_window[i]];
  }
  return Shape(operand.dtype(), result);
}

absl::StatusOr<Shape> InferScatter(const Instruction& instruction) {
  if (instruction.operand_count() != 3) {
    return Invalid(fmt::format(
        "scatter takes (operand, indices, updates); {} operands (a variadic scatter) are not "
        "supported",
        instruction.operand_count()));
  }
  VKSPMD_RETURN_IF_ERROR(CheckArrays(instruction));
  const Shape& operand = instruction.operand(0)->shape();
  const Shape& indices = instruction.operand(1)->shape();
  const Shape& updates = instruction.operand(2)->shape();
  const GatherDimensions& dims = instruction.attributes().gather;
  VKSPMD_RETURN_IF_ERROR(
      CheckIndexing(dims, operand, indices,
                    {"update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
                     "input_batching_dims", "scatter_indices_batching_dims"}));
  if (updates.dtype() != operand.dtype()) {
    return Invalid(fmt::format("updates {} must have the operand's type {}", updates.ToString(),
                               operand.ToString()));
  }
  const int64_t batch_rank = BatchRank(dims, indices);
  VKSPMD_ASSIGN_OR_RETURN(const int64_t window_rank,
                          WindowRank(dims, operand, "update_window_dims", "inserted"));
  if (updates.rank() != batch_rank + window_rank) {
    return Invalid(fmt::format("updates {} must have rank {} ({} scatter dims + {} window dims)",
                               updates.ToString(), batch_rank + window_rank, batch_rank,
                               window_rank));
  }
  VKSPMD_RETURN_IF_ERROR(CheckDims("update_window_dims", dims.offset_dims, updates.rank(), true));
  const GatherIndexSpaces spaces = DescribeGather(dims, operand.rank(), indices, updates.rank());
  for (size_t i = 0; i < spaces.result_batch.size(); ++i) {
    const int64_t expected = indices.dimension(spaces.indices_batch[i]);
    if (updates.dimension(spaces.result_batch[i]) != expected) {
      return Invalid(fmt::format("updates dim {} is {} but indices dim {} is {}",
                                 spaces.result_batch[i], updates.dimension(spaces.result_batch[i]),
                                 spaces.indices_batch[i], expected));
    }
  }
  for (size_t i = 0; i < dims.offset_dims.size(); ++i) {
    const int64_t window = updates.dimension(dims.offset_dims[i]);
    const int64_t bound = operand.dimension(spaces.operand_window[i]);
    if (window > bound) {
      return Invalid(fmt::format("update window dim {} ({}) is larger than operand dim {} ({})",
                                 dims.offset_dims[i], window, spaces.operand_window[i], bound));
    }
  }
  const Computation* combiner = instruction.attributes().to_apply;
  const Shape scalar = Shape::Scalar(operand.dtype());
  if (combiner == nullptr) return Invalid("scatter needs to_apply=");
  if (combiner->parameter_count() != 2 || combiner->parameter(0)->shape() != scalar ||
      combiner->parameter(1)->shape() != scalar || combiner->root()->shape() != scalar) {
    return Invalid(fmt::format("to_apply=%{0} must be ({1}, {1}) -> {1}", combiner->name(),
                               scalar.ToString()));
  }
  return operand;
}

absl::StatusOr<Shape> InferSort(const Instruction& instruction) {
  if (instruction.operand_count() == 0) return Invalid("sort needs at least one operand");
  VKSPMD_RETURN_IF_ERROR(CheckArrays(instruction));
  const Shape& first = instruction.operand(0)->shape();
  std::vector<Shape> shapes;
  for (const Instruction* operand : instruction.operands()) {
    if (operand->shape().dimensions() != first.dimensions()) {
      return Invalid(fmt::format("sort operands must have the same dimensions: {} and {}",
                                 first.ToString(), operand->shape().ToString()));
    }
    shapes.push_back(operand->shape());
  }
  const std::vector<int64_t>& dims = instruction.attributes().dimensions;
  if (dims.size() != 1 || dims[0] < 0 || dims[0] >= std::max<int64_t>(first.rank(), 1)) {
    return Invalid(fmt::format("sort needs dimensions={{d}} with one dim of {}, got {}",
                               first.ToString(), Braced(dims)));
  }
  const Computation* comparator = instruction.attributes().to_apply;
  if (comparator == nullptr) return Invalid("sort needs to_apply= (a comparator)");
  const int64_t count = instruction.operand_count();
  if (comparator->parameter_count() != 2 * count) {
    return Invalid(fmt::format("to_apply=%{} must take {} parameters (two per operand)",
                               comparator->name(), 2 * count));
  }
  for (int64_t i = 0; i < 2 * count; ++i) {
    const Shape scalar = Shape::Scalar(shapes[i / 2].dtype());
    if (comparator->parameter(i)->shape() != scalar) {
      return Invalid(fmt::format("to_apply=%{} parameter {} must be {}", comparator->name(), i,
                                 scalar.ToString()));
    }
  }
  if (comparator->root()->shape() != Shape::Scalar(DType::kPred)) {
    return Invalid(fmt::format("to_apply=%{} must return pred[]", comparator->name()));
  }
  return count == 1 ? shapes[0] : Shape::Tuple(shapes);
}

}  // namespace vkspmd::ir::shape_inference_internal
