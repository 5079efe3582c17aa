// bitcast-convert and reduce-precision on a device (lavapipe in CI) against the CPU reference,
// bit for bit: f32 results read back through bitcast-convert to u32, over a 7x13 array of
// magnitudes from 1e-6 to 1e6 with NaN, infinities and signed zeros; the 16-bit types (f16, bf16,
// s16, u16) over every one of the 65536 bit patterns (NaNs with every payload, signaling ones
// included, infinities, subnormals, -0), in an odd-sized array, every result's bytes compared.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "src/ir/parser.h"
#include "tests/exec/device_reference.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

constexpr char kBitOps[] = R"(HloModule bit_ops
ENTRY main {
  p = f32[7,13]{1,0} parameter(0)
  half = f32[7,13]{1,0} reduce-precision(p), exponent_bits=5, mantissa_bits=10
  bfloat = f32[7,13]{1,0} reduce-precision(p), exponent_bits=8, mantissa_bits=7
  tiny = f32[7,13]{1,0} reduce-precision(p), exponent_bits=3, mantissa_bits=2
  no_mantissa = f32[7,13]{1,0} reduce-precision(p), exponent_bits=5, mantissa_bits=0
  half_bits = u32[7,13]{1,0} bitcast-convert(half)
  bfloat_bits = u32[7,13]{1,0} bitcast-convert(bfloat)
  tiny_bits = u32[7,13]{1,0} bitcast-convert(tiny)
  no_mantissa_bits = u32[7,13]{1,0} bitcast-convert(no_mantissa)
  as_int = s32[7,13]{1,0} bitcast-convert(p)
  one = s32[] constant(1)
  ones = s32[7,13]{1,0} broadcast(one), dimensions={}
  next_int = s32[7,13]{1,0} add(as_int, ones)
  next = f32[7,13]{1,0} bitcast-convert(next_int)
  next_bits = u32[7,13]{1,0} bitcast-convert(next)
  ROOT out = (u32[7,13]{1,0}, u32[7,13]{1,0}, u32[7,13]{1,0}, u32[7,13]{1,0}, s32[7,13]{1,0}, u32[7,13]{1,0}) tuple(half_bits, bfloat_bits, tiny_bits, no_mantissa_bits, as_int, next_bits)
}
)";

class BitOpsDeviceTest : public DeviceTest {
 protected:
  void SetUp() override { OpenDevices(1); }
};

TEST_F(BitOpsDeviceTest, MatchesTheReferenceBitForBit) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(kBitOps);
  ASSERT_TRUE(module.ok()) << module.status();
  std::vector<float> values(7 * 13);
  for (size_t i = 0; i < values.size(); ++i) {
    const double magnitude = std::pow(10.0, -6.0 + 12.0 * static_cast<double>(i) / values.size());
    values[i] = static_cast<float>((i % 2 ? -1.0 : 1.0) * magnitude * (1.0 + 0.37 * (i % 5)));
  }
  values[3] = std::numeric_limits<float>::quiet_NaN();
  values[10] = std::numeric_limits<float>::infinity();
  values[20] = -std::numeric_limits<float>::infinity();
  values[30] = 0.0f;
  values[31] = -0.0f;
  values[40] = 65520.0f;         // rounds past float16's largest finite value
  values[41] = 1.0f + 0x1p-11f;  // a float16 tie
  const std::vector<ir::Literal> arguments = {
      ir::Literal::Create<float>(ir::DType::kF32, {7, 13}, values)};
  EXPECT_EQ(DeviceDiffersFromReference(**module, arguments, device(0)), "");
}

// Every 16-bit pattern, then one more (0x7c01, a signaling f16 NaN) for an odd, prime size.
constexpr int64_t kPatterns = 65537;

std::vector<uint16_t> AllPatterns() {
  std::vector<uint16_t> bits(kPatterns);
  for (int64_t i = 0; i < kPatterns; ++i) bits[i] = static_cast<uint16_t>(i);
  bits[65536] = 0x7c01;
  return bits;
}

// Whether 16-bit `bits` of float type `type` are a NaN.
bool IsHalfNaN(uint64_t bits, ir::DType type) {
  return type == ir::DType::kF16 ? (bits & 0x7c00u) == 0x7c00u && (bits & 0x3ffu) != 0
                                 : (bits & 0x7f80u) == 0x7f80u && (bits & 0x7fu) != 0;
}

// Which NaN arithmetic gives is the device's: IEEE 754 leaves a NaN result's sign and payload
// open. x86, where the reference and lavapipe run, keeps the NaN operand's sign (and, for a NaN
// it makes, sets the sign); NVIDIA gives its canonical positive NaN. So results of arithmetic
// (`arithmetic`: tuple elements, their 16-bit values or bits read as `as`) are compared bit for
// bit on CPU devices, and elsewhere a reference NaN there takes any NaN. Moves, converts,
// negate and abs keep bits on every device.
struct ArithmeticNaNs {
  std::set<size_t> elements;
  ir::DType as = ir::DType::kF16;
  bool exact = true;
};

// "" when every (tuple element's) byte of `got` equals `want`'s, else the first difference.
std::string CompareBits(const ir::Literal& got, const ir::Literal& want, const std::string& label,
                        const ArithmeticNaNs& nans = {}, bool any_nan = false) {
  if (got.shape() != want.shape()) {
    return absl::StrCat(label, ": shape ", got.shape().ToString(), ", reference ",
                        want.shape().ToString());
  }
  if (want.shape().IsTuple()) {
    for (size_t k = 0; k < want.tuple_elements().size(); ++k) {
      std::string difference = CompareBits(got.tuple_elements()[k], want.tuple_elements()[k],
                                           absl::StrCat(label, " element ", k), nans,
                                           !nans.exact && nans.elements.count(k) > 0);
      if (!difference.empty()) return difference;
    }
    return "";
  }
  const int64_t width = ir::DTypeByteSize(want.dtype());
  for (int64_t i = 0; i < want.ElementCount(); ++i) {
    uint64_t a = 0, b = 0;
    std::memcpy(&a, got.bytes().data() + i * width, width);
    std::memcpy(&b, want.bytes().data() + i * width, width);
    if (a != b && !(any_nan && width == 2 && IsHalfNaN(a, nans.as) && IsHalfNaN(b, nans.as))) {
      return absl::StrFormat("%s (%s) index %d: device bits 0x%x, reference 0x%x", label,
                             want.shape().ToString(), i, a, b);
    }
  }
  return "";
}

std::string DeviceBitsDifferFromReference(const std::string& text,
                                          const std::vector<ir::Literal>& arguments,
                                          runtime::MeshDevice& device, ArithmeticNaNs nans = {}) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  if (!module.ok()) return std::string(module.status().message());
  absl::StatusOr<DeviceAndReference> results = RunOnDeviceAndReference(**module, arguments, device);
  if (!results.ok()) return std::string(results.status().message());
  nans.exact = device.device().physical_device().is_cpu();
  return CompareBits(results->device, results->reference, "result", nans);
}

// From each 16-bit type (a parameter holding every pattern) to every other, directly and
// through index mappings (reverse), and back to u16: each pair both ways, bit for bit.
constexpr char kBitcast16[] = R"(HloModule bitcast16
ENTRY main {
  u = u16[65537]{0} parameter(0)
  s = s16[65537]{0} parameter(1)
  h = f16[65537]{0} parameter(2)
  b = bf16[65537]{0} parameter(3)
  u_s = s16[65537]{0} bitcast-convert(u)
  u_h = f16[65537]{0} bitcast-convert(u)
  u_b = bf16[65537]{0} bitcast-convert(u)
  s_u = u16[65537]{0} bitcast-convert(s)
  s_h = f16[65537]{0} bitcast-convert(s)
  s_b = bf16[65537]{0} bitcast-convert(s)
  h_u = u16[65537]{0} bitcast-convert(h)
  h_s = s16[65537]{0} bitcast-convert(h)
  h_b = bf16[65537]{0} bitcast-convert(h)
  b_u = u16[65537]{0} bitcast-convert(b)
  b_s = s16[65537]{0} bitcast-convert(b)
  b_h = f16[65537]{0} bitcast-convert(b)
  u_h_rev = f16[65537]{0} reverse(u_h), dimensions={0}
  u_b_rev = bf16[65537]{0} reverse(u_b), dimensions={0}
  u_h_b_u = u16[65537]{0} bitcast-convert(h_b)
  round_h = u16[65537]{0} bitcast-convert(u_h)
  round_b = u16[65537]{0} bitcast-convert(u_b)
  round_hb = u16[65537]{0} bitcast-convert(b_h)
  round_bh = s16[65537]{0} bitcast-convert(h_b)
  ROOT out = (s16[65537]{0}, f16[65537]{0}, bf16[65537]{0}, u16[65537]{0}, f16[65537]{0}, bf16[65537]{0}, u16[65537]{0}, s16[65537]{0}, bf16[65537]{0}, u16[65537]{0}, s16[65537]{0}, f16[65537]{0}, f16[65537]{0}, bf16[65537]{0}, u16[65537]{0}, u16[65537]{0}, u16[65537]{0}, u16[65537]{0}, s16[65537]{0}) tuple(u_s, u_h, u_b, s_u, s_h, s_b, h_u, h_s, h_b, b_u, b_s, b_h, u_h_rev, u_b_rev, u_h_b_u, round_h, round_b, round_hb, round_bh)
}
)";

TEST_F(BitOpsDeviceTest, SixteenBitBitcastsKeepEveryBitPattern) {
  const std::vector<uint16_t> bits = AllPatterns();
  std::vector<ir::Literal> arguments;
  for (ir::DType type : {ir::DType::kU16, ir::DType::kS16, ir::DType::kF16, ir::DType::kBF16}) {
    arguments.push_back(ir::Literal::Create<uint16_t>(type, {kPatterns}, bits));
  }
  EXPECT_EQ(DeviceBitsDifferFromReference(kBitcast16, arguments, device(0)), "");
}

// After a bitcast the 16-bit floats compute as any other value: arithmetic gives the
// reference's quiet NaN (f16: sign|0x7e00; bf16: the payload with the quiet bit; on CPU devices,
// see ArithmeticNaNs), converts an f16 NaN to the quiet NaN of its sign, negate flips the sign
// of a NaN too. Also JAX's uniform bf16 pattern (issue 19).
constexpr char kBitcast16Arithmetic[] = R"(HloModule bitcast16_arithmetic
ENTRY main {
  u = u16[65537]{0} parameter(0)
  h = f16[65537]{0} bitcast-convert(u)
  b = bf16[65537]{0} bitcast-convert(u)
  neg_h = f16[65537]{0} negate(h)
  neg_b = bf16[65537]{0} negate(b)
  h_one = f16[] constant(1)
  h_ones = f16[65537]{0} broadcast(h_one), dimensions={}
  sum_h = f16[65537]{0} add(h, h_ones)
  wide_h = f32[65537]{0} convert(h)
  wide_h_bits = u32[65537]{0} bitcast-convert(wide_h)
  h_to_b = bf16[65537]{0} convert(h)
  seven = u16[] constant(7)
  sevens = u16[65537]{0} broadcast(seven), dimensions={}
  shifted = u16[65537]{0} shift-right-logical(u, sevens)
  exponent = u16[] constant(16256)
  exponents = u16[65537]{0} broadcast(exponent), dimensions={}
  mantissa = u16[65537]{0} or(shifted, exponents)
  in_one_two = bf16[65537]{0} bitcast-convert(mantissa)
  b_one = bf16[] constant(1)
  b_ones = bf16[65537]{0} broadcast(b_one), dimensions={}
  uniform = bf16[65537]{0} subtract(in_one_two, b_ones)
  ROOT out = (f16[65537]{0}, bf16[65537]{0}, f16[65537]{0}, u32[65537]{0}, bf16[65537]{0}, bf16[65537]{0}) tuple(neg_h, neg_b, sum_h, wide_h_bits, h_to_b, uniform)
}
)";

TEST_F(BitOpsDeviceTest, SixteenBitBitcastResultsComputeAsTheReference) {
  const std::vector<ir::Literal> arguments = {
      ir::Literal::Create<uint16_t>(ir::DType::kU16, {kPatterns}, AllPatterns())};
  EXPECT_EQ(DeviceBitsDifferFromReference(kBitcast16Arithmetic, arguments, device(0),
                                          {.elements = {2}, .as = ir::DType::kF16}),
            "");
}

// Reductions and dots accumulate 16-bit floats in f32 without a rounding per step: a NaN operand
// of any payload (signaling ones included) still gives the reference's NaN bits (on CPU devices,
// see ArithmeticNaNs; elsewhere a NaN), and subnormal sums stay subnormal.
std::string AccumulationModule(const std::string& type) {
  return absl::StrReplaceAll(R"(HloModule accumulation16
add {
  a = $T[] parameter(0)
  b = $T[] parameter(1)
  ROOT s = $T[] add(a, b)
}
ENTRY main {
  p = $T[65537]{0} parameter(0)
  rows = $T[65537,3]{1,0} broadcast(p), dimensions={0}
  zero = $T[] constant(-0)
  sum = $T[65537]{0} reduce(rows, zero), dimensions={1}, to_apply=add
  sum_bits = u16[65537]{0} bitcast-convert(sum)
  one = $T[] constant(1)
  ones = $T[3,1]{1,0} broadcast(one), dimensions={}
  product = $T[65537,1]{1,0} dot(rows, ones), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  product_bits = u16[65537,1]{1,0} bitcast-convert(product)
  ROOT out = ($T[65537]{0}, u16[65537]{0}, $T[65537,1]{1,0}, u16[65537,1]{1,0}) tuple(sum, sum_bits, product, product_bits)
}
)",
                             {{"$T", type}});
}

TEST_F(BitOpsDeviceTest, SixteenBitAccumulationsGiveTheReferenceNaN) {
  for (ir::DType type : {ir::DType::kF16, ir::DType::kBF16}) {
    const std::string name(ir::DTypeName(type));
    // Without -0: the device's dot sums -0 products to -0, the reference's (from +0) to +0.
    std::vector<uint16_t> bits = AllPatterns();
    bits[0x8000] = 0;
    // bf16 subnormals are f32 subnormals: a GPU that does not offer to preserve them (kernels
    // then cannot declare DenormPreserve; `vkspmd devices` says which) may flush them, inputs
    // and sums alike (the H100 did before kernels declared it). CPU devices keep them.
    const runtime::PhysicalDeviceInfo& info = device(0).device().physical_device();
    if (type == ir::DType::kBF16 && !info.is_cpu() && !info.denorm_preserve_float32) {
      for (uint16_t& b : bits) {
        if ((b & 0x7f80u) == 0) b = 0;
      }
    }
    const std::vector<ir::Literal> arguments = {
        ir::Literal::Create<uint16_t>(type, {kPatterns}, bits)};
    EXPECT_EQ(DeviceBitsDifferFromReference(AccumulationModule(name), arguments, device(0),
                                            {.elements = {0, 1, 2, 3}, .as = type}),
              "")
        << name;
  }
}

// Found by review: a select or copy moves a NaN payload as the reference does (it was rounded to
// the canonical NaN), and a product reduction whose multiply by 1 the compiler folds away still
// gives the reference's NaN (its accumulator kept a signaling payload).
std::string MovesAndFoldedProductsModule(const std::string& type) {
  return absl::StrReplaceAll(R"(HloModule moves16
mul {
  a = $T[] parameter(0)
  b = $T[] parameter(1)
  ROOT m = $T[] multiply(a, b)
}
ENTRY main {
  p = $T[65537]{0} parameter(0)
  zero = $T[] constant(0)
  zeros = $T[65537]{0} broadcast(zero), dimensions={}
  i = u16[65537]{0} bitcast-convert(p)
  t = pred[65537]{0} compare(i, i), direction=EQ
  s = $T[65537]{0} select(t, p, zeros)
  c = $T[65537]{0} copy(s)
  moved = u16[65537]{0} bitcast-convert(c)
  column = $T[65537,1]{1,0} reshape(p)
  one = $T[] constant(1)
  r = $T[65537]{0} reduce(column, one), dimensions={1}, to_apply=mul
  product = u16[65537]{0} bitcast-convert(r)
  ROOT out = (u16[65537]{0}, u16[65537]{0}) tuple(moved, product)
}
)",
                             {{"$T", type}});
}

TEST_F(BitOpsDeviceTest, SixteenBitMovesKeepPayloadsAndFoldedProductsDoNot) {
  for (ir::DType type : {ir::DType::kF16, ir::DType::kBF16}) {
    const std::string name(ir::DTypeName(type));
    const std::vector<ir::Literal> arguments = {
        ir::Literal::Create<uint16_t>(type, {kPatterns}, AllPatterns())};
    EXPECT_EQ(DeviceBitsDifferFromReference(MovesAndFoldedProductsModule(name), arguments,
                                            device(0), {.elements = {1}, .as = type}),
              "")
        << name;
  }
}

// reduce-precision of f16 and bf16 over every pattern, with formats that keep the type, that
// round mantissas (ties included), that overflow to infinity, that flush to zero, and with no
// mantissa bit (NaN becomes +inf); the results directly and as u16 bits.
std::string ReducePrecisionModule(const std::string& type) {
  const std::vector<std::pair<int, int>> formats = {{5, 10},  {8, 7}, {5, 2}, {3, 2},
                                                    {4, 0},   {8, 3}, {2, 1}, {5, 0},
                                                    {11, 52}, {6, 4}, {1, 1}, {4, 9}};
  const std::string shape = absl::StrCat(type, "[65537]{0}");
  std::string body = absl::StrCat("  p = ", shape, " parameter(0)\n");
  std::vector<std::string> names, shapes;
  for (size_t k = 0; k < formats.size(); ++k) {
    absl::StrAppend(&body, "  r", k, " = ", shape,
                    " reduce-precision(p), exponent_bits=", formats[k].first,
                    ", mantissa_bits=", formats[k].second, "\n");
    names.push_back(absl::StrCat("r", k));
    shapes.push_back(shape);
    if (k % 3 == 0) {  // Some also read back as bits in the same kernel.
      absl::StrAppend(&body, "  u", k, " = u16[65537]{0} bitcast-convert(r", k, ")\n");
      names.push_back(absl::StrCat("u", k));
      shapes.push_back("u16[65537]{0}");
    }
  }
  return absl::StrCat("HloModule reduce_precision16\nENTRY main {\n", body, "  ROOT out = (",
                      absl::StrJoin(shapes, ", "), ") tuple(", absl::StrJoin(names, ", "),
                      ")\n}\n");
}

TEST_F(BitOpsDeviceTest, SixteenBitReducePrecisionMatchesTheReferenceBitForBit) {
  for (ir::DType type : {ir::DType::kF16, ir::DType::kBF16}) {
    const std::string name(ir::DTypeName(type));
    const std::vector<ir::Literal> arguments = {
        ir::Literal::Create<uint16_t>(type, {kPatterns}, AllPatterns())};
    EXPECT_EQ(DeviceBitsDifferFromReference(ReducePrecisionModule(name), arguments, device(0)), "")
        << name;
  }
}

// Every 16-bit pattern bitcast to bytes (s8 and u8, both ways between them) and back, pairs of
// them read as f32 and u32 and those back as f16 halves; 8-bit patterns widened to 64-bit words
// (f64, s64, u64 and between them) and back to bytes: each result's bits as the reference's.
constexpr char kBitcastWidths[] = R"(HloModule bitcast_widths
ENTRY main {
  h = f16[65537]{0} parameter(0)
  w = u8[4097,8]{1,0} parameter(1)
  h_bytes = u8[65537,2]{1,0} bitcast-convert(h)
  h_signed = s8[65537,2]{1,0} bitcast-convert(h_bytes)
  h_unsigned = u8[65537,2]{1,0} bitcast-convert(h_signed)
  h_back = f16[65537]{0} bitcast-convert(h_signed)
  even = f16[65536]{0} slice(h), slice={[0:65536]}
  pairs = f16[32768,2]{1,0} reshape(even)
  pair_floats = f32[32768]{0} bitcast-convert(pairs)
  pair_words = u32[32768]{0} bitcast-convert(pairs)
  pair_halves = bf16[32768,2]{1,0} bitcast-convert(pair_floats)
  doubles = f64[4097]{0} bitcast-convert(w)
  longs = s64[4097]{0} bitcast-convert(doubles)
  ulongs = u64[4097]{0} bitcast-convert(longs)
  doubles_again = f64[4097]{0} bitcast-convert(ulongs)
  w_back = u8[4097,8]{1,0} bitcast-convert(doubles_again)
  w_halves = s16[4097,4]{1,0} bitcast-convert(longs)
  ROOT out = (s8[65537,2]{1,0}, u8[65537,2]{1,0}, f16[65537]{0}, f32[32768]{0}, u32[32768]{0}, bf16[32768,2]{1,0}, f64[4097]{0}, s64[4097]{0}, u64[4097]{0}, u8[4097,8]{1,0}, s16[4097,4]{1,0}) tuple(h_signed, h_unsigned, h_back, pair_floats, pair_words, pair_halves, doubles, longs, ulongs, w_back, w_halves)
}
)";

TEST_F(BitOpsDeviceTest, WidthChangingBitcastsKeepEveryBit) {
  std::vector<uint8_t> words(4097 * 8);
  uint64_t state = 0x9e3779b97f4a7c15u;
  for (uint8_t& byte : words) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    byte = static_cast<uint8_t>(state >> 56);
  }
  // Doubles whose bits are NaNs with payloads, infinities and -0 among the random ones.
  const std::vector<uint64_t> special = {0x7ff0000000000001u, 0xfff8000000000123u,
                                         0x7ff0000000000000u, 0x8000000000000000u};
  for (size_t k = 0; k < special.size(); ++k) std::memcpy(&words[8 * k], &special[k], 8);
  const std::vector<ir::Literal> arguments = {
      ir::Literal::Create<uint16_t>(ir::DType::kF16, {kPatterns}, AllPatterns()),
      ir::Literal::Create<uint8_t>(ir::DType::kU8, {4097, 8}, words)};
  EXPECT_EQ(DeviceBitsDifferFromReference(kBitcastWidths, arguments, device(0)), "");
}

// The device against NumPy's bytes, so that the comparison above cannot pass with both sides
// wrong (f32 1.0 is 0x3f800000, its lowest byte first).
TEST_F(BitOpsDeviceTest, WidthChangingBitcastOnTheDeviceMatchesNumpy) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(R"(HloModule w
ENTRY main {
  p = f32[2]{0} parameter(0)
  ROOT b = u8[2,4]{1,0} bitcast-convert(p)
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<DeviceAndReference> results = RunOnDeviceAndReference(
      **module, {ir::Literal::Create<float>(ir::DType::kF32, {2}, {1.0f, -2.0f})}, device(0));
  ASSERT_TRUE(results.ok()) << results.status();
  // NumPy: np.float32([1, -2]).view(np.uint8) == [0, 0, 128, 63, 0, 0, 0, 192].
  const std::vector<uint8_t> want = {0, 0, 128, 63, 0, 0, 0, 192};
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(results->device.Get<uint8_t>(i), want[i]) << i;
}

}  // namespace
}  // namespace vkspmd::testing
