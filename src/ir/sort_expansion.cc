// Long sorts as bitonic sorting networks (see sort_expansion.h). Rows are moved to the last dim
// and flattened to [R, P]; in compare-exchange stage (k, j) the element at position q meets its
// partner q ^ j, and each pair is ordered ascending where bit k of its positions is clear,
// descending where it is set.
#include "src/ir/sort_expansion.h"

#include <string>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/ir/entry_rewrite.h"
#include "src/ir/inline_calls.h"

namespace vkspmd::ir {
namespace {

int64_t SortRow(const Instruction& sort) {
  return sort.operand(0)->shape().dimension(sort.attributes().dimensions[0]);
}

// Writes the network's instructions through `add`, named after the sort.
class Network : public ExpansionBuilder {
 public:
  Network(const Instruction& sort, const AddInstructionFn& add)
      : ExpansionBuilder(sort, add), sort_(sort), add_(add) {}

  Instruction* Transpose(Instruction* value, const std::vector<int64_t>& permutation) {
    std::vector<int64_t> dims;
    for (int64_t p : permutation) dims.push_back(value->shape().dimension(p));
    InstructionAttributes attributes;
    attributes.dimensions = permutation;
    return New(Opcode::kTranspose, Shape(value->shape().dtype(), std::move(dims)), {value},
               std::move(attributes));
  }

  Instruction* Binary(Opcode opcode, Instruction* lhs, Instruction* rhs) {
    return New(opcode, lhs->shape(), {lhs, rhs});
  }

  Instruction* Compare(Instruction* lhs, Instruction* rhs, ComparisonDirection direction) {
    InstructionAttributes attributes;
    attributes.direction = direction;
    return New(Opcode::kCompare, Shape(DType::kPred, lhs->shape().dimensions()), {lhs, rhs},
               std::move(attributes));
  }

  Instruction* Select(Instruction* which, Instruction* on_true, Instruction* on_false) {
    return New(Opcode::kSelect, on_true->shape(), {which, on_true, on_false});
  }

  // Whether element `a` goes before element `b` (the operands' values, then the position in the
  // row, which is >= `length` for padding): the comparator on two real elements, with the
  // earlier position first among those it leaves unordered; real elements before padding.
  absl::StatusOr<Instruction*> Before(const std::vector<Instruction*>& a,
                                      const std::vector<Instruction*>& b, int64_t length) {
    std::vector<Instruction*> ab, ba;
    for (size_t k = 0; k + 1 < a.size(); ++k) {
      ab.insert(ab.end(), {a[k], b[k]});
      ba.insert(ba.end(), {b[k], a[k]});
    }
    const Computation& comparator = *sort_.attributes().to_apply;
    VKSPMD_ASSIGN_OR_RETURN(Instruction * less, MapComputation(comparator, ab, add_));
    VKSPMD_ASSIGN_OR_RETURN(Instruction * greater, MapComputation(comparator, ba, add_));
    const std::vector<int64_t>& dims = a.back()->shape().dimensions();
    Instruction* end = Splat(DType::kS32, length, dims);
    Instruction* a_real = Compare(a.back(), end, ComparisonDirection::kLt);
    Instruction* b_real = Compare(b.back(), end, ComparisonDirection::kLt);
    Instruction* a_earlier = Compare(a.back(), b.back(), ComparisonDirection::kLt);
    Instruction* not_greater = New(Opcode::kNot, greater->shape(), {greater});
    Instruction* both =
        Binary(Opcode::kOr, less, Binary(Opcode::kAnd, not_greater, a_earlier));  // both real
    Instruction* b_padding = New(Opcode::kNot, b_real->shape(), {b_real});
    Instruction* mixed = Binary(Opcode::kOr, a_real, Binary(Opcode::kAnd, b_padding, a_earlier));
    return Select(Binary(Opcode::kAnd, a_real, b_real), both, mixed);
  }

  // One compare-exchange stage over the [R, P] arrays (the operands, then the positions), written
  // elementwise over [R, P] so that one kernel can compute every array's stage: each element
  // reads its partner j positions away (a reverse of the [R, P / 2j, 2, j] view), both decide
  // the pair's order alike, and each keeps its own value or takes its partner's.
  absl::StatusOr<std::vector<Instruction*>> Stage(const std::vector<Instruction*>& rows, int64_t k,
                                                  int64_t j, int64_t length) {
    const int64_t r = rows[0]->shape().dimension(0), p = rows[0]->shape().dimension(1);
    const std::vector<int64_t> dims = {r, p};
    Instruction* position = Iota(dims, 1);
    Instruction* zero = Splat(DType::kS32, 0, dims);
    const auto bit_clear = [&](int64_t bit) {
      return Compare(Binary(Opcode::kAnd, position, Splat(DType::kS32, bit, dims)), zero,
                     ComparisonDirection::kEq);
    };
    Instruction* is_low = bit_clear(j);
    // Bit k of the pair's low position is bit k of either's (as j < k).
    Instruction* ascending = bit_clear(k);
    std::vector<Instruction*> partners, low, high;
    for (Instruction* row : rows) {
      InstructionAttributes reverse;
      reverse.dimensions = {2};
      Instruction* pairs = Reshape(row, {r, p / (2 * j), 2, j});
      Instruction* partner =
          Reshape(New(Opcode::kReverse, pairs->shape(), {pairs}, std::move(reverse)), {r, p});
      partners.push_back(partner);
      low.push_back(Select(is_low, row, partner));
      high.push_back(Select(is_low, partner, row));
    }
    VKSPMD_ASSIGN_OR_RETURN(Instruction * high_first, Before(high, low, length));
    // Positions differ, so exactly one of a pair goes first (for a comparator that is a strict
    // weak order, as XLA's sort requires): the comparator runs twice per element, not four times.
    Instruction* low_first = New(Opcode::kNot, high_first->shape(), {high_first});
    Instruction* swap = Select(ascending, high_first, low_first);
    std::vector<Instruction*> result;
    for (size_t v = 0; v < rows.size(); ++v) result.push_back(Select(swap, partners[v], rows[v]));
    return result;
  }

  // The sort's results: a tuple of the sorted operands, or the one sorted operand.
  absl::StatusOr<Instruction*> Sort(const std::vector<Instruction*>& operands) {
    const Shape& shape = operands[0]->shape();
    const int64_t rank = shape.rank(), dim = sort_.attributes().dimensions[0];
    const int64_t length = shape.dimension(dim);
    std::vector<int64_t> permutation;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != dim) permutation.push_back(d);
    }
    permutation.push_back(dim);
    std::vector<int64_t> inverse(rank);
    for (int64_t d = 0; d < rank; ++d) inverse[permutation[d]] = d;
    const int64_t rows = shape.ElementCount() / length;
    int64_t padded = 1;
    while (padded < length) padded *= 2;
    std::vector<Instruction*> arrays;
    for (Instruction* operand : operands) {
      Instruction* moved = dim == rank - 1 ? operand : Transpose(operand, permutation);
      Instruction* flat = Reshape(moved, {rows, length});
      if (padded > length) {
        InstructionAttributes padding;
        padding.padding = {{0, 0, 0}, {0, padded - length, 0}};
        const DType type = operand->shape().dtype();
        flat = New(Opcode::kPad, Shape(type, {rows, padded}), {flat, Scalar(type, 0)},
                   std::move(padding));
      }
      arrays.push_back(flat);
    }
    arrays.push_back(Iota({rows, padded}, 1));
    for (int64_t k = 2; k <= padded; k *= 2) {
      for (int64_t j = k / 2; j >= 1; j /= 2) {
        VKSPMD_ASSIGN_OR_RETURN(arrays, Stage(arrays, k, j, length));
      }
    }
    std::vector<Instruction*> sorted;
    for (size_t v = 0; v < operands.size(); ++v) {
      Instruction* row = padded > length ? Slice(arrays[v], 1, 0, length) : arrays[v];
      std::vector<int64_t> moved_dims;
      for (int64_t d : permutation) moved_dims.push_back(shape.dimension(d));
      Instruction* moved = Reshape(row, moved_dims);
      sorted.push_back(dim == rank - 1 ? moved : Transpose(moved, inverse));
    }
    if (!sort_.shape().IsTuple()) return sorted[0];
    return New(Opcode::kTuple, sort_.shape(), sorted);
  }

 private:
  const Instruction& sort_;
  const AddInstructionFn& add_;
};

}  // namespace

bool HasLongSort(const Module& module, int64_t max_row) {
  for (const auto& instruction : module.entry()->instructions()) {
    if (instruction->opcode() == Opcode::kSort && SortRow(*instruction) > max_row) return true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<Module>> ExpandLongSorts(const Module& module, int64_t max_row) {
  return RewriteEntry(
      module,
      [max_row](const Instruction& instruction, const std::vector<Instruction*>& operands,
                const AddInstructionFn& add) -> absl::StatusOr<Instruction*> {
        if (instruction.opcode() != Opcode::kSort || SortRow(instruction) <= max_row) {
          return nullptr;
        }
        Network network(instruction, add);
        return network.Sort(operands);
      });
}

}  // namespace vkspmd::ir
