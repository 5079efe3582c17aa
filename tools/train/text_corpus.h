// A character-level language-model corpus: every regular file of a directory (by default the
// licence texts every Debian machine has), read in name order, encoded over the sorted set of
// bytes it contains, and cut into deterministic batches of (input, next character) windows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace vkspmd::train {

inline constexpr char kDefaultCorpus[] = "/usr/share/common-licenses";

class TextCorpus {
 public:
  // A directory (its regular files, not recursing) or one file. Errors name the path.
  static absl::StatusOr<TextCorpus> Load(const std::string& path);

  int64_t vocabulary_size() const { return static_cast<int64_t>(alphabet_.size()); }
  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  char Character(int32_t token) const { return alphabet_[token]; }
  const std::string& path() const { return path_; }

  // Batch `step` of `batch` windows of `length` tokens: inputs[b][t] and targets[b][t] =
  // inputs[b][t+1], row-major [batch, length]. The windows' starts come from a counter-based
  // hash of (seed, step, b), so a batch does not depend on which batches were drawn before.
  struct Batch {
    std::vector<int32_t> inputs;
    std::vector<int32_t> targets;
  };
  absl::StatusOr<Batch> Sample(uint64_t seed, int64_t step, int64_t batch, int64_t length) const;

 private:
  std::string path_;
  std::string alphabet_;
  std::vector<int32_t> tokens_;
};

// A synthetic regression task for the MLP: x ~ U(-1, 1)^in, y = sin(x W1) W2 with fixed random
// W1, W2 from `seed`; batch `step` is x [batch, in] and y [batch, out], row-major.
struct RegressionBatch {
  std::vector<float> x;
  std::vector<float> y;
};
RegressionBatch SampleRegression(uint64_t seed, int64_t step, int64_t batch, int64_t in,
                                 int64_t out);

// A uniform 64-bit hash of three counters (splitmix64 rounds), for deterministic sampling.
uint64_t MixCounters(uint64_t a, uint64_t b, uint64_t c);

}  // namespace vkspmd::train
