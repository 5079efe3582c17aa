// A collective instruction of a per-device program, run on the host between two recorded
// segments of kernels: the operand's bytes (as the device stores them) go through the
// Communicator, with the re-layouts XLA's dimension semantics need (collectives/chunk_layout.h),
// and come back as the result's bytes.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "src/collectives/communicator.h"
#include "src/ir/instruction.h"

namespace vkspmd::exec {

class DeviceCollectives;

// Where this device sits in the program's replicas x partitions, and its communicator (rank =
// global device id = replica * partition_count + partition).
struct DeviceAssignment {
  int64_t replica = 0;
  int64_t partition = 0;
  collectives::Communicator* communicator = nullptr;  // Borrowed; needed for collectives.
  // Borrowed; where set, collectives among devices of one VkDevice run on the devices.
  DeviceCollectives* device_collectives = nullptr;
};

// What running a collective needs that does not change between runs: derived once, when the
// program is compiled, so errors (unsupported types or reducers, bad groups) show then.
struct CollectiveStep {
  const ir::Instruction* collective = nullptr;  // Borrowed from the module.
  uint32_t element_bytes = 4;
  int64_t world_size = 1;  // replicas x partitions.
  collectives::ElementType type = collectives::ElementType::kF32;
  collectives::ReduceOp op = collectives::ReduceOp::kSum;  // All-reduce, reduce-scatter.
  collectives::ReplicaGroups groups;                       // In global device ids.
  int64_t group_size = 1;                                  // This device's group.
  int64_t dim = 0;  // All-gather, reduce-scatter, all-to-all: the dim chunks run along.
  std::vector<std::pair<int, int>> pairs;  // Collective-permute: (source, target) devices.
};

// Plans `collective` (all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute)
// for the device `assignment` names, whose buffers hold `element_bytes` per element.
absl::StatusOr<CollectiveStep> PlanCollectiveStep(const ir::Instruction& collective,
                                                  uint32_t element_bytes,
                                                  const DeviceAssignment& assignment,
                                                  int64_t replica_count, int64_t partition_count);

// One all-reduce of a bucket: consecutive all-reduces with the same groups, element type and
// reducer run as one collective over their operands packed back to back (as PyTorch's DDP buckets
// gradients), so the devices meet once for all of them. All-reduce combines element by element in
// group order, so each member's result has the bits it would have alone.
struct BucketMember {
  int kernel = -1;      // The all-reduce's index in the program's kernels.
  uint64_t offset = 0;  // Where its elements start in the packed buffer.
  uint64_t bytes = 0;   // Its operand's bytes (= its result's).
};

// Larger all-reduces run alone: packing them would cost the host path about what one fewer
// rendezvous saves, and every gradient of the default training step is far below it.
inline constexpr uint64_t kMaxBucketMemberBytes = 1 << 20;

// Whether all-reduce `next` (of `next_bytes`) may join a bucket led by `head` (of `head_bytes`):
// both all-reduces with equal element type and size, reducer and replica groups, and neither
// larger than kMaxBucketMemberBytes. (Data dependences are the caller's to check.)
bool CanShareBucket(const CollectiveStep& head, uint64_t head_bytes, const CollectiveStep& next,
                    uint64_t next_bytes);

// Runs `step` from `input`, the operand's device bytes, into `output`, the result's (which is
// left untouched when the collective fails). FAILED_PRECONDITION without a communicator for the
// program's whole world.
absl::Status RunCollectiveStep(const CollectiveStep& step, std::span<const std::byte> input,
                               std::span<std::byte> output,
                               collectives::Communicator* communicator);

}  // namespace vkspmd::exec
