// The Communicator every transport shares: each of the six collectives becomes one Request that
// has joined its replica group, handed to the transport's Submit. Transports differ only there.
#pragma once

#include <utility>
#include <vector>

#include "src/collectives/communicator.h"
#include "src/collectives/request.h"

namespace vkspmd::collectives {

class RequestCommunicator : public Communicator {
 public:
  explicit RequestCommunicator(int rank) : rank_(rank) {}
  int rank() const override { return rank_; }

  absl::Status AllReduce(std::span<const std::byte> input, std::span<std::byte> output,
                         ElementType type, ReduceOp op, const ReplicaGroups& groups) override;
  absl::Status AllGather(std::span<const std::byte> input, std::span<std::byte> output,
                         ElementType type, const ReplicaGroups& groups) override;
  absl::Status ReduceScatter(std::span<const std::byte> input, std::span<std::byte> output,
                             ElementType type, ReduceOp op, const ReplicaGroups& groups) override;
  absl::Status AllToAll(std::span<const std::byte> input, std::span<std::byte> output,
                        ElementType type, const ReplicaGroups& groups) override;
  absl::Status CollectivePermute(std::span<const std::byte> input, std::span<std::byte> output,
                                 ElementType type,
                                 const std::vector<std::pair<int, int>>& pairs) override;
  absl::Status Broadcast(std::span<const std::byte> input, std::span<std::byte> output,
                         ElementType type, int root, const ReplicaGroups& groups) override;

 protected:
  // Runs `request` (JoinGroup done, from `groups`: empty for permute) on the transport.
  virtual absl::Status Submit(const Request& request, const ReplicaGroups& groups) = 0;

 private:
  absl::Status Run(CollectiveKind kind, std::span<const std::byte> input,
                   std::span<std::byte> output, ElementType type, ReduceOp op, int root,
                   const ReplicaGroups& groups, std::vector<std::pair<int, int>> pairs = {});

  const int rank_;
};

}  // namespace vkspmd::collectives
