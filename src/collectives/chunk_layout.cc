// Chunk-major packing: one memcpy per (chunk, outer row) block.
#include "src/collectives/chunk_layout.h"

#include <cstring>

namespace vkspmd::collectives {
namespace {

int64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t product = 1;
  for (size_t i = begin; i < end; ++i) product *= dims[i];
  return product;
}

// Copies chunk k of every outer row between the row-major and the chunk-major layouts.
void Relayout(std::span<const std::byte> from, std::span<std::byte> to,
              const std::vector<int64_t>& dims, int64_t dim, int64_t n, size_t element_bytes,
              bool pack) {
  const int64_t outer = Product(dims, 0, dim);
  const int64_t length = dims[dim];
  const int64_t chunk = length / n;
  const size_t inner = static_cast<size_t>(Product(dims, dim + 1, dims.size())) * element_bytes;
  const size_t block = static_cast<size_t>(chunk) * inner;
  if (block == 0) return;
  for (int64_t k = 0; k < n; ++k) {
    for (int64_t o = 0; o < outer; ++o) {
      const size_t row_major = static_cast<size_t>(o * length + k * chunk) * inner;
      const size_t chunk_major = static_cast<size_t>(k * outer + o) * block;
      if (pack) {
        std::memcpy(to.data() + chunk_major, from.data() + row_major, block);
      } else {
        std::memcpy(to.data() + row_major, from.data() + chunk_major, block);
      }
    }
  }
}

}  // namespace

void PackChunks(std::span<const std::byte> bytes, std::span<std::byte> packed,
                const std::vector<int64_t>& dims, int64_t dim, int64_t n, size_t element_bytes) {
  Relayout(bytes, packed, dims, dim, n, element_bytes, /*pack=*/true);
}

void UnpackChunks(std::span<const std::byte> packed, std::span<std::byte> bytes,
                  const std::vector<int64_t>& dims, int64_t dim, int64_t n, size_t element_bytes) {
  Relayout(packed, bytes, dims, dim, n, element_bytes, /*pack=*/false);
}

bool ChunksAreContiguous(const std::vector<int64_t>& dims, int64_t dim) {
  return Product(dims, 0, dim) <= 1;
}

}  // namespace vkspmd::collectives
