// Parameter initialisation follows PyTorch's rules: Linear weight and bias U(-1/sqrt(in),
// 1/sqrt(in)), Embedding N(0, 1), LayerNorm 1 and 0; a seed gives the same weights again.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/nn/reference.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

struct Moments {
  double mean = 0, variance = 0, largest = 0;
};

Moments MomentsOf(const Values& values) {
  Moments moments;
  for (float v : values) moments.mean += v;
  moments.mean /= static_cast<double>(values.size());
  for (float v : values) {
    moments.variance += (v - moments.mean) * (v - moments.mean);
    moments.largest = std::max(moments.largest, double{std::fabs(v)});
  }
  moments.variance /= static_cast<double>(values.size());
  return moments;
}

TEST(InitTest, LinearIsUniformWithinOneOverSqrtFanIn) {
  manual_seed(11);
  nn::Linear linear(64, 256);
  const double bound = 1.0 / 8;
  for (const Values& values :
       {linear.weight().to_vector<float>(), linear.bias().to_vector<float>()}) {
    const Moments moments = MomentsOf(values);
    EXPECT_LE(moments.largest, bound);
    // The largest of n uniforms is near the bound; the variance of U(-b, b) is b^2 / 3.
    EXPECT_GT(moments.largest, 0.95 * bound);
    const double tolerance = values.size() > 1000 ? 0.05 : 0.25;
    EXPECT_NEAR(moments.variance, bound * bound / 3, tolerance * bound * bound / 3);
    EXPECT_NEAR(moments.mean, 0, 4 * bound / std::sqrt(3.0 * static_cast<double>(values.size())));
  }
}

TEST(InitTest, EmbeddingIsStandardNormalAndLayerNormIsIdentity) {
  manual_seed(12);
  nn::Embedding embedding(100, 64);
  const Moments moments = MomentsOf(embedding.weight().to_vector<float>());
  EXPECT_NEAR(moments.mean, 0, 0.04);  // 4 standard errors of 6400 samples.
  EXPECT_NEAR(moments.variance, 1, 0.07);
  EXPECT_GT(moments.largest, 3);  // 6400 normals reach beyond 3 sigma.
  nn::LayerNorm norm(7);
  EXPECT_EQ(norm.weight().to_vector<float>(), Values(7, 1.0f));
  EXPECT_EQ(norm.bias().to_vector<float>(), Values(7, 0.0f));
}

TEST(InitTest, TheSameSeedGivesTheSameWeights) {
  const nn::TransformerConfig config{
      .vocab = 9, .d_model = 4, .heads = 2, .layers = 1, .max_seq = 5};
  manual_seed(13);
  nn::TransformerLM first(config);
  manual_seed(13);
  nn::TransformerLM second(config);
  manual_seed(14);
  nn::TransformerLM third(config);
  const auto a = first.named_parameters(), b = second.named_parameters(),
             c = third.named_parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    const Values values = a[i].second.to_vector<float>();
    EXPECT_EQ(values, b[i].second.to_vector<float>()) << a[i].first;
    if (a[i].first.find("ln") == std::string::npos) {
      EXPECT_NE(values, c[i].second.to_vector<float>()) << a[i].first;
    }
  }
}

}  // namespace
}  // namespace vkspmd::testing
