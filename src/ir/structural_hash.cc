// Structural hash: FNV-1a (64-bit) of the module printed with positional names. The printer
// writes every attribute, shape, constant value and sharding, so hashing its text covers them all,
// and FNV has no per-process seed (unlike absl::Hash).
#include "src/ir/structural_hash.h"

#include "fmt/format.h"
#include "src/ir/printer.h"

namespace vkspmd::ir {

uint64_t StructuralHash(const Module& module) {
  PrintOptions options;
  options.canonical_names = true;
  const std::string text = PrintModule(module, options);
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::string StructuralHashHex(const Module& module) {
  return fmt::format("{:016x}", StructuralHash(module));
}

}  // namespace vkspmd::ir
