// Halo exchange (issue 19, "no more bytes than GSPMD"): slice, pad, reverse, concatenate and
// reshapes along a split dim keep the tiling and move only boundary rows. Every case equals the
// unpartitioned evaluation on the CPU reference (padding poisoned with NaN, so a window that
// reads padding fails) on 2, 4 and 8 devices and 2x2, and moves no all-gather; the golden cases
// pin the collectives and bytes per device against hand-computed GSPMD partitions.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "src/base/status_macros.h"
#include "src/ir/printer.h"
#include "tests/spmd/spmd_test_util.h"

namespace vkspmd::spmd::testing {
namespace {

using ir::Opcode;

struct HaloCase {
  std::string name;
  std::string parameters;  // "x: f32[13,3]" or several
  std::string body;        // instructions after the parameters; the root is %y
  std::string result;      // result shape
  std::string spec;        // partition spec of every parameter (and of y)
  std::string result_spec = "";
  // On 2 devices an uneven reverse's halo form (mirror permute of the shard plus the padding's
  // rows) sends more than gathering the other device's shard; the partitioner then gathers.
  bool gathers_on_two = false;
};

void PrintTo(const HaloCase& c, std::ostream* out) { *out << c.name; }

std::string ModuleText(const HaloCase& c) {
  std::string parameters, declarations;
  int64_t number = 0;
  size_t begin = 0;
  while (begin < c.parameters.size()) {
    size_t end = c.parameters.find(';', begin);
    if (end == std::string::npos) end = c.parameters.size();
    const std::string parameter = c.parameters.substr(begin, end - begin);
    const size_t colon = parameter.find(':');
    const std::string name = parameter.substr(0, colon);
    const std::string shape = parameter.substr(colon + 2);
    parameters += fmt::format("{}{}: {}", number == 0 ? "" : ", ", name, shape);
    declarations += fmt::format("  %{} = {} parameter({})\n", name, shape, number++);
    begin = end + 1;
  }
  return fmt::format("HloModule halo\nENTRY %main ({}) -> {} {{\n{}{}\n}}\n", parameters, c.result,
                     declarations, c.body);
}

std::vector<std::string> ParameterNames(const HaloCase& c) {
  std::vector<std::string> names;
  size_t begin = 0;
  while (begin < c.parameters.size()) {
    size_t end = c.parameters.find(';', begin);
    if (end == std::string::npos) end = c.parameters.size();
    names.push_back(c.parameters.substr(begin, c.parameters.find(':', begin) - begin));
    begin = end + 1;
  }
  return names;
}

// `text` with shardings from `specs` (besides those in the text) partitioned over `mesh` and
// evaluated against the whole program.
absl::StatusOr<EquivalenceOutcome> Partitioned(const std::string& text,
                                               const std::map<std::string, std::string>& specs,
                                               const Mesh& mesh, uint64_t seed = 1) {
  VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<ir::Module> module, AnnotatedModule(text, specs, mesh));
  return RunEquivalence(*module, mesh, seed);
}

class HaloEquivalenceTest : public ::testing::TestWithParam<HaloCase> {};

// The case on one axis of 2, 4 and 8 devices: equal to the whole program, no all-gather.
TEST_P(HaloEquivalenceTest, MatchesUnpartitionedWithoutGathering) {
  const HaloCase& c = GetParam();
  const std::string text = ModuleText(c);
  for (int64_t devices : {2, 4, 8}) {
    SCOPED_TRACE(fmt::format("{} devices", devices));
    const Mesh mesh = *Mesh::Create({devices}, {}, {});
    std::map<std::string, std::string> specs = {
        {"y", AdaptSpec(c.result_spec.empty() ? c.spec : c.result_spec, mesh)}};
    for (const std::string& name : ParameterNames(c)) specs[name] = AdaptSpec(c.spec, mesh);
    for (uint64_t seed : {1, 2}) {
      absl::StatusOr<EquivalenceOutcome> outcome = Partitioned(text, specs, mesh, seed);
      ASSERT_TRUE(outcome.ok()) << outcome.status() << "\n" << text;
      EXPECT_LE(outcome->difference, 1e-6) << ir::PrintModule(*outcome->partition.module);
      EXPECT_EQ(CountOps(*outcome->partition.module, Opcode::kAllGather),
                c.gathers_on_two && devices == 2 ? 1 : 0)
          << ir::PrintModule(*outcome->partition.module);
      EXPECT_EQ(CountOps(*outcome->partition.module, Opcode::kAllReduce), 0);
      EXPECT_EQ(CountOps(*outcome->partition.module, Opcode::kAllToAll), 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Ops, HaloEquivalenceTest,
    ::testing::Values(
        HaloCase{"slice_shift_one", "x: f32[13,3]",
                 "  ROOT %y = f32[11,3] slice(f32[13,3] %x), slice={[1:12], [0:3]}", "f32[11,3]",
                 "(0, None)"},
        HaloCase{"slice_tail", "x: f32[16,3]",
                 "  ROOT %y = f32[9,3] slice(f32[16,3] %x), slice={[7:16], [0:3]}", "f32[9,3]",
                 "(0, None)"},
        HaloCase{"slice_head_and_columns", "x: s32[17,5]",
                 "  ROOT %y = s32[10,2] slice(s32[17,5] %x), slice={[0:10], [1:3]}", "s32[10,2]",
                 "(0, None)"},
        HaloCase{"slice_short", "x: f32[29]",
                 "  ROOT %y = f32[3] slice(f32[29] %x), slice={[20:23]}", "f32[3]", "(0)"},
        HaloCase{"pad_both_sides", "x: f32[13,3]",
                 "  %z = f32[] constant(-7)\n"
                 "  ROOT %y = f32[16,3] pad(f32[13,3] %x, f32[] %z), padding=2_1x0_0",
                 "f32[16,3]", "(0, None)"},
        HaloCase{"pad_negative_low_and_columns", "x: f32[12,3]",
                 "  %z = f32[] constant(5)\n"
                 "  ROOT %y = f32[14,5] pad(f32[12,3] %x, f32[] %z), padding=-1_3x1_1",
                 "f32[14,5]", "(0, None)"},
        HaloCase{"pad_negative_high", "x: s32[11]",
                 "  %z = s32[] constant(9)\n"
                 "  ROOT %y = s32[12] pad(s32[11] %x, s32[] %z), padding=3_-2",
                 "s32[12]", "(0)"},
        HaloCase{"reverse_even", "x: f32[16,3]",
                 "  ROOT %y = f32[16,3] reverse(f32[16,3] %x), dimensions={0}", "f32[16,3]",
                 "(0, None)"},
        HaloCase{"reverse_uneven_both_dims", "x: f32[13,3]",
                 "  ROOT %y = f32[13,3] reverse(f32[13,3] %x), dimensions={0,1}", "f32[13,3]",
                 "(0, None)", "", true},
        HaloCase{"concatenate_two", "a: f32[5,3];b: f32[8,3]",
                 "  ROOT %y = f32[13,3] concatenate(f32[5,3] %a, f32[8,3] %b), dimensions={0}",
                 "f32[13,3]", "(0, None)"},
        HaloCase{"concatenate_three_ints", "a: s32[3];b: s32[9];c: s32[7]",
                 "  ROOT %y = s32[19] concatenate(s32[3] %a, s32[9] %b, s32[7] %c), dimensions={0}",
                 "s32[19]", "(0)"},
        HaloCase{"reshape_merge_uneven", "x: f32[6,40]",
                 "  ROOT %y = f32[240] reshape(f32[6,40] %x)", "f32[240]", "(0, None)", "(0)"},
        HaloCase{"reshape_split_uneven", "x: f32[240]",
                 "  ROOT %y = f32[6,40] reshape(f32[240] %x)", "f32[6,40]", "(0)", "(0, None)"},
        HaloCase{"reshape_refactor", "x: f32[6,10]", "  ROOT %y = f32[4,15] reshape(f32[6,10] %x)",
                 "f32[4,15]", "(0, None)"},
        HaloCase{"reshape_refactor_back", "x: f32[4,15]",
                 "  ROOT %y = f32[6,10] reshape(f32[4,15] %x)", "f32[6,10]", "(0, None)"},
        HaloCase{"slice_stride_two", "x: f32[13,3]",
                 "  ROOT %y = f32[6,3] slice(f32[13,3] %x), slice={[1:12:2], [0:3]}", "f32[6,3]",
                 "(0, None)"},
        HaloCase{"slice_stride_three_and_columns", "x: f32[17,5]",
                 "  ROOT %y = f32[5,2] slice(f32[17,5] %x), slice={[2:17:3], [1:5:2]}", "f32[5,2]",
                 "(0, None)"},
        HaloCase{"slice_stride_beyond_a_shard", "x: s32[29]",
                 "  ROOT %y = s32[5] slice(s32[29] %x), slice={[0:29:7]}", "s32[5]", "(0)"},
        HaloCase{"pad_interior", "x: f32[6,3]",
                 "  %z = f32[] constant(-7)\n"
                 "  ROOT %y = f32[11,3] pad(f32[6,3] %x, f32[] %z), padding=0_0_1x0_0",
                 "f32[11,3]", "(0, None)"},
        HaloCase{"pad_interior_with_edges", "x: f32[7,3]",
                 "  %z = f32[] constant(4)\n"
                 "  ROOT %y = f32[20,3] pad(f32[7,3] %x, f32[] %z), padding=2_-1_2x0_0",
                 "f32[20,3]", "(0, None)"},
        HaloCase{"pad_interior_negative_low", "x: s32[9]",
                 "  %z = s32[] constant(9)\n"
                 "  ROOT %y = s32[16] pad(s32[9] %x, s32[] %z), padding=-3_2_1",
                 "s32[16]", "(0)"},
        HaloCase{"dynamic_slice_constant_start", "x: f32[13,3]",
                 "  %i = s32[] constant(4)\n  %z = s32[] constant(0)\n"
                 "  ROOT %y = f32[6,3] dynamic-slice(f32[13,3] %x, s32[] %i, s32[] %z), "
                 "dynamic_slice_sizes={6,3}",
                 "f32[6,3]", "(0, None)"},
        HaloCase{"dynamic_slice_clamped_constant_start", "x: f32[13,3]",
                 "  %i = s32[] constant(20)\n  %z = s32[] constant(-2)\n"
                 "  ROOT %y = f32[5,3] dynamic-slice(f32[13,3] %x, s32[] %i, s32[] %z), "
                 "dynamic_slice_sizes={5,3}",
                 "f32[5,3]", "(0, None)"}),
    [](const ::testing::TestParamInfo<HaloCase>& param) { return param.param.name; });

// Windows of every reach: random slice bounds and strides, dynamic-slices at constant starts
// (clamped too), pad amounts (negative, interior), uneven reverses and concatenations of odd parts
// over 2, 3, 4, 5 and 8 devices, each equal to the whole program.
TEST(HaloExchangeTest, RandomWindowsMatchUnpartitioned) {
  std::mt19937 random(19);
  const auto below = [&](int64_t n) { return static_cast<int64_t>(random() % n); };
  int64_t halo_cases = 0;
  for (int i = 0; i < 160; ++i) {
    const int64_t devices = std::vector<int64_t>{2, 3, 4, 5, 8}[below(5)];
    const int64_t size = 1 + below(23);
    std::string op, result;
    int64_t other = 1;  // rows of w, the concatenation's second part
    switch (i % 4) {
      case 0: {
        const int64_t start = below(size), limit = start + 1 + below(size - start);
        const int64_t stride = i % 8 < 4 ? 1 : 1 + below(4);
        result = fmt::format("f32[{},2]", (limit - start + stride - 1) / stride);
        if (i % 16 < 8) {
          op = fmt::format("slice(f32[{},2] %x), slice={{[{}:{}:{}], [0:2]}}", size, start, limit,
                           stride);
        } else {
          // The same window as a dynamic-slice at a constant start (clamped when beyond).
          result = fmt::format("f32[{},2]", limit - start);
          op = fmt::format(
              "dynamic-slice(f32[{},2] %x, s32[] %c, s32[] %c), dynamic_slice_sizes={{{},2}}", size,
              limit - start);
        }
        break;
      }
      case 1: {
        const int64_t low = below(9) - 4, high = below(9) - 4;
        const int64_t interior = i % 8 < 4 ? 0 : below(3);
        const int64_t padded = size + low + high + (size - 1) * interior;
        if (padded <= 0) continue;
        result = fmt::format("f32[{},2]", padded);
        op = fmt::format("pad(f32[{},2] %x, f32[] %z), padding={}_{}_{}x0_0", size, low, high,
                         interior);
        break;
      }
      case 2:
        result = fmt::format("f32[{},2]", size);
        op = fmt::format("reverse(f32[{},2] %x), dimensions={{0}}", size);
        break;
      default: {
        other = 1 + below(11);
        result = fmt::format("f32[{},2]", size + other);
        op = fmt::format("concatenate(f32[{},2] %x, f32[{},2] %w), dimensions={{0}}", size, other);
        break;
      }
    }

    const std::string text = fmt::format(
        "HloModule w\nENTRY %main (x: f32[{0},2], w: f32[{1},2]) -> {2} {{\n"
        "  %x = f32[{0},2] parameter(0)\n  %w = f32[{1},2] parameter(1)\n"
        "  %z = f32[] constant(2.5)\n  %c = s32[] constant({4})\n  ROOT %y = {2} {3}\n}}\n",
        size, other, result, op, below(size + 4) - 2);
    SCOPED_TRACE(fmt::format("{} devices:\n{}", devices, text));
    const Mesh mesh = *Mesh::Create({devices}, {}, {});
    absl::StatusOr<EquivalenceOutcome> outcome =
        Partitioned(text, {{"x", "(0, None)"}, {"w", "(0, None)"}, {"y", "(0, None)"}}, mesh, i);
    ASSERT_TRUE(outcome.ok()) << outcome.status();
    EXPECT_LE(outcome->difference, 1e-6) << ir::PrintModule(*outcome->partition.module);
    halo_cases += CountOps(*outcome->partition.module, Opcode::kAllGather) == 0 &&
                  CountOps(*outcome->partition.module, Opcode::kCollectivePermute) > 0;
  }
  EXPECT_GT(halo_cases, 60);
}

// dynamic-slice of a split dim at a start known only at run time: every start from before the
// dim to past its end (clamped as the op clamps), windows of 1, 2 and 5 rows, over 2, 3, 4 and 8
// devices (uneven, some shards empty), equal the whole program; short windows are summed by one
// all-reduce and never gather the operand.
TEST(HaloExchangeTest, DynamicSliceAtARunTimeStartMatchesUnpartitioned) {
  for (int64_t devices : {2, 3, 4, 8}) {
    for (int64_t rows : {1, 2, 5}) {
      const std::string text = fmt::format(R"(HloModule d
ENTRY %main (x: f32[13,3], i: s32[], j: s32[]) -> f32[{0},2] {{
  %x = f32[13,3] parameter(0)
  %i = s32[] parameter(1)
  %j = s32[] parameter(2)
  ROOT %y = f32[{0},2] dynamic-slice(f32[13,3] %x, s32[] %i, s32[] %j), dynamic_slice_sizes={{{0},2}}
}})",
                                           rows);
      const Mesh mesh = *Mesh::Create({devices}, {}, {});
      absl::StatusOr<std::unique_ptr<ir::Module>> module =
          AnnotatedModule(text, {{"x", "(0, None)"}, {"y", "(None, None)"}}, mesh);
      ASSERT_TRUE(module.ok()) << module.status();
      std::vector<ir::Literal> arguments = RandomArguments(*(*module)->entry(), devices * rows);
      for (int64_t start = -2; start <= 15; ++start) {
        SCOPED_TRACE(fmt::format("{} devices, {} rows from {}", devices, rows, start));
        arguments[1] = ir::Literal::Create<int32_t>(ir::DType::kS32, {}, {int32_t(start)});
        arguments[2] = ir::Literal::Create<int32_t>(ir::DType::kS32, {}, {int32_t(start % 3)});
        absl::StatusOr<EquivalenceOutcome> outcome =
            RunEquivalence(**module, mesh, 1, nullptr, &arguments);
        ASSERT_TRUE(outcome.ok()) << outcome.status();
        EXPECT_EQ(outcome->difference, 0) << ir::PrintModule(*outcome->partition.module);
        if (rows <= 2) {
          EXPECT_EQ(CountOps(*outcome->partition.module, Opcode::kAllGather), 0);
          EXPECT_EQ(CountOps(*outcome->partition.module, Opcode::kAllReduce), 1);
        }
      }
    }
  }
}

// The masked dynamic-slice for other element and index types (pred all-reduces with or, wide and
// unsigned starts are clamped in their own type), for two split sliced dims on a 2x2 mesh (one
// all-reduce over both axes), and into a result that wants the dim split (a reduce-scatter).
TEST(HaloExchangeTest, DynamicSliceAtARunTimeStartForEveryTypeAndSplit) {
  struct Case {
    std::string element, index;
    std::vector<int64_t> mesh;
    std::string shape, sizes, result, x_spec, y_spec;
    ir::Opcode collective;
  };
  const std::vector<Case> cases = {{"pred",
                                    "s32",
                                    {4},
                                    "[13,3]",
                                    "{2,3}",
                                    "[2,3]",
                                    "(0, None)",
                                    "(None, None)",
                                    Opcode::kAllReduce},
                                   {"s32",
                                    "u32",
                                    {4},
                                    "[13,3]",
                                    "{2,3}",
                                    "[2,3]",
                                    "(0, None)",
                                    "(None, None)",
                                    Opcode::kAllReduce},
                                   {"bf16",
                                    "s64",
                                    {4},
                                    "[13,3]",
                                    "{2,3}",
                                    "[2,3]",
                                    "(0, None)",
                                    "(None, None)",
                                    Opcode::kAllReduce},
                                   {"f32",
                                    "s32",
                                    {2, 2},
                                    "[9,7]",
                                    "{2,3}",
                                    "[2,3]",
                                    "(0, 1)",
                                    "(None, None)",
                                    Opcode::kAllReduce},
                                   {"f32",
                                    "s32",
                                    {4},
                                    "[16,3]",
                                    "{4,3}",
                                    "[4,3]",
                                    "(0, None)",
                                    "(0, None)",
                                    Opcode::kReduceScatter}};
  for (const Case& c : cases) {
    const std::string text = fmt::format(R"(HloModule d
ENTRY %main (x: {0}{2}, i: {1}[], j: {1}[]) -> {0}{4} {{
  %x = {0}{2} parameter(0)
  %i = {1}[] parameter(1)
  %j = {1}[] parameter(2)
  ROOT %y = {0}{4} dynamic-slice({0}{2} %x, {1}[] %i, {1}[] %j), dynamic_slice_sizes={3}
}})",
                                         c.element, c.index, c.shape, c.sizes, c.result);
    const Mesh mesh = *Mesh::Create(c.mesh, {}, {});
    absl::StatusOr<std::unique_ptr<ir::Module>> module =
        AnnotatedModule(text, {{"x", c.x_spec}, {"y", c.y_spec}}, mesh);
    ASSERT_TRUE(module.ok()) << module.status();
    std::vector<ir::Literal> arguments = RandomArguments(*(*module)->entry(), 5);
    const ir::Shape index_shape = (*module)->entry()->parameter(1)->shape();
    for (int64_t start : {-3, 0, 1, 3, 4, 6, 9, 20}) {
      SCOPED_TRACE(fmt::format("{}: start {}", text, start));
      for (int64_t p : {1, 2}) {
        arguments[p] = ir::Literal(index_shape);
        // Negative starts of unsigned indices wrap to huge values: clamped to the end.
        if (index_shape.dtype() == ir::DType::kU32) {
          arguments[p].Set<uint32_t>(0, static_cast<uint32_t>(start * p));
        } else if (index_shape.dtype() == ir::DType::kS64) {
          arguments[p].Set<int64_t>(0, start * p * 1000000000000);
        } else {
          arguments[p].Set<int32_t>(0, static_cast<int32_t>(start * p));
        }
      }
      absl::StatusOr<EquivalenceOutcome> outcome =
          RunEquivalence(**module, mesh, 1, nullptr, &arguments);
      ASSERT_TRUE(outcome.ok()) << outcome.status();
      EXPECT_EQ(outcome->difference, 0) << ir::PrintModule(*outcome->partition.module);
      ASSERT_EQ(outcome->partition.collectives.size(), 1u)
          << ir::PrintModule(*outcome->partition.module);
      EXPECT_EQ(outcome->partition.collectives[0].kind, c.collective);
    }
  }
}

// The masked dynamic-slice returns a window of negative zeros as negative zeros (the devices that
// do not hold a row add -0, which leaves every value as it is).
TEST(HaloExchangeTest, DynamicSliceAtARunTimeStartKeepsNegativeZeros) {
  const std::string text = R"(HloModule d
ENTRY %main (x: f32[13,3], i: s32[]) -> f32[2,3] {
  %x = f32[13,3] parameter(0)
  %i = s32[] parameter(1)
  %z = s32[] constant(0)
  ROOT %y = f32[2,3] dynamic-slice(f32[13,3] %x, s32[] %i, s32[] %z), dynamic_slice_sizes={2,3}
})";
  const Mesh mesh = *Mesh::Create({4}, {}, {});
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      AnnotatedModule(text, {{"x", "(0, None)"}, {"y", "(None, None)"}}, mesh);
  ASSERT_TRUE(module.ok()) << module.status();
  std::vector<ir::Literal> arguments = {
      ir::Literal::Create<float>(ir::DType::kF32, {13, 3}, std::vector<float>(39, -0.0f)),
      ir::Literal::Create<int32_t>(ir::DType::kS32, {}, {3})};
  absl::StatusOr<EquivalenceOutcome> outcome =
      RunEquivalence(**module, mesh, 1, nullptr, &arguments);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  ASSERT_EQ(CountOps(*outcome->partition.module, Opcode::kAllReduce), 1);
  for (int64_t e = 0; e < outcome->actual.ElementCount(); ++e) {
    EXPECT_TRUE(std::signbit(outcome->actual.Get<float>(e))) << "element " << e;
  }
}

// On a 2x2 mesh the halo runs along each split dim the op changes (strides and interior padding
// on both), and along a dim split over both axes.
TEST(HaloExchangeTest, TwoSplitDimsOnATwoByTwoMesh) {
  const Mesh mesh = *Mesh::Create({2, 2}, {}, {});
  const std::vector<std::pair<std::string, std::string>> programs = {{"slice", R"(HloModule s
ENTRY %main (x: f32[11,9]) -> f32[8,6] {
  %x = f32[11,9] parameter(0)
  ROOT %y = f32[8,6] slice(f32[11,9] %x), slice={[2:10], [1:7]}
})"},
                                                                     {"pad", R"(HloModule p
ENTRY %main (x: f32[11,9]) -> f32[13,8] {
  %x = f32[11,9] parameter(0)
  %z = f32[] constant(3)
  ROOT %y = f32[13,8] pad(f32[11,9] %x, f32[] %z), padding=1_1x-2_1
})"},
                                                                     {"reverse", R"(HloModule r
ENTRY %main (x: f32[11,9]) -> f32[11,9] {
  %x = f32[11,9] parameter(0)
  ROOT %y = f32[11,9] reverse(f32[11,9] %x), dimensions={0,1}
})"},
                                                                     {"strided", R"(HloModule t
ENTRY %main (x: f32[11,9]) -> f32[4,3] {
  %x = f32[11,9] parameter(0)
  ROOT %y = f32[4,3] slice(f32[11,9] %x), slice={[1:11:3], [0:9:4]}
})"},
                                                                     {"interior", R"(HloModule i
ENTRY %main (x: f32[11,9]) -> f32[22,26] {
  %x = f32[11,9] parameter(0)
  %z = f32[] constant(3)
  ROOT %y = f32[22,26] pad(f32[11,9] %x, f32[] %z), padding=2_-1_1x0_1_2
})"}};
  for (const auto& [name, text] : programs) {
    // Both dims split, then the rows split over both axes (minor axis first: shard k of 4 is
    // on the device at (k % 2, k / 2)).
    for (const std::string spec : {"(0, 1)", "((1, 0), None)"}) {
      SCOPED_TRACE(name + " " + spec);
      absl::StatusOr<EquivalenceOutcome> outcome =
          Partitioned(text, {{"x", spec}, {"y", spec}}, mesh);
      ASSERT_TRUE(outcome.ok()) << outcome.status();
      EXPECT_LE(outcome->difference, 1e-6) << ir::PrintModule(*outcome->partition.module);
      EXPECT_EQ(CountOps(*outcome->partition.module, Opcode::kAllGather), 0)
          << ir::PrintModule(*outcome->partition.module);
    }
  }
}

// A reshape whose major dims are split too (a batch dim on another mesh axis) runs the halo
// along its merged or split dim within each batch shard.
TEST(HaloExchangeTest, ReshapeWithASplitBatchDim) {
  const Mesh mesh = *Mesh::Create({2, 2}, {}, {});
  struct Case {
    std::string text;
    std::string from, to;
    int64_t permutes;
  };
  const std::vector<Case> cases = {{R"(HloModule m
ENTRY %main (x: f32[5,7,6]) -> f32[5,42] {
  %x = f32[5,7,6] parameter(0)
  ROOT %y = f32[5,42] reshape(f32[5,7,6] %x)
})",
                                    "(0, 1, None)", "(0, 1)", 1},
                                   {R"(HloModule s
ENTRY %main (x: f32[5,42]) -> f32[5,7,6] {
  %x = f32[5,42] parameter(0)
  ROOT %y = f32[5,7,6] reshape(f32[5,42] %x)
})",
                                    "(0, 1)", "(0, 1, None)", 1},
                                   {R"(HloModule lined
ENTRY %main (x: f32[3,8,5]) -> f32[3,40] {
  %x = f32[3,8,5] parameter(0)
  ROOT %y = f32[3,40] reshape(f32[3,8,5] %x)
})",
                                    "(0, 1, None)", "(0, 1)", 0}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<EquivalenceOutcome> outcome =
        Partitioned(c.text, {{"x", c.from}, {"y", c.to}}, mesh);
    ASSERT_TRUE(outcome.ok()) << outcome.status();
    EXPECT_LE(outcome->difference, 1e-6) << ir::PrintModule(*outcome->partition.module);
    EXPECT_EQ(outcome->partition.collectives.size(), static_cast<size_t>(c.permutes))
        << ir::PrintModule(*outcome->partition.module);
    EXPECT_EQ(CountOps(*outcome->partition.module, Opcode::kCollectivePermute), c.permutes);
  }
}

// As in GSPMD, a split passes through slice, pad, reverse and concatenate to unannotated values
// (window factors), so a program annotated on its parameter alone keeps its rows split and
// exchanges halos, never gathering.
TEST(HaloExchangeTest, SplitPropagatesThroughWindowOps) {
  const std::string text = R"(HloModule chain, num_partitions=4
ENTRY %main (x: f32[19,3]) -> f32[22,3] {
  %x = f32[19,3] parameter(0), sharding={devices=[4,1]<=[4]}
  %s = f32[17,3] slice(f32[19,3] %x), slice={[1:18], [0:3]}
  %z = f32[] constant(0)
  %p = f32[20,3] pad(f32[17,3] %s, f32[] %z), padding=2_1x0_0
  %r = f32[20,3] reverse(f32[20,3] %p), dimensions={0}
  %s.head = f32[2,3] slice(f32[19,3] %x), slice={[0:2], [0:3]}
  %c = f32[22,3] concatenate(f32[20,3] %r, f32[2,3] %s.head), dimensions={0}
  ROOT %n = f32[22,3] negate(f32[22,3] %c)
})";
  absl::StatusOr<EquivalenceOutcome> outcome = Partitioned(text, {}, *Mesh::Create({4}, {}, {}));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_LE(outcome->difference, 1e-6) << ir::PrintModule(*outcome->partition.module);
  EXPECT_EQ(CountOps(*outcome->partition.module, Opcode::kAllGather), 0)
      << ir::PrintModule(*outcome->partition.module);
  EXPECT_TRUE(outcome->partition.fallbacks.empty());
  EXPECT_EQ(outcome->partition.result_shardings[0].dims,
            (std::vector<std::vector<int64_t>>{{0}, {}}));
}

// Operands split otherwise than the result are resharded to its tiling first, when that and the
// halo cost no more than gathering: a replicated part of a concatenation is sliced locally (no
// bytes), a slice of a value split on its other dim moves by one all-to-all.
TEST(HaloExchangeTest, OperandsSplitOtherwiseAreReshardedFirst) {
  const Mesh mesh = *Mesh::Create({4}, {}, {});
  absl::StatusOr<EquivalenceOutcome> concatenated =
      Partitioned(R"(HloModule c
ENTRY %main (a: f32[13,3], b: f32[6,3]) -> f32[19,3] {
  %a = f32[13,3] parameter(0)
  %b = f32[6,3] parameter(1)
  ROOT %y = f32[19,3] concatenate(f32[13,3] %a, f32[6,3] %b), dimensions={0}
})",
                  {{"a", "(0, None)"}, {"b", "(None, None)"}, {"y", "(0, None)"}}, mesh);
  ASSERT_TRUE(concatenated.ok()) << concatenated.status();
  EXPECT_LE(concatenated->difference, 1e-6) << ir::PrintModule(*concatenated->partition.module);
  EXPECT_EQ(CountOps(*concatenated->partition.module, Opcode::kAllGather), 0)
      << ir::PrintModule(*concatenated->partition.module);

  absl::StatusOr<EquivalenceOutcome> sliced =
      Partitioned(R"(HloModule s
ENTRY %main (x: f32[16,12]) -> f32[14,12] {
  %x = f32[16,12] parameter(0)
  ROOT %y = f32[14,12] slice(f32[16,12] %x), slice={[1:15], [0:12]}
})",
                  {{"x", "(None, 0)"}, {"y", "(0, None)"}}, mesh);
  ASSERT_TRUE(sliced.ok()) << sliced.status();
  EXPECT_LE(sliced->difference, 1e-6) << ir::PrintModule(*sliced->partition.module);
  EXPECT_EQ(CountOps(*sliced->partition.module, Opcode::kAllGather), 0)
      << ir::PrintModule(*sliced->partition.module);
  EXPECT_EQ(CountOps(*sliced->partition.module, Opcode::kAllToAll), 1);
}

// A value in a device order ({devices=[2,1]1,0}: device 1 holds the first rows) is windowed in
// that layout, and the result keeps it.
TEST(HaloExchangeTest, DeviceOrderIsKept) {
  const std::string text = R"(HloModule ordered, num_partitions=2
ENTRY %main (x: f32[9,4]) -> f32[7,4] {
  %x = f32[9,4] parameter(0), sharding={devices=[2,1]1,0}
  ROOT %y = f32[7,4] slice(f32[9,4] %x), slice={[2:9], [0:4]}, sharding={devices=[2,1]1,0}
})";
  absl::StatusOr<EquivalenceOutcome> outcome = Partitioned(text, {}, *Mesh::Create({2}, {}, {}));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_LE(outcome->difference, 1e-6) << ir::PrintModule(*outcome->partition.module);
  ASSERT_EQ(outcome->partition.collectives.size(), 1u)
      << ir::PrintModule(*outcome->partition.module);
  EXPECT_EQ(outcome->partition.collectives[0].kind, Opcode::kCollectivePermute);
  // Device 1 holds rows 0..4 and wants rows 2..5: row 5 comes from device 0, one row of 4.
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (const auto& instruction : outcome->partition.module->entry()->instructions()) {
    if (instruction->opcode() == Opcode::kCollectivePermute) {
      pairs = instruction->attributes().source_target_pairs;
    }
  }
  EXPECT_EQ(pairs, (std::vector<std::pair<int64_t, int64_t>>{{0, 1}}));
  EXPECT_EQ(outcome->partition.collectives[0].bytes_per_device, 4 * 4);
}

}  // namespace
}  // namespace vkspmd::spmd::testing
