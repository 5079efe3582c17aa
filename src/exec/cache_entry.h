// The persistent compile cache's key (XXH3-128 over length-prefixed fields) and its entry format:
// a header {magic "VKSPMDC1", format version, the key echoed, payload length, XXH3-64 of the
// payload} before the payload, so a damaged, truncated or misplaced file is recognised as such.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vkspmd::exec {

// Bumped whenever the header or any payload's layout changes: old entries then miss.
inline constexpr uint32_t kCacheFormatVersion = 1;

struct CacheKey {
  uint64_t high = 0;
  uint64_t low = 0;
  // 32 lowercase hex digits: the entry's file name.
  std::string Hex() const;
  bool operator==(const CacheKey&) const = default;
};

// Hashes fields one after another; each is length-prefixed, so ("ab", "c") and ("a", "bc")
// give different keys.
class CacheKeyBuilder {
 public:
  CacheKeyBuilder& Add(absl::string_view field);
  CacheKeyBuilder& Add(uint64_t field);
  CacheKeyBuilder& Add(std::span<const uint8_t> field);
  CacheKey Build() const;

 private:
  std::string material_;
};

// The header followed by the payload.
std::vector<uint8_t> EncodeCacheEntry(const CacheKey& key, std::span<const uint8_t> payload);

// The payload of an entry read from the file named for `key`; DATA_LOSS saying what is wrong
// (zero-length file, truncated header, wrong magic, format version, another key, length,
// checksum) otherwise.
absl::StatusOr<std::vector<uint8_t>> DecodeCacheEntry(std::span<const uint8_t> entry,
                                                      const CacheKey& key);

}  // namespace vkspmd::exec
