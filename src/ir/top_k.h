// XLA's top-k (the `topk` instruction of newer XLA, the custom-call "TopK" of older ones) as the
// IR's ops: a stable sort of the operand with an s32 iota along its last dimension, sliced to k.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "src/ir/inline_calls.h"
#include "src/ir/module.h"

namespace vkspmd::ir {

// The comparator XLA's top-k sorts by: over (lhs, rhs) of `type` then (lhs, rhs) of s32, the
// values compared GT when `largest` (the k greatest, greatest first) else LT (the k smallest,
// smallest first); floats in TOTALORDER as XLA's comparators (NaN above +inf, -0 below +0).
std::unique_ptr<Computation> TopKComparator(std::string name, DType type, bool largest);

// The sort comparator over (values lhs, rhs, indices lhs, rhs) for a custom-call TopK whose
// to_apply is `to_apply`: null when to_apply is one already (use it as it is); for a comparator
// of the values alone, a copy named `name` with two unused s32 parameters after its own.
// INVALID_ARGUMENT for any other signature or a root that is not a scalar pred.
absl::StatusOr<std::unique_ptr<Computation>> TopKSortComparator(std::string name,
                                                                const Computation& to_apply,
                                                                DType type);

// INVALID_ARGUMENT unless `shape` is a numeric array of rank >= 1 whose last dimension n has
// 1 <= k <= n and fits s32 indices.
absl::Status CheckTopKOperand(const Shape& shape, int64_t k);

// (values, indices) of the first k elements of every row of `operand` (its last dimension) in
// `comparator`'s order, as a tuple (f32[..., k], s32[..., k]) built through `add`: a stable sort
// of (operand, iota) and two slices; errors as CheckTopKOperand.
absl::StatusOr<Instruction*> TopKAsSort(Instruction* operand, int64_t k, Computation* comparator,
                                        const AddInstructionFn& add);

}  // namespace vkspmd::ir
