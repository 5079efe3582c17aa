// The Megatron MLP of the manual-sharding tests (manual_test.cc, manual_auto_test.cc):
// tanh(x W1) W2 on small distinct values, with the cotangent its gradients are taken against.
#pragma once

#include <cstdint>
#include <vector>

#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {

// Small distinct values (exact in f32 sums) so that gradients differ element by element.
inline std::vector<float> Pattern(int64_t count, int64_t seed) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i) values[i] = static_cast<float>((i * 7 + seed) % 11) - 5;
  return values;
}

inline constexpr int64_t kBatch = 4, kIn = 6, kHidden = 8, kOut = 3;

struct MlpInputs {
  Tensor x, w1, w2, cotangent;
};

inline MlpInputs Inputs() {
  return {tensor(Pattern(kBatch * kIn, 1), {kBatch, kIn}) * 0.25,
          tensor(Pattern(kIn * kHidden, 2), {kIn, kHidden}) * 0.125,
          tensor(Pattern(kHidden * kOut, 3), {kHidden, kOut}) * 0.125,
          tensor(Pattern(kBatch * kOut, 4), {kBatch, kOut})};
}

}  // namespace vkspmd::testing
