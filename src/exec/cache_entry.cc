// Cache keys and the entry header.
#include "src/exec/cache_entry.h"

#include <xxhash.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace vkspmd::exec {
namespace {

constexpr char kMagic[8] = {'V', 'K', 'S', 'P', 'M', 'D', 'C', '1'};
// magic, format version, reserved word, key (2 x 8), payload length, payload checksum.
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 16 + 8 + 8;

void AppendWord(std::vector<uint8_t>& out, uint64_t value, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

// Little-endian on every host, so a cache copied between machines reads the same.
uint64_t ReadWord(std::span<const uint8_t> in, size_t offset, size_t bytes) {
  uint64_t value = 0;
  for (size_t i = 0; i < bytes; ++i) value |= static_cast<uint64_t>(in[offset + i]) << (8 * i);
  return value;
}

}  // namespace

std::string CacheKey::Hex() const { return absl::StrFormat("%016x%016x", high, low); }

CacheKeyBuilder& CacheKeyBuilder::Add(absl::string_view field) {
  absl::StrAppend(&material_, field.size(), ":", field, ";");
  return *this;
}

CacheKeyBuilder& CacheKeyBuilder::Add(uint64_t field) { return Add(absl::StrCat(field)); }

CacheKeyBuilder& CacheKeyBuilder::Add(std::span<const uint8_t> field) {
  return Add(absl::string_view(reinterpret_cast<const char*>(field.data()), field.size()));
}

CacheKey CacheKeyBuilder::Build() const {
  const XXH128_hash_t hash = XXH3_128bits(material_.data(), material_.size());
  return {hash.high64, hash.low64};
}

std::vector<uint8_t> EncodeCacheEntry(const CacheKey& key, std::span<const uint8_t> payload) {
  std::vector<uint8_t> entry(kMagic, kMagic + sizeof(kMagic));
  entry.reserve(kHeaderBytes + payload.size());
  AppendWord(entry, kCacheFormatVersion, 4);
  AppendWord(entry, 0, 4);
  AppendWord(entry, key.high, 8);
  AppendWord(entry, key.low, 8);
  AppendWord(entry, payload.size(), 8);
  AppendWord(entry, XXH3_64bits(payload.data(), payload.size()), 8);
  entry.insert(entry.end(), payload.begin(), payload.end());
  return entry;
}

absl::StatusOr<std::vector<uint8_t>> DecodeCacheEntry(std::span<const uint8_t> entry,
                                                      const CacheKey& key) {
  if (entry.empty()) return absl::DataLossError("zero-length file");
  if (entry.size() < kHeaderBytes) {
    return absl::DataLossError(absl::StrCat("truncated header (", entry.size(), " bytes)"));
  }
  if (std::memcmp(entry.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::DataLossError("wrong magic (not a vkspmd cache entry)");
  }
  if (uint64_t version = ReadWord(entry, 8, 4); version != kCacheFormatVersion) {
    return absl::DataLossError(
        absl::StrCat("format version ", version, ", expected ", kCacheFormatVersion));
  }
  const CacheKey echoed{ReadWord(entry, 16, 8), ReadWord(entry, 24, 8)};
  if (!(echoed == key)) {
    return absl::DataLossError(
        absl::StrCat("its header holds key ", echoed.Hex(), ", not its file name's"));
  }
  const uint64_t length = ReadWord(entry, 32, 8);
  if (length != entry.size() - kHeaderBytes) {
    return absl::DataLossError(absl::StrCat(
        "the header says ", length, " payload bytes, the file has ", entry.size() - kHeaderBytes));
  }
  std::span<const uint8_t> payload = entry.subspan(kHeaderBytes);
  if (ReadWord(entry, 40, 8) != XXH3_64bits(payload.data(), payload.size())) {
    return absl::DataLossError("payload checksum mismatch");
  }
  return std::vector<uint8_t>(payload.begin(), payload.end());
}

}  // namespace vkspmd::exec
