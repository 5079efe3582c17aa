// Box arithmetic and region copies, one contiguous innermost run at a time.
#include "src/checkpoint/box.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace vkspmd::checkpoint {

Box Box::Whole(const std::vector<int64_t>& shape) {
  return Box{std::vector<int64_t>(shape.size(), 0), shape};
}

std::vector<int64_t> Box::Extent() const {
  std::vector<int64_t> extent;
  for (size_t d = 0; d < start.size(); ++d) extent.push_back(stop[d] - start[d]);
  return extent;
}

int64_t Box::ElementCount() const {
  int64_t count = 1;
  for (size_t d = 0; d < start.size(); ++d) count *= stop[d] - start[d];
  return count;
}

std::string Box::ToString() const {
  std::vector<std::string> dims;
  for (size_t d = 0; d < start.size(); ++d) dims.push_back(absl::StrCat(start[d], ":", stop[d]));
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

std::optional<Box> Intersect(const Box& a, const Box& b) {
  Box result;
  for (size_t d = 0; d < a.start.size(); ++d) {
    const int64_t start = std::max(a.start[d], b.start[d]);
    const int64_t stop = std::min(a.stop[d], b.stop[d]);
    if (start >= stop) return std::nullopt;
    result.start.push_back(start);
    result.stop.push_back(stop);
  }
  return result;
}

namespace {

// Row-major element offset of global index `index` in a buffer holding `box` with dims `dims`.
int64_t Offset(const std::vector<int64_t>& index, const Box& box,
               const std::vector<int64_t>& dims) {
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d) offset = offset * dims[d] + (index[d] - box.start[d]);
  return offset;
}

}  // namespace

void CopyRegion(const Box& region, const uint8_t* source, const Box& source_box,
                const std::vector<int64_t>& source_dims, uint8_t* target, const Box& target_box,
                const std::vector<int64_t>& target_dims, int64_t element_bytes) {
  const size_t rank = region.start.size();
  if (region.ElementCount() == 0) return;
  if (rank == 0) {
    std::memcpy(target, source, static_cast<size_t>(element_bytes));
    return;
  }
  // Each run is the region's innermost dim; the outer dims are walked like an odometer.
  const int64_t run_bytes = (region.stop[rank - 1] - region.start[rank - 1]) * element_bytes;
  std::vector<int64_t> index = region.start;
  while (true) {
    std::memcpy(target + Offset(index, target_box, target_dims) * element_bytes,
                source + Offset(index, source_box, source_dims) * element_bytes,
                static_cast<size_t>(run_bytes));
    int64_t d = static_cast<int64_t>(rank) - 2;
    for (; d >= 0; --d) {
      if (++index[d] < region.stop[d]) break;
      index[d] = region.start[d];
    }
    if (d < 0) return;
  }
}

}  // namespace vkspmd::checkpoint
