// Philox4x32-10 and Threefry-2x32 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3")
// producing the bits of rng-bit-generator; 8- and 16-bit outputs take the low bits of one word,
// 64-bit ones two.
#include "src/interp/rng.h"

#include <array>
#include <bit>

#include "src/base/status_macros.h"
#include "src/ir/rng_expansion.h"

namespace vkspmd::interp {
namespace {

using Block = std::array<uint32_t, 4>;

Block Philox(Block counter, std::array<uint32_t, 2> key) {
  constexpr uint32_t kMultiplier0 = 0xD2511F53u, kMultiplier1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t product0 = uint64_t{kMultiplier0} * counter[0];
    const uint64_t product1 = uint64_t{kMultiplier1} * counter[2];
    counter = {static_cast<uint32_t>(product1 >> 32) ^ counter[1] ^ key[0],
               static_cast<uint32_t>(product1),
               static_cast<uint32_t>(product0 >> 32) ^ counter[3] ^ key[1],
               static_cast<uint32_t>(product0)};
    key[0] += kWeyl0;
    key[1] += kWeyl1;
  }
  return counter;
}

// Threefry-2x32 with 20 rounds: the block {low word, high word} of `counter` keyed by the low
// and high words of `key`.
std::array<uint32_t, 2> ThreeFry(uint64_t counter, uint64_t key) {
  constexpr std::array<int, 8> kRotations = {13, 15, 26, 6, 17, 29, 16, 24};
  const std::array<uint32_t, 3> ks = {
      static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32),
      0x1BD11BDAu ^ static_cast<uint32_t>(key) ^ static_cast<uint32_t>(key >> 32)};
  std::array<uint32_t, 2> x = {static_cast<uint32_t>(counter) + ks[0],
                               static_cast<uint32_t>(counter >> 32) + ks[1]};
  for (int block = 0; block < 5; ++block) {
    for (int round = 0; round < 4; ++round) {
      x[0] += x[1];
      x[1] = std::rotl(x[1], kRotations[(block % 2) * 4 + round]) ^ x[0];
    }
    x[0] += ks[(block + 1) % 3];
    x[1] += ks[(block + 2) % 3] + static_cast<uint32_t>(block + 1);
  }
  return x;
}

// rng_three_fry as XLA's expander (ir::ThreeFryPairing describes the layout).
absl::StatusOr<ir::Literal> EvaluateThreeFry(const ir::Instruction& instruction,
                                             const ir::Literal& state) {
  VKSPMD_RETURN_IF_ERROR(ir::CheckThreeFryState(state.shape(), instruction.Describe()));
  const uint64_t key = state.Get<uint64_t>(0);
  const uint64_t counter = state.Get<uint64_t>(1);
  ir::Literal bits(instruction.shape().tuple_elements()[1]);
  int64_t blocks = bits.ElementCount();
  if (ir::DTypeByteSize(bits.dtype()) == 8) {
    for (int64_t i = 0; i < blocks; ++i) {
      const std::array<uint32_t, 2> x = ThreeFry(counter + static_cast<uint64_t>(i), key);
      bits.SetFromUint64(i, uint64_t{x[0]} | uint64_t{x[1]} << 32);
    }
  } else {
    const ir::ThreeFryPairing pairing = ir::ThreeFryPairingOf(bits.shape());
    const int64_t half = (pairing.size + 1) / 2;
    blocks = pairing.Blocks();
    for (int64_t o = 0; o < pairing.outer; ++o) {
      for (int64_t h = 0; h < half; ++h) {
        for (int64_t k = 0; k < pairing.inner; ++k) {
          const auto block = static_cast<uint64_t>((o * half + h) * pairing.inner + k);
          const std::array<uint32_t, 2> x = ThreeFry(counter + block, key);
          for (int64_t b = 0; b < 2 && 2 * h + b < pairing.size; ++b) {
            bits.SetFromUint64((o * pairing.size + 2 * h + b) * pairing.inner + k, x[b]);
          }
        }
      }
    }
  }
  ir::Literal new_state = state;
  new_state.Set<uint64_t>(1, counter + static_cast<uint64_t>(blocks));
  return ir::Literal::Tuple({std::move(new_state), std::move(bits)});
}

}  // namespace

absl::StatusOr<ir::Literal> EvaluateRngBitGenerator(const ir::Instruction& instruction,
                                                    const ir::Literal& state) {
  if (instruction.attributes().rng_algorithm == ir::RngAlgorithm::kThreeFry) {
    return EvaluateThreeFry(instruction, state);
  }
  const int64_t words = state.ElementCount();
  auto state_word = [&](int64_t i) { return i < words ? state.Get<uint64_t>(i) : uint64_t{0}; };
  const uint64_t key = state_word(0);
  uint64_t counter_low = state_word(1), counter_high = state_word(2);
  ir::Literal bits(instruction.shape().tuple_elements()[1]);
  const int64_t byte_size = ir::DTypeByteSize(bits.dtype());
  Block block{};
  int next_word = 4;
  auto next = [&]() -> uint32_t {
    if (next_word == 4) {
      block =
          Philox({static_cast<uint32_t>(counter_low), static_cast<uint32_t>(counter_low >> 32),
                  static_cast<uint32_t>(counter_high), static_cast<uint32_t>(counter_high >> 32)},
                 {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
      if (++counter_low == 0) ++counter_high;
      next_word = 0;
    }
    return block[next_word++];
  };
  for (int64_t i = 0; i < bits.ElementCount(); ++i) {
    uint64_t value = next();
    if (byte_size == 8) value |= uint64_t{next()} << 32;
    bits.SetFromUint64(i, value);
  }
  ir::Literal new_state = state;
  if (words > 1) new_state.Set<uint64_t>(1, counter_low);
  if (words > 2) new_state.Set<uint64_t>(2, counter_high);
  return ir::Literal::Tuple({std::move(new_state), std::move(bits)});
}

}  // namespace vkspmd::interp
