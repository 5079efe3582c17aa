// Host-side collective steps: IR semantics mapped onto the Communicator.
#include "src/exec/collective_step.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "src/ir/collective_groups.h"
#include "src/ir/module.h"
#include "src/ir/status_macros.h"

namespace vkspmd::exec {
namespace {

using collectives::ElementType;
using collectives::ReduceOp;
using ir::Opcode;

// Copies chunk k of every outer row between the row-major and the chunk-major layouts.
std::vector<std::byte> Relayout(const std::vector<std::byte>& bytes,
                                const std::vector<int64_t>& dims, int64_t dim, int64_t n,
                                size_t element_bytes, bool pack) {
  const int64_t outer = ir::Product(absl::MakeConstSpan(dims).subspan(0, dim));
  const int64_t length = dims[dim];
  const int64_t chunk = length / n;
  const size_t inner =
      static_cast<size_t>(ir::Product(absl::MakeConstSpan(dims).subspan(dim + 1))) * element_bytes;
  const size_t block = static_cast<size_t>(chunk) * inner;
  std::vector<std::byte> result(bytes.size());
  for (int64_t k = 0; k < n; ++k) {
    for (int64_t o = 0; o < outer; ++o) {
      const size_t row_major = static_cast<size_t>(o * length + k * chunk) * inner;
      const size_t chunk_major = static_cast<size_t>(k * outer + o) * block;
      if (block == 0) continue;
      if (pack) {
        std::memcpy(result.data() + chunk_major, bytes.data() + row_major, block);
      } else {
        std::memcpy(result.data() + row_major, bytes.data() + chunk_major, block);
      }
    }
  }
  return result;
}

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

std::vector<std::byte> PackChunks(const std::vector<std::byte>& bytes,
                                  const std::vector<int64_t>& dims, int64_t dim, int64_t n,
                                  size_t element_bytes) {
  return Relayout(bytes, dims, dim, n, element_bytes, /*pack=*/true);
}

std::vector<std::byte> UnpackChunks(const std::vector<std::byte>& bytes,
                                    const std::vector<int64_t>& dims, int64_t dim, int64_t n,
                                    size_t element_bytes) {
  return Relayout(bytes, dims, dim, n, element_bytes, /*pack=*/false);
}

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

absl::StatusOr<std::vector<std::byte>> RunCollectiveStep(const CollectiveStep& step,
                                                         const std::vector<std::byte>& input,
                                                         collectives::Communicator* communicator) {
  const ir::Instruction& collective = *step.collective;
  if (communicator == nullptr || communicator->world_size() != step.world_size) {
    return absl::FailedPreconditionError(
        absl::StrCat(collective.Describe(), " needs all ", step.world_size,
                     " devices of the program (run it with a mesh of that many devices)"));
  }
  std::vector<std::byte> output(static_cast<size_t>(collective.shape().ElementCount()) *
                                step.element_bytes);
  const std::vector<int64_t>& operand_dims = collective.operand(0)->shape().dimensions();
  const std::vector<int64_t>& result_dims = collective.shape().dimensions();
  const int64_t n = step.group_size;
  switch (collective.opcode()) {
    case Opcode::kCollectivePermute:
      VKSPMD_RETURN_IF_ERROR(communicator->CollectivePermute(input, output, step.type, step.pairs));
      return output;
    case Opcode::kAllReduce:
      VKSPMD_RETURN_IF_ERROR(
          communicator->AllReduce(input, output, step.type, step.op, step.groups));
      return output;
    case Opcode::kAllGather: {
      std::vector<std::byte> gathered(output.size());
      VKSPMD_RETURN_IF_ERROR(communicator->AllGather(input, gathered, step.type, step.groups));
      return UnpackChunks(gathered, result_dims, step.dim, n, step.element_bytes);
    }
    case Opcode::kReduceScatter: {
      std::vector<std::byte> packed =
          PackChunks(input, operand_dims, step.dim, n, step.element_bytes);
      VKSPMD_RETURN_IF_ERROR(
          communicator->ReduceScatter(packed, output, step.type, step.op, step.groups));
      return output;
    }
    default: {  // All-to-all (PlanCollectiveStep admits nothing else).
      std::vector<std::byte> packed =
          PackChunks(input, operand_dims, step.dim, n, step.element_bytes);
      VKSPMD_RETURN_IF_ERROR(communicator->AllToAll(packed, output, step.type, step.groups));
      return UnpackChunks(output, result_dims, step.dim, n, step.element_bytes);
    }
  }
}

}  // namespace vkspmd::exec
