// dot and reduce. A reducer that is a single binary op of its two parameters is applied directly
// (same order, same rounding; f16/bf16 reduces accumulate in f32, see EvaluateReduce) instead of
// evaluating the computation per element.
#include "src/interp/contraction.h"

#include <algorithm>

#include "src/base/status_macros.h"
#include "src/interp/elementwise.h"

namespace vkspmd::interp {
namespace {

using ir::Literal;

// Whether `reducer` is "ROOT op(p0, p1)" (or op(p1, p0): `swapped`); sets `opcode` if so.
bool IsSimpleReducer(const ir::Computation& reducer, ir::Opcode& opcode, bool& swapped) {
  const ir::Instruction* root = reducer.root();
  if (reducer.parameter_count() != 2 || !ir::IsElementwiseBinary(root->opcode())) return false;
  opcode = root->opcode();
  swapped = root->operand(0) == reducer.parameter(1);
  return (root->operand(0) == reducer.parameter(0) && root->operand(1) == reducer.parameter(1)) ||
         (swapped && root->operand(1) == reducer.parameter(0));
}

Literal ScalarAt(const Literal& literal, int64_t index) {
  Literal scalar(ir::Shape::Scalar(literal.dtype()));
  const int64_t size = ir::DTypeByteSize(literal.dtype());
  std::memcpy(scalar.bytes().data(), literal.bytes().data() + index * size, size);
  return scalar;
}

void StoreScalar(const Literal& scalar, Literal& literal, int64_t index) {
  const int64_t size = ir::DTypeByteSize(literal.dtype());
  std::memcpy(literal.bytes().data() + index * size, scalar.bytes().data(), size);
}

std::vector<int64_t> FreeDims(int64_t rank, const std::vector<int64_t>& batch,
                              const std::vector<int64_t>& contracting) {
  std::vector<int64_t> free;
  for (int64_t i = 0; i < rank; ++i) {
    if (std::find(batch.begin(), batch.end(), i) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), i) == contracting.end()) {
      free.push_back(i);
    }
  }
  return free;
}

}  // namespace

Literal EvaluateDot(const ir::Instruction& instruction, const Literal& lhs, const Literal& rhs) {
  const ir::DotDimensions& dot = instruction.attributes().dot;
  Literal result(instruction.shape());
  const auto lhs_free = FreeDims(lhs.shape().rank(), dot.lhs_batch, dot.lhs_contracting);
  const auto rhs_free = FreeDims(rhs.shape().rank(), dot.rhs_batch, dot.rhs_contracting);
  const auto lhs_strides = ir::RowMajorStrides(lhs.shape().dimensions());
  const auto rhs_strides = ir::RowMajorStrides(rhs.shape().dimensions());
  std::vector<int64_t> contracting_sizes;
  for (int64_t axis : dot.lhs_contracting) contracting_sizes.push_back(lhs.shape().dimension(axis));
  const int64_t contracting_count = ir::Shape(lhs.dtype(), contracting_sizes).ElementCount();
  const bool is_float = ir::IsFloat(lhs.dtype());
  if (result.ElementCount() == 0) return result;
  std::vector<int64_t> out_index(instruction.shape().rank(), 0);
  int64_t out_linear = 0;
  do {
    // Base offsets from the batch and free dims, which the output index fixes.
    int64_t lhs_base = 0, rhs_base = 0;
    size_t position = 0;
    for (size_t b = 0; b < dot.lhs_batch.size(); ++b, ++position) {
      lhs_base += out_index[position] * lhs_strides[dot.lhs_batch[b]];
      rhs_base += out_index[position] * rhs_strides[dot.rhs_batch[b]];
    }
    for (int64_t axis : lhs_free) lhs_base += out_index[position++] * lhs_strides[axis];
    for (int64_t axis : rhs_free) rhs_base += out_index[position++] * rhs_strides[axis];
    double float_sum = 0;
    uint64_t integer_sum = 0;
    std::vector<int64_t> k(contracting_sizes.size(), 0);
    for (int64_t step = 0; step < contracting_count; ++step) {
      int64_t lhs_offset = lhs_base, rhs_offset = rhs_base;
      for (size_t c = 0; c < k.size(); ++c) {
        lhs_offset += k[c] * lhs_strides[dot.lhs_contracting[c]];
        rhs_offset += k[c] * rhs_strides[dot.rhs_contracting[c]];
      }
      if (is_float) {
        float_sum += lhs.GetAsDouble(lhs_offset) * rhs.GetAsDouble(rhs_offset);
      } else if (lhs.dtype() == ir::DType::kPred) {
        integer_sum |= lhs.GetAsUint64(lhs_offset) & rhs.GetAsUint64(rhs_offset);
      } else {
        integer_sum += lhs.GetAsUint64(lhs_offset) * rhs.GetAsUint64(rhs_offset);
      }
      ir::NextIndex(contracting_sizes, k);
    }
    if (is_float) {
      result.SetFromDouble(out_linear, float_sum);
    } else {
      result.SetFromUint64(out_linear, integer_sum);
    }
    ++out_linear;
  } while (ir::NextIndex(instruction.shape().dimensions(), out_index));
  return result;
}

absl::StatusOr<Literal> EvaluateReduce(const ir::Instruction& instruction,
                                       const std::vector<const Literal*>& operands,
                                       const ComputationCaller& call) {
  const int64_t count = static_cast<int64_t>(operands.size()) / 2;
  const ir::Computation& reducer = *instruction.attributes().to_apply;
  const ir::Shape& input_shape = operands[0]->shape();
  const std::vector<int64_t>& reduced = instruction.attributes().dimensions;
  bool swapped = false;
  ir::Opcode simple_opcode = ir::Opcode::kAdd;
  const bool simple = count == 1 && IsSimpleReducer(reducer, simple_opcode, swapped);
  // f16 and bf16 reduce with a single-op reducer accumulate in f32 and round to the element type
  // once, at the end, as device kernels do: 10^6 steps each rounded to 11 (or 8) bits would leave
  // no significant digit of a sum.
  const bool f32_accumulator = simple && (instruction.shape().dtype() == ir::DType::kF16 ||
                                          instruction.shape().dtype() == ir::DType::kBF16);
  std::vector<Literal> results;
  for (int64_t i = 0; i < count; ++i) {
    const ir::Shape& shape =
        count == 1 ? instruction.shape() : instruction.shape().tuple_elements()[i];
    if (f32_accumulator) {
      results.emplace_back(ir::Shape(ir::DType::kF32, shape.dimensions()));
      for (int64_t o = 0; o < results.back().ElementCount(); ++o) {
        results.back().SetFromDouble(o, operands[count + i]->GetAsDouble(0));
      }
      continue;
    }
    results.emplace_back(shape);
    for (int64_t o = 0; o < results.back().ElementCount(); ++o) {
      StoreScalar(*operands[count + i], results.back(), o);
    }
  }
  auto result = [&]() {
    if (count != 1) return Literal::Tuple(std::move(results));
    if (!f32_accumulator) return std::move(results[0]);
    Literal rounded(instruction.shape());
    for (int64_t o = 0; o < rounded.ElementCount(); ++o) {
      rounded.SetFromDouble(o, results[0].GetAsDouble(o));
    }
    return rounded;
  };
  std::vector<int64_t> kept_dims, kept_strides;
  for (int64_t i = 0; i < input_shape.rank(); ++i) {
    if (std::find(reduced.begin(), reduced.end(), i) == reduced.end()) kept_dims.push_back(i);
  }
  kept_strides = ir::RowMajorStrides(results[0].shape().dimensions());
  if (input_shape.ElementCount() == 0) return result();
  std::vector<int64_t> index(input_shape.rank(), 0);
  int64_t linear = 0;
  do {
    int64_t out = 0;
    for (size_t i = 0; i < kept_dims.size(); ++i) out += index[kept_dims[i]] * kept_strides[i];
    if (simple) {
      Literal& accumulator = results[0];
      if (swapped) {
        ApplyBinaryElement(simple_opcode, *operands[0], linear, accumulator, out, accumulator, out);
      } else {
        ApplyBinaryElement(simple_opcode, accumulator, out, *operands[0], linear, accumulator, out);
      }
    } else {
      std::vector<Literal> arguments;
      for (int64_t i = 0; i < count; ++i) arguments.push_back(ScalarAt(results[i], out));
      for (int64_t i = 0; i < count; ++i) arguments.push_back(ScalarAt(*operands[i], linear));
      VKSPMD_ASSIGN_OR_RETURN(Literal combined, call(reducer, std::move(arguments)));
      for (int64_t i = 0; i < count; ++i) {
        StoreScalar(count == 1 ? combined : combined.tuple_elements()[i], results[i], out);
      }
    }
    ++linear;
  } while (ir::NextIndex(input_shape.dimensions(), index));
  return result();
}

absl::Status CombineElementwise(const ir::Computation& reducer, Literal& accumulator,
                                const Literal& value, const ComputationCaller& call) {
  bool swapped = false;
  ir::Opcode simple_opcode = ir::Opcode::kAdd;
  const bool simple = IsSimpleReducer(reducer, simple_opcode, swapped);
  for (int64_t i = 0; i < accumulator.ElementCount(); ++i) {
    if (simple) {
      if (swapped) {
        ApplyBinaryElement(simple_opcode, value, i, accumulator, i, accumulator, i);
      } else {
        ApplyBinaryElement(simple_opcode, accumulator, i, value, i, accumulator, i);
      }
      continue;
    }
    VKSPMD_ASSIGN_OR_RETURN(Literal combined,
                            call(reducer, {ScalarAt(accumulator, i), ScalarAt(value, i)}));
    StoreScalar(combined, accumulator, i);
  }
  return absl::OkStatus();
}

}  // namespace vkspmd::interp
