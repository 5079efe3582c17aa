// Kernels reading their inputs through uniform texel buffers (TargetInfo::texel_reads, the default
// on CPU drivers) and through storage buffers (VKSPMD_TEXEL_READS=0, as on GPUs), each forced on
// this device: every element type a texel holds four of (32-, 16- and 8-bit), sizes that end in a
// partial texel, reads at other indices than the kernel's own, and dots reading vec4 runs, all
// against the CPU reference (integers exactly). The plan's GLSL shows which path ran.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "src/codegen/kernel_plan.h"
#include "src/ir/parser.h"
#include "tests/exec/device_reference.h"
#include "tests/support/compiled_program_test.h"

namespace vkspmd::testing {
namespace {

using codegen::KernelPlan;
using codegen::ProgramPlan;

class TexelReadsTest : public CompiledProgramTest, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    setenv("VKSPMD_TEXEL_READS", GetParam() ? "1" : "0", 1);
    OpenDevices(1);
  }
  void TearDown() override {
    unsetenv("VKSPMD_TEXEL_READS");
    CompiledProgramTest::TearDown();
  }

  // Whether the kernels of `plan` declare texel buffers (and no kernel reads its inputs through
  // storage buffers where they do).
  static bool ReadsTexels(const ProgramPlan& plan) {
    bool texels = false;
    for (const KernelPlan& kernel : plan.kernels) {
      texels = texels || kernel.glsl.find("samplerBuffer") != std::string::npos;
    }
    return texels;
  }

  // Compiles and compares `text`, then checks that its kernels read texels exactly when the test
  // says so.
  void CompareOnBothPaths(const std::string& text, double relative = 1e-4) {
    const ProgramPlan* plan = CompileAndCompare(text, relative);
    ASSERT_NE(plan, nullptr);
    EXPECT_EQ(ReadsTexels(*plan), GetParam()) << text;
  }
};

// Elementwise ops of each element type over sizes ending in every position of a texel, one
// operand read reversed (another element than the invocation's own); exact, as the reference
// rounds 16-bit floats' f32 results as the device does.
TEST_P(TexelReadsTest, EveryElementTypeAndPartialLastTexels) {
  const std::vector<std::pair<std::string, std::string>> types = {
      {"f32", "add"},       {"s32", "add"}, {"u32", "multiply"}, {"f16", "add"},
      {"bf16", "multiply"}, {"s16", "add"}, {"u16", "subtract"}, {"s8", "add"},
      {"u8", "add"},        {"pred", "and"}};
  for (const auto& [type, op] : types) {
    for (int size : {1, 2, 3, 5, 6, 7, 13, 4099}) {
      SCOPED_TRACE(absl::StrCat(type, "[", size, "]"));
      const std::string text =
          absl::StrReplaceAll(R"(
HloModule texels
ENTRY main {
  x = $T[$N] parameter(0)
  y = $T[$N] parameter(1)
  r = $T[$N] reverse(y), dimensions={0}
  ROOT z = $T[$N] $OP(x, r)
})",
                              {{"$T", type}, {"$N", absl::StrCat(size)}, {"$OP", op}});
      CompareOnBothPaths(text, /*relative=*/0);
    }
  }
}

// An empty input is bound as one texel of padding (a view must not be empty).
TEST_P(TexelReadsTest, AnEmptyInputNextToOthers) {
  CompareOnBothPaths(R"(
HloModule empty
ENTRY main {
  e = f32[0] parameter(0)
  y = f32[5] parameter(1)
  c = f32[5] concatenate(e, y), dimensions={0}
  ROOT z = f32[5] add(c, y)
})",
                     /*relative=*/0);
}

// f32 inputs keep every bit: subnormals, both zeros, infinities and NaN payloads (read as bits,
// not through a float format that may flush or quiet them), through a vector read (the dot's
// operand) and scalar reads (the bitcast at the kernel's own index and reversed).
TEST_P(TexelReadsTest, FloatBitsPassThroughUnchanged) {
  const std::vector<uint32_t> bits = {0x00000001u, 0x807fffffu, 0x00000000u, 0x80000000u,
                                      0x7f800000u, 0xff800000u, 0x7fc00001u, 0xffbfffffu,
                                      0x3f800000u, 0x00400000u, 0x7f7fffffu};
  std::vector<float> values(bits.size());
  std::memcpy(values.data(), bits.data(), bits.size() * sizeof(float));
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(R"(
HloModule bits
ENTRY main {
  x = f32[11] parameter(0)
  r = f32[11] reverse(x), dimensions={0}
  b = u32[11] bitcast-convert(x)
  br = u32[11] bitcast-convert(r)
  ROOT t = (u32[11], u32[11]) tuple(b, br)
})");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<DeviceAndReference> results = RunOnDeviceAndReference(
      **module, {ir::Literal::Create(ir::DType::kF32, {11}, values)}, device(0));
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ(CompareLiterals(results->device, results->reference, 0), "");
  // And the bits themselves (an oracle independent of the reference).
  const std::vector<ir::Literal>& elements = results->device.tuple_elements();
  ASSERT_EQ(elements.size(), 2u);
  for (size_t k = 0; k < bits.size(); ++k) {
    EXPECT_EQ(elements[0].Get<uint32_t>(k), bits[k]) << "element " << k;
    EXPECT_EQ(elements[1].Get<uint32_t>(k), bits[bits.size() - 1 - k]) << "element " << k;
  }
}

// Dots whose operands are read as vec4 runs (32-bit) and runs of four halves, with odd sizes
// around them (scalar reads of the same buffers at the ends).
TEST_P(TexelReadsTest, DotsReadingRunsOfFour) {
  for (const char* type : {"f32", "f16", "bf16"}) {
    for (const auto& [m, k, n] : std::vector<std::tuple<int, int, int>>{
             {5, 7, 9}, {33, 64, 20}, {17, 36, 68}, {64, 13, 256}}) {
      SCOPED_TRACE(absl::StrCat(type, " ", m, "x", k, "x", n));
      const std::string text = absl::StrReplaceAll(
          R"(
HloModule dot
ENTRY main {
  a = $T[$M,$K] parameter(0)
  b = $T[$K,$N] parameter(1)
  c = $T[$N] parameter(2)
  d = $T[$M,$N] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  cb = $T[$M,$N] broadcast(c), dimensions={1}
  ROOT e = $T[$M,$N] add(d, cb)
})",
          {{"$T", type},
           {"$M", absl::StrCat(m)},
           {"$K", absl::StrCat(k)},
           {"$N", absl::StrCat(n)}});
      CompareOnBothPaths(text, std::string(type) == "f32" ? 1e-4 : 2e-2);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Reads, TexelReadsTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? std::string("TexelBuffers")
                                              : std::string("StorageBuffers");
                         });

}  // namespace
}  // namespace vkspmd::testing
