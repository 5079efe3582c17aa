// Random modules compiled for the device and compared with the CPU reference. CI runs a fixed set
// of seeds; VKSPMD_DIFFERENTIAL_CASES=N runs more. A seed that ever fails becomes a named case in
// executable_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "absl/strings/str_cat.h"
#include "src/ir/printer.h"
#include "src/ir/verifier.h"
#include "tests/exec/device_reference.h"
#include "tests/exec/random_module.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

// Floats within `tolerance` of max(1, |reference|) (1e-3 for f32: chains of up to 40 f32 ops
// (tanh, sine, exp, sums of products) on the device against double-then-round on the CPU).
std::string Difference(const ir::Literal& got, const ir::Literal& want, double tolerance = 1e-3) {
  for (size_t k = 0; k < want.tuple_elements().size(); ++k) {
    const ir::Literal& a = got.tuple_elements()[k];
    const ir::Literal& b = want.tuple_elements()[k];
    for (int64_t i = 0; i < b.ElementCount(); ++i) {
      if (ir::IsFloat(b.dtype())) {
        double x = a.GetAsDouble(i), y = b.GetAsDouble(i);
        if ((std::isnan(x) && std::isnan(y)) || x == y) continue;
        if (std::fabs(x - y) <= tolerance * std::max(1.0, std::fabs(y))) continue;
        return absl::StrCat("output ", k, " element ", i, ": device ", x, ", reference ", y);
      }
      if (a.GetAsInt64(i) != b.GetAsInt64(i)) {
        return absl::StrCat("output ", k, " element ", i, ": device ", a.GetAsInt64(i),
                            ", reference ", b.GetAsInt64(i));
      }
    }
  }
  return "";
}

class DifferentialTest : public DeviceTest {};

TEST_F(DifferentialTest, RandomModulesMatchTheReference) {
  OpenDevices(1);
  int cases = 200;
  if (const char* requested = std::getenv("VKSPMD_DIFFERENTIAL_CASES"))
    cases = std::atoi(requested);
  for (int seed = 1; seed <= cases; ++seed) {
    absl::StatusOr<std::unique_ptr<ir::Module>> module = RandomModule(seed, 20 + seed % 21);
    ASSERT_TRUE(module.ok()) << "seed " << seed << ": " << module.status();
    ASSERT_TRUE(ir::VerifyModule(**module).ok()) << ir::VerifyModule(**module);
    std::vector<ir::Literal> arguments = RandomArguments(**module, seed);
    absl::StatusOr<DeviceAndReference> results =
        RunOnDeviceAndReference(**module, arguments, device(0));
    ASSERT_TRUE(results.ok()) << "seed " << seed << ": " << results.status().message() << "\n"
                              << ir::PrintModule(**module);
    ASSERT_EQ(Difference(results->device, results->reference), "") << "seed " << seed << "\n"
                                                                   << ir::PrintModule(**module);
  }
}

// The same generator with f16 and bf16 values: both sides round after every op alike, so most
// outputs are exact, but a transcendental op's one-ulp difference can grow along a chain (a sum of
// products cancelling, an exp): within 4 ulps of the type relative to max(1, |reference|)
// (4 * 2^-11 for f16, 4 * 2^-8 for bf16).
TEST_F(DifferentialTest, RandomHalfPrecisionModulesMatchTheReference) {
  OpenDevices(1);
  for (auto [type, tolerance] :
       {std::pair{ir::DType::kF16, 4.0 / 2048}, std::pair{ir::DType::kBF16, 4.0 / 256}}) {
    for (int seed = 1; seed <= 40; ++seed) {
      absl::StatusOr<std::unique_ptr<ir::Module>> module = RandomModule(seed, 20 + seed % 21, type);
      ASSERT_TRUE(module.ok()) << "seed " << seed << ": " << module.status();
      ASSERT_TRUE(ir::VerifyModule(**module).ok()) << ir::VerifyModule(**module);
      std::vector<ir::Literal> arguments = RandomArguments(**module, seed);
      absl::StatusOr<DeviceAndReference> results =
          RunOnDeviceAndReference(**module, arguments, device(0));
      ASSERT_TRUE(results.ok()) << ir::DTypeName(type) << " seed " << seed << ": "
                                << results.status().message() << "\n"
                                << ir::PrintModule(**module);
      EXPECT_EQ(Difference(results->device, results->reference, tolerance), "")
          << ir::DTypeName(type) << " seed " << seed << "\n"
          << ir::PrintModule(**module);
    }
  }
}

}  // namespace
}  // namespace vkspmd::testing
