// Gather and scatter, written as XLA's operational semantics: for every result (update) index,
// find its index vector, the start it names in the operand, and the element of the window.
#include "src/interp/gather_scatter.h"

#include <algorithm>

#include "src/base/status_macros.h"
#include "src/interp/index_value.h"
#include "src/interp/shape_ops.h"
#include "src/ir/gather_attributes.h"
#include "src/ir/module.h"

namespace vkspmd::interp {
namespace {

using ir::Literal;

// The operand start named by the index vector that `position` (a result or updates index)
// reads, before any clamping: start_index_map dims from the indices, batching dims from the
// batch position, 0 elsewhere.
std::vector<int64_t> StartOf(const ir::GatherDimensions& dims, const ir::GatherIndexSpaces& spaces,
                             const Literal& indices, int64_t operand_rank,
                             const std::vector<int64_t>& position) {
  std::vector<int64_t> index_position(indices.shape().rank(), 0);
  for (size_t i = 0; i < spaces.result_batch.size(); ++i) {
    index_position[spaces.indices_batch[i]] = position[spaces.result_batch[i]];
  }
  const auto strides = ir::RowMajorStrides(indices.shape().dimensions());
  std::vector<int64_t> start(operand_rank, 0);
  for (int64_t k = 0; k < spaces.index_vector_size; ++k) {
    if (spaces.explicit_index_vector) index_position[dims.index_vector_dim] = k;
    start[dims.start_index_map[k]] = IndexValue(indices, LinearIndex(index_position, strides));
  }
  for (size_t i = 0; i < dims.operand_batching_dims.size(); ++i) {
    start[dims.operand_batching_dims[i]] = index_position[dims.start_indices_batching_dims[i]];
  }
  return start;
}

// What a scatter's to_apply computes, when it is one of the usual forms evaluated directly.
enum class Combiner { kAssign, kAdd, kOther };

Combiner ClassifyCombiner(const ir::Computation& computation) {
  const ir::Instruction* root = computation.root();
  if (root == computation.parameter(1)) return Combiner::kAssign;
  if (root->opcode() == ir::Opcode::kAdd && root->operand(0)->opcode() == ir::Opcode::kParameter &&
      root->operand(1)->opcode() == ir::Opcode::kParameter &&
      root->operand(0) != root->operand(1)) {
    return Combiner::kAdd;
  }
  return Combiner::kOther;
}

}  // namespace

Literal EvaluateGather(const ir::Instruction& instruction, const Literal& operand,
                       const Literal& indices) {
  const ir::GatherDimensions& dims = instruction.attributes().gather;
  const ir::Shape& shape = instruction.shape();
  const int64_t rank = operand.shape().rank();
  const ir::GatherIndexSpaces spaces =
      ir::DescribeGather(dims, rank, indices.shape(), shape.rank());
  const auto operand_strides = ir::RowMajorStrides(operand.shape().dimensions());
  Literal result(shape);
  ForEachIndex(shape, [&](const std::vector<int64_t>& position, int64_t linear) {
    std::vector<int64_t> index = StartOf(dims, spaces, indices, rank, position);
    for (int64_t d = 0; d < rank; ++d) {
      index[d] =
          std::clamp<int64_t>(index[d], 0, operand.shape().dimension(d) - dims.slice_sizes[d]);
    }
    for (size_t w = 0; w < spaces.operand_window.size(); ++w) {
      index[spaces.operand_window[w]] += position[dims.offset_dims[w]];
    }
    CopyElement(operand, LinearIndex(index, operand_strides), result, linear);
  });
  return result;
}

absl::StatusOr<Literal> EvaluateScatter(const ir::Instruction& instruction, const Literal& operand,
                                        const Literal& indices, const Literal& updates,
                                        const ComputationCaller& call) {
  const ir::GatherDimensions& dims = instruction.attributes().gather;
  const ir::Shape& operand_shape = operand.shape();
  const int64_t rank = operand_shape.rank();
  const ir::GatherIndexSpaces spaces =
      ir::DescribeGather(dims, rank, indices.shape(), updates.shape().rank());
  // The window's extent in every operand dim: 1 for inserted and batching dims.
  std::vector<int64_t> window(rank, 1);
  for (size_t w = 0; w < spaces.operand_window.size(); ++w) {
    window[spaces.operand_window[w]] = updates.shape().dimension(dims.offset_dims[w]);
  }
  const auto operand_strides = ir::RowMajorStrides(operand_shape.dimensions());
  const ir::Computation& computation = *instruction.attributes().to_apply;
  const Combiner combiner = ClassifyCombiner(computation);
  const ir::DType type = operand.dtype();
  Literal result = operand;
  absl::Status status;
  ForEachIndex(updates.shape(), [&](const std::vector<int64_t>& position, int64_t linear) {
    if (!status.ok()) return;
    std::vector<int64_t> index = StartOf(dims, spaces, indices, rank, position);
    for (int64_t d = 0; d < rank; ++d) {
      // Compared without adding, which would overflow for starts near INT64_MAX.
      if (index[d] < 0 || index[d] > operand_shape.dimension(d) - window[d]) return;
    }
    for (size_t w = 0; w < spaces.operand_window.size(); ++w) {
      index[spaces.operand_window[w]] += position[dims.offset_dims[w]];
    }
    const int64_t target = LinearIndex(index, operand_strides);
    if (combiner == Combiner::kAssign) {
      CopyElement(updates, linear, result, target);
    } else if (combiner == Combiner::kAdd && type == ir::DType::kF32) {
      result.Set<float>(target, result.Get<float>(target) + updates.Get<float>(linear));
    } else if (combiner == Combiner::kAdd && type == ir::DType::kF64) {
      result.Set<double>(target, result.Get<double>(target) + updates.Get<double>(linear));
    } else if (combiner == Combiner::kAdd && ir::IsInteger(type)) {
      result.SetFromInt64(target, result.GetAsInt64(target) + updates.GetAsInt64(linear));
    } else {
      Literal accumulated(ir::Shape::Scalar(type)), update(ir::Shape::Scalar(type));
      CopyElement(result, target, accumulated, 0);
      CopyElement(updates, linear, update, 0);
      absl::StatusOr<Literal> combined = call(computation, {accumulated, update});
      if (!combined.ok()) {
        status = combined.status();
        return;
      }
      CopyElement(*combined, 0, result, target);
    }
  });
  VKSPMD_RETURN_IF_ERROR(status);
  return result;
}

}  // namespace vkspmd::interp
