// The HLO sharding value: construction, validation, expansion of iota device arrays and
// XLA's text form. Parsing lives in the HLO parser, which shares its lexer.
#include "src/ir/sharding.h"

#include <algorithm>
#include <numeric>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_join.h"
#include "fmt/format.h"

namespace vkspmd::ir {

std::vector<int64_t> DeviceArray::Flatten() const {
  if (!is_iota) return device_ids;
  const int64_t count = Product(iota_reshape_dims);
  if (iota_transpose_perm.empty()) {
    std::vector<int64_t> ids(count);
    std::iota(ids.begin(), ids.end(), 0);
    return ids;
  }
  // Element at transposed index t is the iota value at the untransposed index.
  std::vector<int64_t> transposed_dims;
  for (int64_t axis : iota_transpose_perm) transposed_dims.push_back(iota_reshape_dims[axis]);
  const std::vector<int64_t> strides = RowMajorStrides(iota_reshape_dims);
  std::vector<int64_t> ids;
  ids.reserve(count);
  std::vector<int64_t> index(transposed_dims.size(), 0);
  if (count == 0) return ids;
  do {
    int64_t value = 0;
    for (size_t i = 0; i < index.size(); ++i) value += index[i] * strides[iota_transpose_perm[i]];
    ids.push_back(value);
  } while (NextIndex(transposed_dims, index));
  return ids;
}

absl::Status DeviceArray::Validate() const {
  for (int64_t dimension : dimensions) {
    if (dimension <= 0) return absl::InvalidArgumentError("device array dimensions must be > 0");
  }
  const int64_t count = Product(dimensions);
  if (!is_iota) {
    if (static_cast<int64_t>(device_ids.size()) != count) {
      return absl::InvalidArgumentError(fmt::format("device array [{}] needs {} device ids, got {}",
                                                    absl::StrJoin(dimensions, ","), count,
                                                    device_ids.size()));
    }
    absl::flat_hash_set<int64_t> seen;
    for (int64_t id : device_ids) {
      if (id < 0) {
        return absl::InvalidArgumentError(fmt::format(
            "device array [{}] has a negative device id {}", absl::StrJoin(dimensions, ","), id));
      }
      if (!seen.insert(id).second) {
        return absl::InvalidArgumentError(fmt::format("device array [{}] lists device {} twice",
                                                      absl::StrJoin(dimensions, ","), id));
      }
    }
    return absl::OkStatus();
  }
  for (int64_t dimension : iota_reshape_dims) {
    if (dimension <= 0) return absl::InvalidArgumentError("iota reshape dims must be > 0");
  }
  if (Product(iota_reshape_dims) != count) {
    return absl::InvalidArgumentError(
        fmt::format("iota device array [{}]<=[{}]: the reshape has {} devices, the array {}",
                    absl::StrJoin(dimensions, ","), absl::StrJoin(iota_reshape_dims, ","),
                    Product(iota_reshape_dims), count));
  }
  if (!iota_transpose_perm.empty()) {
    std::vector<int64_t> sorted = iota_transpose_perm;
    std::sort(sorted.begin(), sorted.end());
    bool is_permutation = sorted.size() == iota_reshape_dims.size();
    for (size_t i = 0; is_permutation && i < sorted.size(); ++i) {
      is_permutation = sorted[i] == static_cast<int64_t>(i);
    }
    if (!is_permutation) {
      return absl::InvalidArgumentError(
          fmt::format("T({}) is not a permutation of the {} iota reshape dims",
                      absl::StrJoin(iota_transpose_perm, ","), iota_reshape_dims.size()));
    }
  }
  return absl::OkStatus();
}

std::string DeviceArray::ToString() const {
  std::string text = fmt::format("[{}]", absl::StrJoin(dimensions, ","));
  if (!is_iota) return text + absl::StrJoin(device_ids, ",");
  text += fmt::format("<=[{}]", absl::StrJoin(iota_reshape_dims, ","));
  if (!iota_transpose_perm.empty()) {
    text += fmt::format("T({})", absl::StrJoin(iota_transpose_perm, ","));
  }
  return text;
}

bool DeviceArray::operator==(const DeviceArray& other) const {
  return dimensions == other.dimensions && Flatten() == other.Flatten();
}

Sharding Sharding::Replicated() { return Sharding(); }

Sharding Sharding::Maximal(int64_t device) {
  Sharding sharding;
  sharding.kind_ = Kind::kMaximal;
  sharding.maximal_device_ = device;
  return sharding;
}

Sharding Sharding::Manual() {
  Sharding sharding;
  sharding.kind_ = Kind::kManual;
  return sharding;
}

Sharding Sharding::Tiled(DeviceArray tiles, bool last_tile_dim_replicate,
                         std::vector<SubgroupType> subgroup_types) {
  Sharding sharding;
  sharding.kind_ = Kind::kTiled;
  sharding.tile_assignment_ = std::move(tiles);
  sharding.last_tile_dim_replicate_ = last_tile_dim_replicate;
  sharding.subgroup_types_ = std::move(subgroup_types);
  return sharding;
}

Sharding Sharding::Tuple(std::vector<Sharding> elements) {
  Sharding sharding;
  sharding.kind_ = Kind::kTuple;
  sharding.tuple_elements_ = std::move(elements);
  return sharding;
}

int64_t Sharding::TiledDataRank() const {
  return static_cast<int64_t>(tile_assignment_.dimensions.size()) -
         (last_tile_dim_replicate_ ? 1 : 0) - static_cast<int64_t>(subgroup_types_.size());
}

std::optional<std::vector<int64_t>> Sharding::TileIndexForDevice(int64_t device) const {
  if (kind_ != Kind::kTiled) return std::vector<int64_t>{};
  const std::vector<int64_t> ids = tile_assignment_.Flatten();
  const auto found = std::find(ids.begin(), ids.end(), device);
  if (found == ids.end()) return std::nullopt;
  const std::vector<int64_t>& dims = tile_assignment_.dimensions;
  std::vector<int64_t> index(dims.size(), 0);
  int64_t linear = found - ids.begin();
  for (int64_t i = static_cast<int64_t>(dims.size()) - 1; i >= 0; --i) {
    index[i] = linear % dims[i];
    linear /= dims[i];
  }
  return index;
}

Shape Sharding::TileShape(const Shape& shape) const {
  if (kind_ != Kind::kTiled) return shape;
  std::vector<int64_t> dims = shape.dimensions();
  for (int64_t i = 0; i < TiledDataRank() && i < shape.rank(); ++i) {
    const int64_t tiles = tile_assignment_.dimensions[i];
    dims[i] = (dims[i] + tiles - 1) / tiles;
  }
  return Shape(shape.dtype(), dims);
}

std::vector<int64_t> Sharding::TileOffsetForIndex(const Shape& shape,
                                                  const std::vector<int64_t>& index) const {
  std::vector<int64_t> offsets(shape.rank(), 0);
  if (kind_ != Kind::kTiled) return offsets;
  const Shape tile = TileShape(shape);
  for (int64_t i = 0; i < TiledDataRank() && i < shape.rank(); ++i) {
    offsets[i] = std::min(index[i] * tile.dimension(i), shape.dimension(i));
  }
  return offsets;
}

std::vector<int64_t> Sharding::TileLimitForIndex(const Shape& shape,
                                                 const std::vector<int64_t>& index) const {
  if (kind_ != Kind::kTiled) return shape.dimensions();
  std::vector<int64_t> limits = TileOffsetForIndex(shape, index);
  const Shape tile = TileShape(shape);
  for (int64_t i = 0; i < shape.rank(); ++i) {
    limits[i] = std::min(limits[i] + tile.dimension(i), shape.dimension(i));
  }
  return limits;
}

std::vector<int64_t> Sharding::TileOffsetForDevice(const Shape& shape, int64_t device) const {
  const std::optional<std::vector<int64_t>> index = TileIndexForDevice(device);
  if (!index.has_value()) return std::vector<int64_t>(shape.rank(), 0);
  return TileOffsetForIndex(shape, *index);
}

std::vector<int64_t> Sharding::TileLimitForDevice(const Shape& shape, int64_t device) const {
  if (kind_ != Kind::kTiled) return shape.dimensions();
  const std::optional<std::vector<int64_t>> index = TileIndexForDevice(device);
  if (!index.has_value()) return std::vector<int64_t>(shape.rank(), 0);
  return TileLimitForIndex(shape, *index);
}

int64_t Sharding::NumTiles() const {
  if (kind_ != Kind::kTiled) return 1;
  int64_t tiles = 1;
  for (int64_t i = 0; i < TiledDataRank(); ++i) tiles *= tile_assignment_.dimensions[i];
  return tiles;
}

int64_t Sharding::TotalNumTiles() const {
  if (kind_ != Kind::kTiled) return 1;
  return Product(tile_assignment_.dimensions);
}

int64_t Sharding::DeviceForTileIndex(const std::vector<int64_t>& index) const {
  if (kind_ == Kind::kMaximal) return maximal_device_;
  if (kind_ != Kind::kTiled) return 0;
  int64_t linear = 0;
  for (size_t i = 0; i < index.size(); ++i) {
    linear = linear * tile_assignment_.dimensions[i] + index[i];
  }
  return tile_assignment_.Flatten()[linear];
}

bool Sharding::UsesDevice(int64_t device) const {
  switch (kind_) {
    case Kind::kMaximal:
      return device == maximal_device_;
    case Kind::kTiled:
      return TileIndexForDevice(device).has_value();
    case Kind::kTuple:
      return std::any_of(tuple_elements_.begin(), tuple_elements_.end(),
                         [device](const Sharding& element) { return element.UsesDevice(device); });
    default:
      return true;
  }
}

std::vector<int64_t> Sharding::DevicesHoldingSameTile(
    int64_t device, const std::vector<int64_t>& all_devices) const {
  if (!UsesDevice(device)) return {};
  if (kind_ == Kind::kReplicated || kind_ == Kind::kManual) return all_devices;
  if (kind_ != Kind::kTiled) return {device};
  std::vector<int64_t> index = *TileIndexForDevice(device);
  const int64_t data_rank = TiledDataRank();
  std::vector<int64_t> devices;
  std::vector<int64_t> replication(tile_assignment_.dimensions.begin() + data_rank,
                                   tile_assignment_.dimensions.end());
  std::vector<int64_t> position(replication.size(), 0);
  do {
    std::copy(position.begin(), position.end(), index.begin() + data_rank);
    devices.push_back(DeviceForTileIndex(index));
  } while (NextIndex(replication, position));
  return devices;
}

absl::Status Sharding::ValidateForShape(const Shape& shape) const {
  if (kind_ == Kind::kTuple) {
    if (!shape.IsTuple() || shape.tuple_elements().size() != tuple_elements_.size()) {
      return absl::InvalidArgumentError(
          fmt::format("tuple sharding {} does not fit shape {}", ToString(), shape.ToString()));
    }
    for (size_t i = 0; i < tuple_elements_.size(); ++i) {
      absl::Status status = tuple_elements_[i].ValidateForShape(shape.tuple_elements()[i]);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }
  if (kind_ != Kind::kTiled) return absl::OkStatus();
  if (shape.IsTuple() || TiledDataRank() != shape.rank()) {
    return absl::InvalidArgumentError(
        fmt::format("sharding {} tiles {} dims but shape {} has rank {}", ToString(),
                    TiledDataRank(), shape.ToString(), shape.IsTuple() ? 0 : shape.rank()));
  }
  return absl::OkStatus();
}

absl::Status Sharding::ValidateDevices(int64_t device_count) const {
  const auto out_of_range = [&](int64_t device) {
    return absl::InvalidArgumentError(
        fmt::format("sharding {} uses device {}, but the module has num_partitions={} (devices "
                    "0..{})",
                    ToString(), device, device_count, device_count - 1));
  };
  switch (kind_) {
    case Kind::kMaximal:
      if (maximal_device_ < 0 || maximal_device_ >= device_count) {
        return out_of_range(maximal_device_);
      }
      return absl::OkStatus();
    case Kind::kTiled: {
      if (!tile_assignment_.is_iota) {
        for (int64_t device : tile_assignment_.device_ids) {
          if (device < 0 || device >= device_count) return out_of_range(device);
        }
      } else if (Product(tile_assignment_.dimensions) > device_count) {
        return out_of_range(Product(tile_assignment_.dimensions) - 1);
      }
      return tile_assignment_.Validate();
    }
    case Kind::kTuple:
      for (const Sharding& element : tuple_elements_) {
        absl::Status status = element.ValidateDevices(device_count);
        if (!status.ok()) return status;
      }
      return absl::OkStatus();
    default:
      return absl::OkStatus();
  }
}

std::string Sharding::ToString() const {
  switch (kind_) {
    case Kind::kReplicated:
      return "{replicated}";
    case Kind::kMaximal:
      return fmt::format("{{maximal device={}}}", maximal_device_);
    case Kind::kManual:
      return "{manual}";
    case Kind::kTuple: {
      std::vector<std::string> parts;
      for (const Sharding& element : tuple_elements_) parts.push_back(element.ToString());
      return fmt::format("{{{}}}", absl::StrJoin(parts, ", "));
    }
    case Kind::kTiled:
      break;
  }
  std::string text = "{devices=" + tile_assignment_.ToString();
  if (last_tile_dim_replicate_) text += " last_tile_dim_replicate";
  if (!subgroup_types_.empty()) {
    std::vector<std::string> names;
    for (SubgroupType type : subgroup_types_) {
      names.push_back(type == SubgroupType::kManual ? "manual" : "replicated");
    }
    text += fmt::format(" last_tile_dims={{{}}}", absl::StrJoin(names, ", "));
  }
  return text + "}";
}

bool Sharding::operator==(const Sharding& other) const {
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kReplicated:
    case Kind::kManual:
      return true;
    case Kind::kMaximal:
      return maximal_device_ == other.maximal_device_;
    case Kind::kTuple:
      return tuple_elements_ == other.tuple_elements_;
    case Kind::kTiled:
      return tile_assignment_ == other.tile_assignment_ &&
             last_tile_dim_replicate_ == other.last_tile_dim_replicate_ &&
             subgroup_types_ == other.subgroup_types_;
  }
  return false;
}

}  // namespace vkspmd::ir
