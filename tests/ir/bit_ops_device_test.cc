// bitcast-convert and reduce-precision on a device (lavapipe in CI) against the CPU reference,
// bit for bit: every result is read back through bitcast-convert to u32, over a 7x13 array of
// magnitudes from 1e-6 to 1e6 with NaN, infinities and signed zeros.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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

}  // namespace
}  // namespace vkspmd::testing
