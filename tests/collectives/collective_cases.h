// The collective matrix shared by the multi-process tests: every kind x element type (every
// reduction for the reducing kinds) x replica groups (all ranks, reversed, neighbours, strided,
// swapped, uneven) x sizes, in place too, with inputs whose float sums depend on the order.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "src/collectives/communicator.h"
#include "src/collectives/request.h"

namespace vkspmd::collectives {

struct CollectiveCase {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  ElementType type = ElementType::kF32;
  ReduceOp op = ReduceOp::kSum;
  ReplicaGroups groups;                    // Empty: all ranks.
  std::vector<std::pair<int, int>> pairs;  // Permute.
  int root = 0;                            // Broadcast: a position.
  size_t chunk = 1;                        // Elements per chunk (per member for all-gather).
  bool in_place = false;                   // All-reduce and all-gather.
  int seed = 0;
};

// One rank's buffers for a case; in place, the input lies inside `output`.
struct Buffers {
  std::vector<std::byte> input, output;
  size_t input_offset = 0;  // In place: where the input starts in `output`.
  bool in_place = false;
  const std::vector<std::byte>& Output() const { return output; }
};

// The cases for a world of `n` ranks, the same list in every process.
std::vector<CollectiveCase> MatrixCases(int n);
Buffers MakeBuffers(const CollectiveCase& c, int rank, int n);
absl::Status CallCollective(const CollectiveCase& c, Communicator& communicator, Buffers& buffers);
std::string Describe(const CollectiveCase& c);

}  // namespace vkspmd::collectives
