// Collectives between the ranks of a mesh (one rank per mesh device), on host memory. The
// Communicator is the interface the executor calls at each collective of a partitioned program; a
// World (world.h) connects one per rank, and host_communicator.h implements it over a transport.
//
// Semantics are XLA's: a collective runs independently in each replica group (a list of ranks; a
// member's position in its group orders the chunks of all-gather, reduce-scatter and all-to-all),
// every rank of the world calls every collective in the same order, and the buffers a call is
// given hold whole arrays of one element type. Every output is written only if the collective
// succeeds on every participant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace vkspmd::collectives {

// Element types, independent of the IR's (src/exec maps IR types onto these).
enum class ElementType : uint8_t {
  kPred,
  kS8,
  kU8,
  kS16,
  kU16,
  kS32,
  kU32,
  kS64,
  kU64,
  kF32,
  kF64,
  // 16-bit floats as their bit patterns; combined in f32 and rounded to nearest even per step.
  kF16,
  kBF16
};
size_t ElementSize(ElementType type);
const char* ElementTypeName(ElementType type);

// Reductions; floating-point min and max propagate NaN, as XLA's do. and/or are for integers and
// predicates.
enum class ReduceOp : uint8_t { kSum, kProduct, kMin, kMax, kAnd, kOr };
const char* ReduceOpName(ReduceOp op);

// Each inner list is one group of ranks; the groups partition the world. Empty: one group of all
// ranks in rank order.
using ReplicaGroups = std::vector<std::vector<int>>;

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // output = input combined with `op` over the group, element by element, identical bit for bit
  // on every member. input and output have equal sizes and may be the same buffer.
  virtual absl::Status AllReduce(std::span<const std::byte> input, std::span<std::byte> output,
                                 ElementType type, ReduceOp op, const ReplicaGroups& groups) = 0;
  // output = the members' inputs concatenated in group order (|output| = n * |input|).
  virtual absl::Status AllGather(std::span<const std::byte> input, std::span<std::byte> output,
                                 ElementType type, const ReplicaGroups& groups) = 0;
  // output = chunk p (p = this rank's position) of the inputs combined over the group
  // (|input| = n * |output|).
  virtual absl::Status ReduceScatter(std::span<const std::byte> input, std::span<std::byte> output,
                                     ElementType type, ReduceOp op,
                                     const ReplicaGroups& groups) = 0;
  // Chunk j of the output = chunk p of member j's input (|input| = |output|, divisible into n
  // chunks). input and output must not overlap.
  virtual absl::Status AllToAll(std::span<const std::byte> input, std::span<std::byte> output,
                                ElementType type, const ReplicaGroups& groups) = 0;
  // (source, target) rank pairs: each target's output = its source's input; ranks that are no
  // target get zeros. Every rank calls it with the same pairs.
  virtual absl::Status CollectivePermute(std::span<const std::byte> input,
                                         std::span<std::byte> output, ElementType type,
                                         const std::vector<std::pair<int, int>>& pairs) = 0;
  // output = the input of the member at position `root` of the group.
  virtual absl::Status Broadcast(std::span<const std::byte> input, std::span<std::byte> output,
                                 ElementType type, int root, const ReplicaGroups& groups) = 0;
};

}  // namespace vkspmd::collectives
