// XXH3-64 checksums of checkpoint shards and manifests (Debian's libxxhash), and their text form.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "absl/strings/string_view.h"

namespace vkspmd::io {

// Feeds bytes in any chunking; Digest() equals Xxh3 of everything fed so far.
class Xxh3Hasher {
 public:
  Xxh3Hasher();
  ~Xxh3Hasher();
  Xxh3Hasher(const Xxh3Hasher&) = delete;
  Xxh3Hasher& operator=(const Xxh3Hasher&) = delete;

  void Update(std::span<const uint8_t> bytes);
  uint64_t Digest() const;

 private:
  void* state_;  // XXH3_state_t, kept out of this header.
};

uint64_t Xxh3(std::span<const uint8_t> bytes);
inline uint64_t Xxh3(absl::string_view text) {
  return Xxh3(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

// "xxh3:00ff12..." (16 hex digits), and back (nullopt for anything else).
std::string ChecksumText(uint64_t checksum);
std::optional<uint64_t> ParseChecksumText(absl::string_view text);

}  // namespace vkspmd::io
