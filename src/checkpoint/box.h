// Index boxes of a tensor ([start, stop) per dim) and copying the elements of one box between
// row-major buffers that hold larger boxes: how a restore narrows the saved shards into the
// shards a new mesh and sharding want, and how a saved shard is cut out of a padded device shard.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vkspmd::checkpoint {

struct Box {
  std::vector<int64_t> start;
  std::vector<int64_t> stop;

  // The whole of a tensor of `shape`.
  static Box Whole(const std::vector<int64_t>& shape);
  int64_t rank() const { return static_cast<int64_t>(start.size()); }
  std::vector<int64_t> Extent() const;
  int64_t ElementCount() const;
  // "[0:4,2:8]".
  std::string ToString() const;
  bool operator==(const Box&) const = default;
};

// The common part of two boxes of the same rank; nullopt when they share no element.
std::optional<Box> Intersect(const Box& a, const Box& b);

// Copies the elements of `region` from `source` (a row-major buffer holding `source_box`, its
// dims `source_dims` which may exceed the box where the buffer is padded) into `target` (holding
// `target_box`, dims `target_dims`). `region` must lie inside both boxes.
void CopyRegion(const Box& region, const uint8_t* source, const Box& source_box,
                const std::vector<int64_t>& source_dims, uint8_t* target, const Box& target_box,
                const std::vector<int64_t>& target_dims, int64_t element_bytes);

}  // namespace vkspmd::checkpoint
