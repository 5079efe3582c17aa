// XXH3-64 through libxxhash's streaming state.
#include "src/io/checksum.h"

#include <xxhash.h>

#include <charconv>
#include <new>

#include "absl/strings/match.h"
#include "fmt/format.h"

namespace vkspmd::io {

Xxh3Hasher::Xxh3Hasher() : state_(XXH3_createState()) {
  if (state_ == nullptr) throw std::bad_alloc();
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_));
}

Xxh3Hasher::~Xxh3Hasher() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void Xxh3Hasher::Update(std::span<const uint8_t> bytes) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), bytes.data(), bytes.size());
}

uint64_t Xxh3Hasher::Digest() const {
  return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_));
}

uint64_t Xxh3(std::span<const uint8_t> bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

namespace {
constexpr char kPrefix[] = "xxh3:";
constexpr size_t kPrefixSize = sizeof(kPrefix) - 1;
}  // namespace

std::string ChecksumText(uint64_t checksum) { return fmt::format("{}{:016x}", kPrefix, checksum); }

std::optional<uint64_t> ParseChecksumText(absl::string_view text) {
  if (!absl::StartsWith(text, kPrefix) || text.size() != kPrefixSize + 16) return std::nullopt;
  uint64_t value = 0;
  const char* begin = text.data() + kPrefixSize;
  const char* end = text.data() + text.size();
  auto [ptr, error] = std::from_chars(begin, end, value, 16);
  if (error != std::errc() || ptr != end) return std::nullopt;
  return value;
}

}  // namespace vkspmd::io
