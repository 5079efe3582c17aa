// float16 and bfloat16 in the Tensor API: names, host round trips (rounding to nearest even, raw
// 16-bit HostTensors), factories, converts and their gradients against the reference evaluator
// and on the devices, type promotion and printing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "tests/lazy/lazy_test_util.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

// Values that round differently in the two formats: ties to even, float16's overflow and
// subnormals, bfloat16's 8 significant bits.
const std::vector<float> kValues = {
    0.0f,     -0.0f,    1.0f,  -2.5f,       1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f,
    65504.0f, 70000.0f, 1e-6f, 3.14159265f, -1e30f,          0x1p-24f};

uint16_t Bits(const HostTensor& host, int64_t i) {
  uint16_t bits;
  std::memcpy(&bits, host.bytes.data() + 2 * i, 2);
  return bits;
}

TEST(LowPrecisionTest, NamesAndSizes) {
  EXPECT_EQ(dtype_name(float16), "float16");
  EXPECT_EQ(dtype_name(bfloat16), "bfloat16");
  EXPECT_EQ(half, float16);
  EXPECT_TRUE(is_floating_point(bfloat16));
  EXPECT_FALSE(is_floating_point(int32));
  EXPECT_EQ(element_size(float16), 2);
  EXPECT_EQ(element_size(float32), 4);
}

TEST(LowPrecisionTest, HostValuesRoundToNearestEven) {
  Tensor h = tensor(kValues, {}, float16), b = tensor(kValues, {}, bfloat16);
  EXPECT_EQ(h.dtype(), float16);
  EXPECT_EQ(b.dtype(), bfloat16);
  const HostTensor hh = h.to_host(), bh = b.to_host();
  ASSERT_EQ(hh.bytes.size(), 2 * kValues.size());
  const std::vector<float> hv = hh.values<float>(), bv = bh.values<float>();
  EXPECT_EQ(hv[2], 1.0f);
  EXPECT_EQ(hv[3], -2.5f);
  EXPECT_EQ(hv[4], 1.0f);               // 1 + 2^-11 (half an ulp of float16) ties to even: 1.
  EXPECT_EQ(hv[5], 1.0f + 0x1p-9f);     // 1 + 1.5 ulp rounds to 1 + 2 ulp.
  EXPECT_EQ(hv[6], 65504.0f);           // float16's largest.
  EXPECT_TRUE(std::isinf(hv[7]));       // Beyond it: inf.
  EXPECT_NEAR(hv[8], 1e-6f, 0x1p-25f);  // A subnormal.
  EXPECT_EQ(hv[11], 0x1p-24f);          // The smallest subnormal.
  EXPECT_TRUE(std::signbit(hv[1]));
  EXPECT_EQ(Bits(hh, 2), 0x3c00);
  EXPECT_EQ(bv[4], 1.0f);      // 8 significant bits: 2^-11 is below half an ulp.
  EXPECT_EQ(bv[6], 65536.0f);  // 65504 rounds up to 2^16.
  EXPECT_EQ(bv[7], 70144.0f);
  EXPECT_EQ(Bits(bh, 9), 0x4049);      // pi.
  EXPECT_NEAR(bv[10], -1e30f, 1e28f);  // float32's range.
  // Raw bits back in: the same tensor.
  Tensor again = from_host(bh);
  EXPECT_EQ(again.dtype(), bfloat16);
  EXPECT_EQ(again.to_host().bytes, bh.bytes);
  EXPECT_NE(ThrownMessage([] { tensor(kValues, {}, int32); }).find("cannot be stored as int32"),
            std::string::npos);
}

TEST(LowPrecisionTest, FactoriesMakeTheDtype) {
  manual_seed(3);
  Tensor r = randn({64}, bfloat16);
  manual_seed(3);
  Tensor r32 = randn({64});
  ASSERT_EQ(r.dtype(), bfloat16);
  const std::vector<float> low = r.to_vector<float>(), wide = r32.to_vector<float>();
  for (size_t i = 0; i < low.size(); ++i) {
    EXPECT_NEAR(low[i], wide[i], std::fabs(wide[i]) * 0x1p-8f) << i;
  }
  EXPECT_EQ(rand({4}, float16).dtype(), float16);
  EXPECT_EQ(zeros({2, 3}, bfloat16).dtype(), bfloat16);
  EXPECT_EQ(ones({2}, float16).dtype(), float16);
  EXPECT_EQ(full({2}, 0.1, bfloat16).dtype(), bfloat16);
  EXPECT_EQ(zeros_like(r).dtype(), bfloat16);
}

TEST(LowPrecisionTest, PromotionFollowsPyTorch) {
  Tensor f = ones({2}), h = ones({2}, float16), b = ones({2}, bfloat16);
  EXPECT_EQ((f + h).dtype(), float32);
  EXPECT_EQ((b * f).dtype(), float32);
  EXPECT_EQ((h + b).dtype(), float32);
  EXPECT_EQ((b + b).dtype(), bfloat16);
  EXPECT_EQ((b * 0.5).dtype(), bfloat16);  // A Python scalar keeps the tensor's type.
  EXPECT_EQ((ones({2}, int32) + h).dtype(), float16);
  EXPECT_EQ(matmul(ones({2, 2}, bfloat16), ones({2, 2}, bfloat16)).dtype(), bfloat16);
}

TEST(LowPrecisionTest, PrintingNamesTheDtype) {
  EXPECT_EQ(tensor(std::vector<float>{1.5f, -2.0f}, {}, bfloat16).to_string(),
            "tensor([ 1.5000, -2.0000], dtype=torch.bfloat16)");
  EXPECT_EQ(tensor(std::vector<float>{1, 2}, {}, float16).to_string(),
            "tensor([1., 2.], dtype=torch.float16)");
}

// Converts between every pair of floating types, and from and to int32, against the reference
// evaluator and then on the devices (exactly: both round to nearest even).
TEST(LowPrecisionTest, ConvertsMatchTheReference) {
  const std::vector<DType> types = {float32, float16, bfloat16};
  for (DType from : types) {
    for (DType to : {float32, float16, bfloat16, int32}) {
      SCOPED_TRACE(dtype_name(from) + " -> " + dtype_name(to));
      Tensor x = tensor(kValues, {}, float32).to(from);
      Tensor y = (x * 3.0).to(to);
      if (to == int32) y = (tensor(std::vector<float>{1.5f, -7.25f, 300.0f}) * 1.0).to(from).to(to);
      const ir::Literal reference = ReferenceValue(y);
      EXPECT_EQ(CompareWithReference(y.to_host(), reference, 0), "");
    }
  }
}

// Arithmetic in 16 bits on the devices: a matmul, a reduction and gelu, within the rounding of
// one 16-bit result of the reference evaluator.
TEST(LowPrecisionTest, ArithmeticMatchesTheReference) {
  for (DType type : {float16, bfloat16}) {
    SCOPED_TRACE(dtype_name(type));
    manual_seed(11);
    Tensor a = randn({8, 16}, type), b = randn({16, 4}, type);
    Tensor c = gelu(matmul(a, b) + 1.0);
    Tensor s = sum(a * a, {1});
    const ir::Literal c_reference = ReferenceValue(c), s_reference = ReferenceValue(s);
    EXPECT_EQ(CompareWithReference(c.to_host(), c_reference, 2e-2), "");
    EXPECT_EQ(CompareWithReference(s.to_host(), s_reference, 2e-2), "");
  }
}

// The gradient of a convert is the convert back: d/dx sum((x.to(bf16))^2) = 2x rounded to
// bfloat16, returned as float32.
TEST(LowPrecisionTest, GradientOfAConvertIsTheConvertBack) {
  for (DType type : {float16, bfloat16}) {
    SCOPED_TRACE(dtype_name(type));
    Tensor x = tensor(std::vector<float>{0.1f, -1.3f, 2.7f, 100.0f});
    Tensor low = x.to(type);
    Tensor loss = (low * low).sum().to(float32);
    std::vector<Tensor> g = grad(loss, {x});
    ASSERT_EQ(g[0].dtype(), float32);
    const ir::Literal reference = ReferenceValue(g[0]);
    const std::vector<float> xs = x.to_vector<float>(), rounded = low.to_vector<float>();
    const std::vector<float> gs = g[0].to_vector<float>();
    for (size_t i = 0; i < xs.size(); ++i) {
      EXPECT_EQ(reference.GetAsDouble(static_cast<int64_t>(i)), 2 * rounded[i]) << i;
      EXPECT_EQ(gs[i], 2 * rounded[i]) << i;
    }
  }
}

}  // namespace
}  // namespace vkspmd::testing
