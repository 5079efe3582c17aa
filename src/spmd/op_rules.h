// The one rule table (DESIGN.md): each op declares an einsum-like factor rule, as Shardy's
// OpShardingRule does. Propagation and the partitioner both read it; neither has its own per-op
// switch for which dims may be sharded.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/instruction.h"

namespace vkspmd::spmd {

enum class FactorKind {
  kPassThrough,      // same index in every tensor that has it: sharding it needs no communication
  kReduction,        // in operands only (dot contraction, reduced dims): partial results
  kNeedReplication,  // must be unsharded while the op runs (dynamic-slice dims, strided slices)
  // A dim the op shifts elements along (slice, pad, reverse, concatenate): propagation passes
  // its sharding through as GSPMD does; the rule's local op needs it whole, but the partitioner
  // keeps it split with a halo exchange (halo_exchange.h) where the tensors are split alike.
  kWindow,
};

// Whether the rule's local op needs a factor unsplit (need-replication and window factors).
inline bool NeedsWhole(FactorKind kind) {
  return kind == FactorKind::kNeedReplication || kind == FactorKind::kWindow;
}

struct Factor {
  int64_t size = 1;
  FactorKind kind = FactorKind::kPassThrough;
};

// One value of an op: an instruction, and which leaf of a tuple-shaped value (0 for arrays).
struct TensorRef {
  const ir::Instruction* instruction = nullptr;
  int64_t leaf = 0;
  bool operator==(const TensorRef&) const = default;
};

// factor lists per dim: tensor dim d is the row-major merge of dims[d]'s factors (major first);
// most dims have one factor, reshape dims may have several.
using DimFactors = std::vector<std::vector<int64_t>>;

struct OpRule {
  std::vector<Factor> factors;
  std::vector<TensorRef> operands;
  std::vector<DimFactors> operand_dims;  // one per operand
  std::vector<TensorRef> results;
  std::vector<DimFactors> result_dims;  // one per result
  // The partitioner may also run the op with its reduction factors whole (gathering those dims)
  // where that moves fewer bytes: a dynamic-slice at a run-time start, which XLA always gathers,
  // while its masked form (each device slices what it holds, an all-reduce sums) wins for small
  // windows.
  bool may_gather_reductions = false;
  // Names the rule in messages: "dot ([i,k],[k,j])->([i,j])".
  std::string ToString() const;
};

// The shape of a leaf of a value.
const ir::Shape& LeafShape(const TensorRef& tensor);
// Number of leaves: 1 for arrays, the element count for (flat) tuples.
int64_t LeafCount(const ir::Shape& shape);

// The rules of one instruction: usually one; a tuple has one per element; none for the
// SPMDFullToShardShape / SPMDShardToFullShape boundaries of manual regions. Errors name the op for
// anything the partitioner cannot handle outside manual regions (collectives, partition-id,
// nested tuples).
absl::StatusOr<std::vector<OpRule>> RulesFor(const ir::Instruction& instruction);

// A collective of the user's code inside a partially manual region (JAX's psum, ppermute,
// all_gather, psum_scatter or all_to_all over the manual axes of shard_map(auto=)). A
// single-operand all-reduce or collective-permute combines each element with the same element of
// other devices, so it partitions as an elementwise op; all-gather, reduce-scatter and all-to-all
// keep their dim whole and pass the others through. The partitioner checks that the groups stay
// within devices that hold the same shard; other collectives are refused, naming the op.
absl::StatusOr<OpRule> PartiallyManualCollectiveRule(const ir::Instruction& instruction);

}  // namespace vkspmd::spmd
