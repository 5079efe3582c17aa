// Host-side collective steps: IR semantics mapped onto the Communicator.
#include "src/exec/collective_step.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/collectives/chunk_layout.h"
#include "src/ir/collective_groups.h"
#include "src/ir/module.h"

namespace vkspmd::exec {
namespace {

using collectives::ChunksAreContiguous;
using collectives::ElementType;
using collectives::PackChunks;
using collectives::ReduceOp;
using collectives::UnpackChunks;
using ir::Opcode;

absl::StatusOr<ElementType> ElementTypeOf(ir::DType type, uint32_t element_bytes) {
  switch (type) {
    case ir::DType::kPred:
      return element_bytes == 1 ? ElementType::kPred : ElementType::kU32;
    case ir::DType::kS8:
      return ElementType::kS8;
    case ir::DType::kU8:
      return ElementType::kU8;
    case ir::DType::kS16:
      return ElementType::kS16;
    case ir::DType::kU16:
      return ElementType::kU16;
    case ir::DType::kS32:
      return ElementType::kS32;
    case ir::DType::kU32:
      return ElementType::kU32;
    case ir::DType::kS64:
      return ElementType::kS64;
    case ir::DType::kU64:
      return ElementType::kU64;
    case ir::DType::kF32:
      return ElementType::kF32;
    case ir::DType::kF64:
      return ElementType::kF64;
    case ir::DType::kF16:
      return ElementType::kF16;
    case ir::DType::kBF16:
      return ElementType::kBF16;
    default:
      return absl::UnimplementedError(
          absl::StrCat("collectives on ", std::string(ir::DTypeName(type)), " are not supported"));
  }
}

absl::StatusOr<ReduceOp> ReduceOpOf(const ir::Instruction& collective, ir::DType type) {
  const ir::Instruction* root = collective.attributes().to_apply->root();
  const bool simple = root->operand_count() == 2 && root->operand(0) != root->operand(1) &&
                      root->operand(0)->opcode() == Opcode::kParameter &&
                      root->operand(1)->opcode() == Opcode::kParameter;
  if (!simple) {
    return absl::UnimplementedError(absl::StrCat(
        collective.Describe(), ": the reducer must combine its two parameters with one op"));
  }
  const Opcode opcode = root->opcode();
  ReduceOp op;
  switch (opcode) {
    case Opcode::kAdd:
      op = ReduceOp::kSum;
      break;
    case Opcode::kMultiply:
      op = ReduceOp::kProduct;
      break;
    case Opcode::kMaximum:
      op = ReduceOp::kMax;
      break;
    case Opcode::kMinimum:
      op = ReduceOp::kMin;
      break;
    case Opcode::kAnd:
      op = ReduceOp::kAnd;
      break;
    case Opcode::kOr:
      op = ReduceOp::kOr;
      break;
    default:
      return absl::UnimplementedError(absl::StrCat(collective.Describe(), ": unsupported reducer"));
  }
  if (type == ir::DType::kPred) {  // 0/1 values: sum and max are "or", product and min "and".
    op = (op == ReduceOp::kSum || op == ReduceOp::kMax || op == ReduceOp::kOr) ? ReduceOp::kOr
                                                                               : ReduceOp::kAnd;
  }
  return op;
}

}  // namespace

absl::StatusOr<CollectiveStep> PlanCollectiveStep(const ir::Instruction& collective,
                                                  uint32_t element_bytes,
                                                  const DeviceAssignment& assignment,
                                                  int64_t replica_count, int64_t partition_count) {
  CollectiveStep step;
  step.collective = &collective;
  step.element_bytes = element_bytes;
  step.world_size = replica_count * partition_count;
  const ir::DType dtype = collective.shape().dtype();
  VKSPMD_ASSIGN_OR_RETURN(step.type, ElementTypeOf(dtype, element_bytes));
  const Opcode opcode = collective.opcode();
  if (opcode == Opcode::kAllReduce || opcode == Opcode::kReduceScatter) {
    VKSPMD_ASSIGN_OR_RETURN(step.op, ReduceOpOf(collective, dtype));
  }
  if (!collective.attributes().dimensions.empty()) {
    step.dim = collective.attributes().dimensions[0];
  }
  if (opcode == Opcode::kCollectivePermute) {
    VKSPMD_ASSIGN_OR_RETURN(auto device_pairs, ir::CollectivePermuteDevicePairs(
                                                   collective, replica_count, partition_count));
    for (auto [source, target] : device_pairs) {
      step.pairs.emplace_back(static_cast<int>(source), static_cast<int>(target));
    }
    return step;
  }
  if (opcode != Opcode::kAllReduce && opcode != Opcode::kAllGather &&
      opcode != Opcode::kReduceScatter && opcode != Opcode::kAllToAll) {
    return absl::UnimplementedError(
        absl::StrCat(collective.Describe(), " is not a collective the host runs"));
  }
  VKSPMD_ASSIGN_OR_RETURN(auto device_groups,
                          ir::CollectiveDeviceGroups(collective, replica_count, partition_count));
  const int64_t me = assignment.replica * partition_count + assignment.partition;
  for (const std::vector<int64_t>& group : device_groups) {
    step.groups.emplace_back(group.begin(), group.end());
    if (std::find(group.begin(), group.end(), me) != group.end()) {
      step.group_size = static_cast<int64_t>(group.size());
    }
  }
  return step;
}

bool CanShareBucket(const CollectiveStep& head, uint64_t head_bytes, const CollectiveStep& next,
                    uint64_t next_bytes) {
  const auto all_reduce = [](const CollectiveStep& step) {
    return step.collective != nullptr && step.collective->opcode() == Opcode::kAllReduce;
  };
  return all_reduce(head) && all_reduce(next) && head.type == next.type &&
         head.element_bytes == next.element_bytes && head.op == next.op &&
         head.groups == next.groups && head.world_size == next.world_size &&
         head_bytes <= kMaxBucketMemberBytes && next_bytes <= kMaxBucketMemberBytes;
}

absl::Status RunCollectiveStep(const CollectiveStep& step, std::span<const std::byte> input,
                               std::span<std::byte> output,
                               collectives::Communicator* communicator) {
  const ir::Instruction& collective = *step.collective;
  if (communicator == nullptr || communicator->world_size() != step.world_size) {
    return absl::FailedPreconditionError(
        absl::StrCat(collective.Describe(), " needs all ", step.world_size,
                     " devices of the program (run it with a mesh of that many devices)"));
  }
  const std::vector<int64_t>& operand_dims = collective.operand(0)->shape().dimensions();
  const std::vector<int64_t>& result_dims = collective.shape().dimensions();
  const int64_t n = step.group_size;
  const size_t eb = step.element_bytes;
  switch (collective.opcode()) {
    case Opcode::kCollectivePermute:
      return communicator->CollectivePermute(input, output, step.type, step.pairs);
    case Opcode::kAllReduce:
      return communicator->AllReduce(input, output, step.type, step.op, step.groups);
    case Opcode::kAllGather: {
      // Chunks along an inner dim are gathered chunk-major, then put in place.
      if (ChunksAreContiguous(result_dims, step.dim)) {
        return communicator->AllGather(input, output, step.type, step.groups);
      }
      std::vector<std::byte> gathered(output.size());
      VKSPMD_RETURN_IF_ERROR(communicator->AllGather(input, gathered, step.type, step.groups));
      UnpackChunks(gathered, output, result_dims, step.dim, n, eb);
      return absl::OkStatus();
    }
    case Opcode::kReduceScatter: {
      if (ChunksAreContiguous(operand_dims, step.dim)) {
        return communicator->ReduceScatter(input, output, step.type, step.op, step.groups);
      }
      std::vector<std::byte> packed(input.size());
      PackChunks(input, packed, operand_dims, step.dim, n, eb);
      return communicator->ReduceScatter(packed, output, step.type, step.op, step.groups);
    }
    default: {  // All-to-all (PlanCollectiveStep admits nothing else).
      if (ChunksAreContiguous(operand_dims, step.dim)) {
        return communicator->AllToAll(input, output, step.type, step.groups);
      }
      std::vector<std::byte> packed(input.size()), exchanged(output.size());
      PackChunks(input, packed, operand_dims, step.dim, n, eb);
      VKSPMD_RETURN_IF_ERROR(communicator->AllToAll(packed, exchanged, step.type, step.groups));
      UnpackChunks(exchanged, output, result_dims, step.dim, n, eb);
      return absl::OkStatus();
    }
  }
}

}  // namespace vkspmd::exec
