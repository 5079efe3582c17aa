// Block copies between a full array and a device's shard, one contiguous innermost run at a time.
#include "src/exec/sharded_value.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace vkspmd::exec {
namespace {

// The device's valid block: where it starts in the full array and how many elements per dim.
struct Block {
  std::vector<int64_t> start, size;
  bool empty() const {
    for (int64_t extent : size) {
      if (extent == 0) return true;
    }
    return false;
  }
};

Block ValidBlock(const ir::Shape& shape, const spmd::AxisSharding& sharding, const spmd::Mesh& mesh,
                 int64_t device) {
  Block block;
  for (int64_t d = 0; d < shape.rank(); ++d) {
    block.start.push_back(spmd::ShardOffset(shape, sharding, d, mesh, device));
    block.size.push_back(spmd::ShardValidSize(shape, sharding, d, mesh, device));
  }
  return block;
}

// Copies `block` between the full array and the shard (to the shard when `to_shard`).
void CopyBlock(const Block& block, const std::vector<int64_t>& full_dims,
               const std::vector<int64_t>& shard_dims, size_t element_bytes, uint8_t* full,
               uint8_t* shard, bool to_shard) {
  const int64_t rank = static_cast<int64_t>(block.size.size());
  if (block.empty()) return;
  if (rank == 0) {
    std::memcpy(to_shard ? shard : full, to_shard ? full : shard, element_bytes);
    return;
  }
  const std::vector<int64_t> full_strides = ir::RowMajorStrides(full_dims),
                             shard_strides = ir::RowMajorStrides(shard_dims);
  const size_t run = static_cast<size_t>(block.size[rank - 1]) * element_bytes;
  std::vector<int64_t> index(rank - 1, 0);  // Over every dim but the innermost.
  for (;;) {
    int64_t global = block.start[rank - 1], local = 0;
    for (int64_t d = 0; d + 1 < rank; ++d) {
      global += (block.start[d] + index[d]) * full_strides[d];
      local += index[d] * shard_strides[d];
    }
    uint8_t* full_run = full + global * element_bytes;
    uint8_t* shard_run = shard + local * element_bytes;
    std::memcpy(to_shard ? shard_run : full_run, to_shard ? full_run : shard_run, run);
    int64_t d = rank - 2;
    while (d >= 0 && ++index[d] == block.size[d]) index[d--] = 0;
    if (d < 0) return;
  }
}

// The shard geometry is indexed by device id; these functions index devices 0..N-1.
absl::Status CheckSharding(const ir::Shape& shape, const spmd::AxisSharding& sharding,
                           const spmd::Mesh& mesh) {
  if (sharding.manual) {
    return absl::InvalidArgumentError("a manual sharding has no shards to split or assemble");
  }
  if (!sharding.maximal_device.has_value() &&
      static_cast<int64_t>(sharding.dims.size()) != shape.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a sharding of rank ", sharding.dims.size(), " for ", shape.ToString()));
  }
  if (sharding.maximal_device.has_value() &&
      (*sharding.maximal_device < 0 || *sharding.maximal_device >= mesh.device_count())) {
    return absl::InvalidArgumentError(absl::StrCat("maximal device ", *sharding.maximal_device,
                                                   " is not in mesh ", mesh.ToString()));
  }
  std::vector<int64_t> ids = mesh.device_ids();
  std::sort(ids.begin(), ids.end());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != static_cast<int64_t>(i)) {
      return absl::UnimplementedError(
          absl::StrCat("mesh ", mesh.ToString(), " does not use devices 0..", ids.size() - 1,
                       "; sharding values over a subset of the devices is not supported yet"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ir::Literal> ShardLiteral(const ir::Literal& full,
                                         const spmd::AxisSharding& sharding, const spmd::Mesh& mesh,
                                         int64_t device) {
  if (full.shape().IsTuple()) {
    return absl::UnimplementedError("sharding a tuple value: shard each element");
  }
  if (absl::Status checked = CheckSharding(full.shape(), sharding, mesh); !checked.ok()) {
    return checked;
  }
  if (device < 0 || device >= mesh.device_count()) {
    return absl::InvalidArgumentError(
        absl::StrCat("device ", device, " is not in mesh ", mesh.ToString()));
  }
  if (sharding.maximal_device.has_value()) {
    if (*sharding.maximal_device == device) return full;
    return ir::Literal(full.shape());  // Zeros: the value lives on another device.
  }
  ir::Literal shard(spmd::ShardShape(full.shape(), sharding, mesh));
  const Block block = ValidBlock(full.shape(), sharding, mesh, device);
  CopyBlock(block, full.shape().dimensions(), shard.shape().dimensions(),
            static_cast<size_t>(ir::DTypeByteSize(full.dtype())),
            const_cast<uint8_t*>(full.bytes().data()), shard.bytes().data(), /*to_shard=*/true);
  return shard;
}

absl::StatusOr<ir::Literal> AssembleLiteral(const std::vector<ir::Literal>& shards,
                                            const ir::Shape& shape,
                                            const spmd::AxisSharding& sharding,
                                            const spmd::Mesh& mesh) {
  if (static_cast<int64_t>(shards.size()) != mesh.device_count()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "assembling ", shards.size(), " shards over a mesh of ", mesh.device_count(), " devices"));
  }
  if (absl::Status checked = CheckSharding(shape, sharding, mesh); !checked.ok()) return checked;
  if (sharding.maximal_device.has_value()) return shards[*sharding.maximal_device];
  const ir::Shape shard_shape = spmd::ShardShape(shape, sharding, mesh);
  ir::Literal full(shape);
  // Later devices first, so that the first holder of a replicated element writes it last.
  for (int64_t device = mesh.device_count() - 1; device >= 0; --device) {
    if (shards[device].shape() != shard_shape) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", device, "'s shard is ", shards[device].shape().ToString(),
                       "; the sharding gives ", shard_shape.ToString()));
    }
    CopyBlock(ValidBlock(shape, sharding, mesh, device), shape.dimensions(),
              shard_shape.dimensions(), static_cast<size_t>(ir::DTypeByteSize(shape.dtype())),
              full.bytes().data(), const_cast<uint8_t*>(shards[device].bytes().data()),
              /*to_shard=*/false);
  }
  return full;
}

}  // namespace vkspmd::exec
