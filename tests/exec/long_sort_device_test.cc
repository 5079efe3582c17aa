// Sorts of rows longer than the ranking kernel takes (codegen::kMaxSortRow) on a device (lavapipe
// in CI) against the CPU reference: the bitonic network ir::ExpandLongSorts writes, for prime and
// power-of-two row lengths, ascending and descending comparators, ties that must keep their order
// (is_stable=true), several operands, a sort along a leading dim, and its dispatch count.
#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <random>
#include <string>

#include "absl/strings/str_replace.h"
#include "fmt/format.h"
#include "src/codegen/sort_code.h"
#include "src/exec/executable.h"
#include "src/ir/parser.h"
#include "tests/exec/device_reference.h"
#include "tests/support/device_test.h"
#include "tests/support/scoped_environment.h"

namespace vkspmd::testing {
namespace {

class LongSortDeviceTest : public DeviceTest {
 protected:
  void SetUp() override { OpenDevices(1); }

  // Runs `text` on the device against the reference (exactly); returns its dispatches per run.
  size_t ExpectExact(const std::string& text, const std::vector<ir::Literal>& arguments) {
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
    EXPECT_TRUE(module.ok()) << module.status();
    if (!module.ok()) return 0;
    EXPECT_EQ(DeviceDiffersFromReference(**module, arguments, device(0), /*relative=*/0), "");
    absl::StatusOr<std::unique_ptr<exec::Executable>> executable =
        exec::Executable::Compile(**module, device(0));
    EXPECT_TRUE(executable.ok()) << executable.status();
    return executable.ok() ? (*executable)->kernel_count() : 0;
  }
};

// f32 keys with many repeats (ties), NaNs and infinities every few elements.
ir::Literal Keys(const std::vector<int64_t>& dims, uint64_t seed, int64_t distinct) {
  ir::Literal keys(ir::Shape(ir::DType::kF32, dims));
  std::mt19937_64 random(seed);
  for (int64_t i = 0; i < keys.ElementCount(); ++i) {
    float value = static_cast<float>(static_cast<int64_t>(random() % distinct)) - distinct / 2;
    if (i % 37 == 5) value = std::numeric_limits<float>::quiet_NaN();
    if (i % 41 == 7) value = -std::numeric_limits<float>::infinity();
    keys.Set<float>(i, value);
  }
  return keys;
}

// argsort(x) along the rows, keys and order returned; DIRECTION LT (ascending) or GT.
constexpr char kArgsort[] = R"(HloModule argsort
%compare (a: f32[], b: f32[], i: s32[], j: s32[]) -> pred[] {{
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %i = s32[] parameter(2)
  %j = s32[] parameter(3)
  ROOT %lt = pred[] compare(%a, %b), direction={2}, type=TOTALORDER
}}
ENTRY %main (x: f32[{0},{1}]) -> (f32[{0},{1}], s32[{0},{1}]) {{
  %x = f32[{0},{1}] parameter(0)
  %iota = s32[{0},{1}] iota(), iota_dimension=1
  ROOT %sort = (f32[{0},{1}], s32[{0},{1}]) sort(%x, %iota), dimensions={{1}}, is_stable=true, to_apply=%compare
}})";

// Prime and power-of-two row lengths just past the kernel's bound and well beyond it, with ties
// (keys from 9 values) that the order must keep as the reference does, ascending and descending.
TEST_F(LongSortDeviceTest, ArgsortOfLongRowsMatchesTheReferenceExactly) {
  ASSERT_EQ(codegen::kMaxSortRow, 64);
  for (int64_t length : {65, 97, 128, 1009}) {
    for (const char* direction : {"LT", "GT"}) {
      SCOPED_TRACE(fmt::format("{} elements, {}", length, direction));
      ExpectExact(fmt::format(kArgsort, 3, length, direction), {Keys({3, length}, length, 9)});
    }
  }
}

// log2(P) (log2(P) + 1) / 2 compare-exchange stages for rows padded to P, each one kernel for
// every array it moves (keys, order and positions), and two more (the padded rows, and the last
// stage's outputs in the result's layout): 1000 elements pad to 1024, 55 stages, 57 dispatches
// (165 with a kernel per array); 65 pad to 128, 28 stages, 30. Counted on every driver alike:
// CPU drivers' limit on masked work (TargetInfo::max_masked_part_invocations) would give the
// 2 x 1000 rows' padding and result copies a dispatch per array (59), so it is off here.
TEST_F(LongSortDeviceTest, DispatchesPerStage) {
  const ScopedEnvironment no_masked_work_limit("VKSPMD_MASKED_PART_INVOCATIONS", "0");
  EXPECT_EQ(ExpectExact(fmt::format(kArgsort, 2, 1000, "LT"), {Keys({2, 1000}, 1, 1000)}), 57u);
  EXPECT_EQ(ExpectExact(fmt::format(kArgsort, 2, 65, "LT"), {Keys({2, 65}, 2, 1000)}), 30u);
}

// Three operands (an s32 key, an f32 tie-breaker, a pred payload) sorted along the leading dim of
// a [200, 3] array by a lexicographic comparator, and a one-operand sort (not a tuple).
TEST_F(LongSortDeviceTest, SeveralOperandsAlongALeadingDim) {
  const std::string text = R"(HloModule lexicographic
%compare (a: s32[], b: s32[], c: f32[], d: f32[], e: pred[], f: pred[]) -> pred[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  %c = f32[] parameter(2)
  %d = f32[] parameter(3)
  %e = pred[] parameter(4)
  %f = pred[] parameter(5)
  %less = pred[] compare(%a, %b), direction=LT
  %equal = pred[] compare(%a, %b), direction=EQ
  %greater = pred[] compare(%c, %d), direction=GT
  %then = pred[] and(%equal, %greater)
  ROOT %before = pred[] or(%less, %then)
}
ENTRY %main (k: s32[200,3], v: f32[200,3], p: pred[200,3]) -> (s32[200,3], f32[200,3], pred[200,3]) {
  %k = s32[200,3] parameter(0)
  %v = f32[200,3] parameter(1)
  %p = pred[200,3] parameter(2)
  ROOT %sort = (s32[200,3], f32[200,3], pred[200,3]) sort(%k, %v, %p), dimensions={0}, is_stable=true, to_apply=%compare
})";
  std::mt19937_64 random(3);
  ir::Literal keys(ir::Shape(ir::DType::kS32, {200, 3}));
  ir::Literal values(ir::Shape(ir::DType::kF32, {200, 3}));
  ir::Literal flags(ir::Shape(ir::DType::kPred, {200, 3}));
  for (int64_t i = 0; i < keys.ElementCount(); ++i) {
    keys.Set<int32_t>(i, static_cast<int32_t>(random() % 7) - 3);
    values.Set<float>(i, static_cast<float>(random() % 5));
    flags.Set<bool>(i, random() % 2 == 0);
  }
  ExpectExact(text, {keys, values, flags});
  const std::string single = R"(HloModule single
%less (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %lt = pred[] compare(%a, %b), direction=LT, type=TOTALORDER
}
ENTRY %main (x: f32[4,300]) -> f32[4,300] {
  %x = f32[4,300] parameter(0)
  ROOT %sort = f32[4,300] sort(%x), dimensions={1}, to_apply=%less
})";
  ExpectExact(single, {Keys({4, 300}, 4, 50)});
}

// 100000 values per row (padded to 2^17: 153 stages, 155 dispatches; a few s on lavapipe), only
// under the `slow` label (exec_long_sort_100000 sets VKSPMD_LONG_SORT_100000=1).
TEST_F(LongSortDeviceTest, HundredThousandValuesPerRow) {
  if (std::getenv("VKSPMD_LONG_SORT_100000") == nullptr) {
    GTEST_SKIP() << "set VKSPMD_LONG_SORT_100000=1 (ctest label slow)";
  }
  EXPECT_EQ(ExpectExact(fmt::format(kArgsort, 1, 100000, "LT"), {Keys({1, 100000}, 5, 100000)}),
            155u);
}

}  // namespace
}  // namespace vkspmd::testing
