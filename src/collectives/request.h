// One rank's request at a collective, and the rules every member's requests must meet together
// before any data moves. Transports carry requests; they do not judge them.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "src/collectives/communicator.h"

namespace vkspmd::collectives {

enum class CollectiveKind {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kPermute,
  kBroadcast
};
// The collective's name as XLA spells it ("all-reduce", ...).
const char* CollectiveKindName(CollectiveKind kind);

// How a request's input lies within its own output, derived where both are known (the caller's
// process), so that the rules need no peer's addresses.
enum class Aliasing {
  kNone,     // Disjoint.
  kInPlace,  // The in-place form of the kind: all-reduce on the same bytes, all-gather from the
             // output's chunk at the caller's position.
  kOther,    // Any other overlap.
};

struct Request {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  int rank = 0;
  ElementType type = ElementType::kF32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;  // Broadcast: the root's position in the group.
  // The caller's buffers; only a transport that shares memory reaches a peer's.
  std::span<const std::byte> input;
  std::span<std::byte> output;
  // The buffers' sizes: the spans' (set by JoinGroup) where the caller is in this process, carried
  // by message where it is in another (whose spans stay empty). The rules read only these.
  size_t input_size = 0;
  size_t output_size = 0;
  Aliasing aliasing = Aliasing::kNone;
  std::vector<int> members;                // The caller's group, in position order.
  int position = 0;                        // The caller's index in `members`.
  std::vector<std::pair<int, int>> pairs;  // kPermute: (source, target) ranks.
};

// Sets `request`'s group (and so its position and aliasing) from `groups`, which must list each
// of the world's ranks exactly once; empty: one group of all ranks in rank order.
absl::Status JoinGroup(Request& request, const ReplicaGroups& groups, int world_size);

// INVALID_ARGUMENT, the same for every member, unless the members' requests (by position) agree
// and fit their kind: sizes, element type, reduction, root, pairs, in-place forms.
absl::Status CheckRequests(const std::vector<const Request*>& requests, uint64_t sequence,
                           int world_size);

// "{0,1,2}".
std::string GroupText(const std::vector<int>& members);

}  // namespace vkspmd::collectives
