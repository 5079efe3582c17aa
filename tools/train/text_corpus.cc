// Loading and sampling the character corpus and the synthetic regression task.
#include "tools/train/text_corpus.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace vkspmd::train {
namespace {

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1).
float Uniform(uint64_t a, uint64_t b, uint64_t c) {
  return static_cast<float>(static_cast<double>(MixCounters(a, b, c) >> 11) * 0x1.0p-52 - 1.0);
}

}  // namespace

uint64_t MixCounters(uint64_t a, uint64_t b, uint64_t c) {
  return SplitMix(SplitMix(SplitMix(a) ^ b) ^ c);
}

absl::StatusOr<TextCorpus> TextCorpus::Load(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  std::vector<fs::path> files;
  if (fs::is_directory(path, error)) {
    for (const fs::directory_entry& entry : fs::directory_iterator(path, error)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
  } else if (fs::is_regular_file(path, error)) {
    files.push_back(path);
  } else {
    return absl::NotFoundError(absl::StrCat("training data ", path, ": no such file or directory"));
  }
  std::string text;
  for (const fs::path& file : files) {
    std::ifstream stream(file, std::ios::binary);
    if (!stream) return absl::NotFoundError(absl::StrCat("cannot read ", file.string()));
    std::ostringstream contents;
    contents << stream.rdbuf();
    text += contents.str();
  }
  if (text.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("training data ", path, " holds ", text.size(), " bytes; at least 2 needed"));
  }
  TextCorpus corpus;
  corpus.path_ = path;
  bool seen[256] = {};
  for (unsigned char c : text) seen[c] = true;
  int32_t token_of[256] = {};
  for (int c = 0; c < 256; ++c) {
    if (!seen[c]) continue;
    token_of[c] = static_cast<int32_t>(corpus.alphabet_.size());
    corpus.alphabet_.push_back(static_cast<char>(c));
  }
  corpus.tokens_.reserve(text.size());
  for (unsigned char c : text) corpus.tokens_.push_back(token_of[c]);
  return corpus;
}

absl::StatusOr<TextCorpus::Batch> TextCorpus::Sample(uint64_t seed, int64_t step, int64_t batch,
                                                     int64_t length) const {
  if (length + 1 > size()) {
    return absl::InvalidArgumentError(absl::StrCat("windows of ", length, " characters need ",
                                                   length + 1, "; ", path_, " has ", size()));
  }
  Batch result;
  result.inputs.reserve(batch * length);
  result.targets.reserve(batch * length);
  const uint64_t starts = static_cast<uint64_t>(size() - length);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t start = static_cast<int64_t>(MixCounters(seed, step, b) % starts);
    for (int64_t t = 0; t < length; ++t) {
      result.inputs.push_back(tokens_[start + t]);
      result.targets.push_back(tokens_[start + t + 1]);
    }
  }
  return result;
}

RegressionBatch SampleRegression(uint64_t seed, int64_t step, int64_t batch, int64_t in,
                                 int64_t out) {
  constexpr int64_t kHidden = 16;
  RegressionBatch result;
  result.x.resize(batch * in);
  result.y.assign(batch * out, 0.0f);
  for (int64_t i = 0; i < batch * in; ++i) result.x[i] = Uniform(seed, 1'000'000 + step, i);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < kHidden; ++h) {
      float pre = 0;
      for (int64_t i = 0; i < in; ++i)
        pre += result.x[b * in + i] * Uniform(seed, 1, i * kHidden + h);
      const float hidden = std::sin(pre);
      for (int64_t o = 0; o < out; ++o) {
        result.y[b * out + o] += hidden * Uniform(seed, 2, h * out + o) / std::sqrt(float{kHidden});
      }
    }
  }
  return result;
}

}  // namespace vkspmd::train
