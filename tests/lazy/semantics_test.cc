// What the ops compute, checked against plain C++ loops (the reference evaluator cannot catch a
// wrong formula, since it runs the same graph): broadcasting, matmul batch rules, reductions,
// argmax ties, softmax, gelu, layer_norm, cross_entropy, embedding, and PyTorch's printing.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/lazy/lazy_test_util.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

std::vector<float> Iota(int64_t n, float scale = 1, float offset = 0) {
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = offset + scale * static_cast<float>(i);
  return values;
}

void ExpectNear(const std::vector<float>& actual, const std::vector<float>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], 1e-5 * std::max(1.0f, std::fabs(expected[i])))
        << "element " << i;
  }
}

TEST(SemanticsTest, BroadcastingFollowsPyTorch) {
  Tensor column = tensor(Iota(3), {3, 1});
  Tensor row = tensor(Iota(4, 10), {4});
  Tensor sum = column + row;
  EXPECT_EQ(sum.shape(), (std::vector<int64_t>{3, 4}));
  std::vector<float> expected;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) expected.push_back(static_cast<float>(i + 10 * j));
  }
  ExpectNear(sum.to_vector<float>(), expected);
}

TEST(SemanticsTest, MatmulBatchBroadcastAndVectors) {
  Tensor a = tensor(Iota(2 * 2 * 3), {2, 1, 2, 3});     // batch [2, 1]
  Tensor b = tensor(Iota(3 * 3 * 2, 0.5f), {3, 3, 2});  // batch [3]
  Tensor c = matmul(a, b);
  ASSERT_EQ(c.shape(), (std::vector<int64_t>{2, 3, 2, 2}));
  std::vector<float> av = a.to_vector<float>(), bv = b.to_vector<float>(), expected;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int r = 0; r < 2; ++r) {
        for (int s = 0; s < 2; ++s) {
          float total = 0;
          for (int k = 0; k < 3; ++k) total += av[i * 6 + r * 3 + k] * bv[j * 6 + k * 2 + s];
          expected.push_back(total);
        }
      }
    }
  }
  ExpectNear(c.to_vector<float>(), expected);
  Tensor v = tensor(std::vector<float>{1, 2, 3});
  EXPECT_EQ(matmul(v, v).item(), 14);
  EXPECT_EQ(matmul(a, v).shape(), (std::vector<int64_t>{2, 1, 2}));
}

TEST(SemanticsTest, ReductionsAndArgmaxTakesTheFirstOfTies) {
  Tensor x = tensor(std::vector<float>{1, 5, 5, -2, 0, 7, 7, 3}, {2, 4});
  ExpectNear(x.sum({1}).to_vector<float>(), {9, 17});
  ExpectNear(x.mean({0}, true).to_vector<float>(), {0.5f, 6, 6, 0.5f});
  ExpectNear(x.max(1).to_vector<float>(), {5, 7});
  ExpectNear(x.min(0).to_vector<float>(), {0, 5, 5, -2});
  EXPECT_EQ(x.argmax(1).to_vector<int32_t>(), (std::vector<int32_t>{1, 1}));
  EXPECT_EQ(x.argmax(0, true).shape(), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(x.argmin(1).to_vector<int32_t>(), (std::vector<int32_t>{3, 0}));
  EXPECT_EQ(x.argmin(0).to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 0, 0}));
  Tensor ties = tensor(std::vector<float>{3, 1, 1, 2, 2, 4}, {2, 3});
  EXPECT_EQ(ties.argmin(1).to_vector<int32_t>(), (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(x.argmin(0, true).shape(), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(x.sum().item(), 26);
}

TEST(SemanticsTest, SoftmaxGeluLayerNorm) {
  std::vector<float> values{0.5f, -1, 2, 0, 3, -0.25f};
  Tensor x = tensor(values, {2, 3});
  std::vector<float> softmax_expected, gelu_expected, norm_expected;
  for (int r = 0; r < 2; ++r) {
    double total = 0, mean = 0, variance = 0;
    for (int k = 0; k < 3; ++k) total += std::exp(values[r * 3 + k]);
    for (int k = 0; k < 3; ++k) mean += values[r * 3 + k] / 3.0;
    for (int k = 0; k < 3; ++k) variance += std::pow(values[r * 3 + k] - mean, 2) / 3.0;
    for (int k = 0; k < 3; ++k) {
      const double v = values[r * 3 + k];
      softmax_expected.push_back(static_cast<float>(std::exp(v) / total));
      gelu_expected.push_back(static_cast<float>(0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))));
      norm_expected.push_back(static_cast<float>((v - mean) / std::sqrt(variance + 1e-5) * 2 + 1));
    }
  }
  ExpectNear(softmax(x, -1).to_vector<float>(), softmax_expected);
  ExpectNear(gelu(x).to_vector<float>(), gelu_expected);
  ExpectNear(layer_norm(x, {3}, full({3}, 2.0), ones({3})).to_vector<float>(), norm_expected);
}

TEST(SemanticsTest, CrossEntropyAndEmbedding) {
  std::vector<float> logits{2, 1, 0.5f, -1, 0, 3};
  std::vector<int32_t> targets{0, 2};
  Tensor loss = cross_entropy(tensor(logits, {2, 3}), tensor(targets));
  double expected = 0;
  for (int r = 0; r < 2; ++r) {
    double total = 0;
    for (int k = 0; k < 3; ++k) total += std::exp(logits[r * 3 + k]);
    expected += -(logits[r * 3 + targets[r]] - std::log(total)) / 2;
  }
  EXPECT_NEAR(loss.item(), expected, 1e-5);
  Tensor table = tensor(Iota(4 * 2), {4, 2});
  Tensor rows = embedding(tensor(std::vector<int32_t>{3, 0, 3}, {1, 3}), table);
  EXPECT_EQ(rows.shape(), (std::vector<int64_t>{1, 3, 2}));
  ExpectNear(rows.to_vector<float>(), {6, 7, 0, 1, 6, 7});
  EXPECT_EQ(one_hot(tensor(std::vector<int32_t>{2, 0}), 3).to_vector<int32_t>(),
            (std::vector<int32_t>{0, 0, 1, 1, 0, 0}));
}

TEST(SemanticsTest, PrintsLikePyTorch) {
  EXPECT_EQ(tensor(std::vector<float>{1.5f, -2, 0.25f, 3}, {2, 2}).to_string(),
            "tensor([[ 1.5000, -2.0000],\n        [ 0.2500,  3.0000]])");
  EXPECT_EQ(tensor(std::vector<float>{1, 2, 3}).to_string(), "tensor([1., 2., 3.])");
  EXPECT_EQ(scalar(2.5).to_string(), "tensor(2.5000)");
  EXPECT_EQ(tensor(std::vector<int32_t>{1, -20}).to_string(), "tensor([  1, -20])");
  EXPECT_EQ((arange(4) > 1).to_string(), "tensor([False, False,  True,  True])");
  EXPECT_EQ(arange(2000).to_string(), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
}

}  // namespace
}  // namespace vkspmd::testing
