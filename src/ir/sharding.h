// The HLO sharding value (XLA's HloSharding): replicated, maximal, manual, tiled over a
// tile-assignment array (listed or iota form, optionally partially replicated), or a tuple.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "src/ir/shape.h"

namespace vkspmd::ir {

// Kinds of the trailing tile-assignment dims written as last_tile_dims={...}.
enum class SubgroupType { kReplicated, kManual };

// A device array kept either as a list of ids or in XLA's iota form
// iota(product(reshape_dims)).reshape(reshape_dims).transpose(transpose_perm).reshape(dims);
// the form is kept so that printing gives back what was parsed.
struct DeviceArray {
  std::vector<int64_t> dimensions;
  std::vector<int64_t> device_ids;  // used when !is_iota
  bool is_iota = false;
  std::vector<int64_t> iota_reshape_dims;
  std::vector<int64_t> iota_transpose_perm;  // empty means identity

  // The ids in row-major order of `dimensions`, whichever form is stored.
  std::vector<int64_t> Flatten() const;
  // Checks sizes and permutation; the message says what is inconsistent.
  absl::Status Validate() const;
  // "[2,2]0,1,2,3" or "[2,2]<=[2,2]T(1,0)" (the part after devices= / replica_groups=).
  std::string ToString() const;
  bool operator==(const DeviceArray& other) const;
};

class Sharding {
 public:
  enum class Kind { kReplicated, kMaximal, kManual, kTiled, kTuple };

  static Sharding Replicated();
  static Sharding Maximal(int64_t device);
  static Sharding Manual();
  // `tiles` has one dim per tensor dim, plus one if last_tile_dim_replicate, plus one per
  // subgroup type.
  static Sharding Tiled(DeviceArray tiles, bool last_tile_dim_replicate = false,
                        std::vector<SubgroupType> subgroup_types = {});
  static Sharding Tuple(std::vector<Sharding> elements);

  Kind kind() const { return kind_; }
  int64_t maximal_device() const { return maximal_device_; }
  const DeviceArray& tile_assignment() const { return tile_assignment_; }
  bool last_tile_dim_replicate() const { return last_tile_dim_replicate_; }
  const std::vector<SubgroupType>& subgroup_types() const { return subgroup_types_; }
  const std::vector<Sharding>& tuple_elements() const { return tuple_elements_; }

  // Rank of the tensor this sharding tiles: tile dims less the replication/subgroup dims.
  int64_t TiledDataRank() const;
  // Tile queries of a tiled sharding (XLA's HloSharding names). The tile index of a device has one
  // coordinate per tile-assignment dim (replication dims included); nullopt when the device holds
  // no tile. Tiles are ceil(dim / tiles) long; the last ones may overhang the dim, so offsets
  // and limits are clamped to it. Untiled shardings have one tile: the whole shape.
  std::optional<std::vector<int64_t>> TileIndexForDevice(int64_t device) const;
  Shape TileShape(const Shape& shape) const;
  std::vector<int64_t> TileOffsetForDevice(const Shape& shape, int64_t device) const;
  std::vector<int64_t> TileLimitForDevice(const Shape& shape, int64_t device) const;
  // The same from a full tile index (as TileIndexForDevice gives), without searching the tile
  // assignment for a device: what a walk over every tile uses.
  std::vector<int64_t> TileOffsetForIndex(const Shape& shape,
                                          const std::vector<int64_t>& index) const;
  std::vector<int64_t> TileLimitForIndex(const Shape& shape,
                                         const std::vector<int64_t>& index) const;
  // Number of distinct tiles (replication dims excluded).
  int64_t NumTiles() const;
  // Number of tile-assignment entries (replication dims included): devices that hold a tile.
  int64_t TotalNumTiles() const;
  // The device at a full tile index (replication dims included), as XLA's DeviceForTileIndex.
  int64_t DeviceForTileIndex(const std::vector<int64_t>& index) const;
  // Whether `device` holds any data under this sharding.
  bool UsesDevice(int64_t device) const;
  // Devices that hold the same data as `device` (itself included), in tile-assignment order: its
  // replication group under partial replication, every device when replicated, just the device
  // when tiled or maximal. Empty when the device holds nothing.
  std::vector<int64_t> DevicesHoldingSameTile(int64_t device,
                                              const std::vector<int64_t>& all_devices) const;
  bool IsReplicated() const { return kind_ == Kind::kReplicated; }
  // Replicated or maximal: one tile that is the whole value.
  bool IsTileMaximal() const { return kind_ == Kind::kReplicated || kind_ == Kind::kMaximal; }
  bool HasPartialReplication() const { return kind_ == Kind::kTiled && last_tile_dim_replicate_; }

  // Checks that a sharding fits a value of `shape` (tile rank, tuple arity).
  absl::Status ValidateForShape(const Shape& shape) const;
  // Checks that every device id is one of 0..device_count-1 (the module's partitions) and that a
  // tile assignment lists each at most once.
  absl::Status ValidateDevices(int64_t device_count) const;

  // XLA's text form including braces: "{devices=[2,1]0,1}", "{{replicated}, {manual}}".
  std::string ToString() const;
  bool operator==(const Sharding& other) const;
  bool operator!=(const Sharding& other) const { return !(*this == other); }

 private:
  Kind kind_ = Kind::kReplicated;
  int64_t maximal_device_ = 0;
  DeviceArray tile_assignment_;
  bool last_tile_dim_replicate_ = false;
  std::vector<SubgroupType> subgroup_types_;
  std::vector<Sharding> tuple_elements_;
};

}  // namespace vkspmd::ir
