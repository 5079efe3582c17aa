// Building and joining each collective's Request.
#include "src/collectives/request_communicator.h"

namespace vkspmd::collectives {

using Kind = CollectiveKind;

absl::Status RequestCommunicator::AllReduce(std::span<const std::byte> input,
                                            std::span<std::byte> output, ElementType type,
                                            ReduceOp op, const ReplicaGroups& groups) {
  return Run(Kind::kAllReduce, input, output, type, op, 0, groups);
}

absl::Status RequestCommunicator::AllGather(std::span<const std::byte> input,
                                            std::span<std::byte> output, ElementType type,
                                            const ReplicaGroups& groups) {
  return Run(Kind::kAllGather, input, output, type, ReduceOp::kSum, 0, groups);
}

absl::Status RequestCommunicator::ReduceScatter(std::span<const std::byte> input,
                                                std::span<std::byte> output, ElementType type,
                                                ReduceOp op, const ReplicaGroups& groups) {
  return Run(Kind::kReduceScatter, input, output, type, op, 0, groups);
}

absl::Status RequestCommunicator::AllToAll(std::span<const std::byte> input,
                                           std::span<std::byte> output, ElementType type,
                                           const ReplicaGroups& groups) {
  return Run(Kind::kAllToAll, input, output, type, ReduceOp::kSum, 0, groups);
}

absl::Status RequestCommunicator::CollectivePermute(std::span<const std::byte> input,
                                                    std::span<std::byte> output, ElementType type,
                                                    const std::vector<std::pair<int, int>>& pairs) {
  return Run(Kind::kPermute, input, output, type, ReduceOp::kSum, 0, {}, pairs);
}

absl::Status RequestCommunicator::Broadcast(std::span<const std::byte> input,
                                            std::span<std::byte> output, ElementType type, int root,
                                            const ReplicaGroups& groups) {
  return Run(Kind::kBroadcast, input, output, type, ReduceOp::kSum, root, groups);
}

absl::Status RequestCommunicator::Run(Kind kind, std::span<const std::byte> input,
                                      std::span<std::byte> output, ElementType type, ReduceOp op,
                                      int root, const ReplicaGroups& groups,
                                      std::vector<std::pair<int, int>> pairs) {
  Request request;
  request.kind = kind;
  request.rank = rank_;
  request.type = type;
  request.op = op;
  request.root = root;
  request.input = input;
  request.output = output;
  request.pairs = std::move(pairs);
  if (absl::Status joined = JoinGroup(request, groups, world_size()); !joined.ok()) return joined;
  return Submit(request, groups);
}

}  // namespace vkspmd::collectives
