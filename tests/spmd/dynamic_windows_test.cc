// dynamic-update-slice and mixed-start dynamic-slice along split dims (issue 19): each device
// writes the rows of an update that land in its shard, for constant and run-time starts (clamped
// as XLA clamps them), so nothing is gathered; a window with constant and run-time starts is
// summed by one all-reduce. Every case equals the unpartitioned evaluation on the CPU reference.
#include <string>
#include <vector>

#include "fmt/format.h"
#include "gtest/gtest.h"
#include "src/ir/printer.h"
#include "tests/spmd/spmd_test_util.h"

namespace vkspmd::spmd::testing {
namespace {

using ir::Opcode;

std::string RunTimeStartText(const std::string& element, const std::string& index,
                             const std::string& shape, const std::string& update) {
  return fmt::format(R"(HloModule d
ENTRY %main (x: {0}{2}, u: {0}{3}, i: {1}[], j: {1}[]) -> {0}{2} {{
  %x = {0}{2} parameter(0)
  %u = {0}{3} parameter(1)
  %i = {1}[] parameter(2)
  %j = {1}[] parameter(3)
  ROOT %y = {0}{2} dynamic-update-slice({0}{2} %x, {0}{3} %u, {1}[] %i, {1}[] %j)
}})",
                     element, index, shape, update);
}

// The partitioned program equals the whole one exactly and sends nothing.
void ExpectExactWithoutCollectives(const ir::Module& module, const Mesh& mesh,
                                   const std::vector<ir::Literal>* arguments = nullptr) {
  absl::StatusOr<EquivalenceOutcome> outcome = RunEquivalence(module, mesh, 1, nullptr, arguments);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->difference, 0) << ir::PrintModule(*outcome->partition.module);
  EXPECT_TRUE(outcome->partition.collectives.empty())
      << ir::PrintModule(*outcome->partition.module);
}

// Every start from before the dim to past its end, updates of 1, 2, 5 and 12 rows of 13, over 2,
// 3, 4 and 8 devices (uneven; on 8 some shards are all padding): exact, and no collective at all.
TEST(DynamicWindowsTest, RunTimeStartOnASplitDimMatchesUnpartitioned) {
  for (int64_t devices : {2, 3, 4, 8}) {
    for (int64_t rows : {1, 2, 5, 12}) {
      const std::string text =
          RunTimeStartText("f32", "s32", "[13,3]", fmt::format("[{},2]", rows));
      const Mesh mesh = *Mesh::Create({devices}, {}, {});
      absl::StatusOr<std::unique_ptr<ir::Module>> module = AnnotatedModule(
          text, {{"x", "(0, None)"}, {"u", "(None, None)"}, {"y", "(0, None)"}}, mesh);
      ASSERT_TRUE(module.ok()) << module.status();
      std::vector<ir::Literal> arguments = RandomArguments(*(*module)->entry(), devices * rows);
      for (int64_t start = -3; start <= 16; ++start) {
        SCOPED_TRACE(fmt::format("{} devices, {} rows at {}", devices, rows, start));
        arguments[2] = ir::Literal::Create<int32_t>(ir::DType::kS32, {}, {int32_t(start)});
        arguments[3] = ir::Literal::Create<int32_t>(ir::DType::kS32, {}, {int32_t(start % 3)});
        ExpectExactWithoutCollectives(**module, mesh, &arguments);
      }
    }
  }
}

// Constant starts (in the dim, straddling shard boundaries, beyond either end), on 4 devices and
// on a 2x2 mesh with both dims split.
TEST(DynamicWindowsTest, ConstantStartOnASplitDimMatchesUnpartitioned) {
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{4}, {2, 2}}) {
    const Mesh mesh = *Mesh::Create(shape, {}, {});
    const std::string spec = shape.size() == 1 ? "(0, None)" : "(0, 1)";
    for (int64_t start : {-4, 0, 3, 4, 6, 9, 30}) {
      const std::string text = fmt::format(R"(HloModule d
ENTRY %main (x: f32[13,7], u: f32[5,2]) -> f32[13,7] {{
  %x = f32[13,7] parameter(0)
  %u = f32[5,2] parameter(1)
  %i = s32[] constant({})
  %j = s32[] constant({})
  ROOT %y = f32[13,7] dynamic-update-slice(f32[13,7] %x, f32[5,2] %u, s32[] %i, s32[] %j)
}})",
                                           start, start / 2);
      SCOPED_TRACE(text + " on " + mesh.ToString());
      absl::StatusOr<std::unique_ptr<ir::Module>> module =
          AnnotatedModule(text, {{"x", spec}, {"u", "(None, None)"}, {"y", spec}}, mesh);
      ASSERT_TRUE(module.ok()) << module.status();
      ExpectExactWithoutCollectives(**module, mesh);
    }
  }
}

// Other element and index types: pred, s32 with unsigned starts (a negative start wraps to a huge
// one, clamped to the end), bf16 with s64 starts beyond the dim (clamped in their own type); both
// dims split on a 2x2 mesh, and rows split over both of its axes.
TEST(DynamicWindowsTest, EveryTypeAndSplit) {
  struct Case {
    std::string element, index;
    std::vector<int64_t> mesh;
    std::string spec;
  };
  const std::vector<Case> cases = {{"pred", "s32", {4}, "(0, None)"},
                                   {"s32", "u32", {4}, "(0, None)"},
                                   {"bf16", "s64", {4}, "(0, None)"},
                                   {"f32", "s32", {2, 2}, "(0, 1)"},
                                   {"f32", "s32", {2, 2}, "((1, 0), None)"}};
  for (const Case& c : cases) {
    const std::string text = RunTimeStartText(c.element, c.index, "[9,7]", "[3,2]");
    const Mesh mesh = *Mesh::Create(c.mesh, {}, {});
    absl::StatusOr<std::unique_ptr<ir::Module>> module =
        AnnotatedModule(text, {{"x", c.spec}, {"u", "(None, None)"}, {"y", c.spec}}, mesh);
    ASSERT_TRUE(module.ok()) << module.status();
    std::vector<ir::Literal> arguments = RandomArguments(*(*module)->entry(), 7);
    const ir::Shape index_shape = (*module)->entry()->parameter(2)->shape();
    for (int64_t start : {-3, 0, 1, 3, 4, 5, 6, 8, 20}) {
      SCOPED_TRACE(fmt::format("{} {}: start {}", text, c.spec, start));
      for (int64_t p : {2, 3}) {
        arguments[p] = ir::Literal(index_shape);
        const int64_t value = p == 2 ? start : start - 1;
        if (index_shape.dtype() == ir::DType::kU32) {
          arguments[p].Set<uint32_t>(0, static_cast<uint32_t>(value));
        } else if (index_shape.dtype() == ir::DType::kS64) {
          arguments[p].Set<int64_t>(0, value * 1000000000000);
        } else {
          arguments[p].Set<int32_t>(0, static_cast<int32_t>(value));
        }
      }
      ExpectExactWithoutCollectives(**module, mesh, &arguments);
    }
  }
}

// The split passes from the operand to the result (and back) through propagation, as GSPMD's
// does, so an unannotated update chain stays split.
TEST(DynamicWindowsTest, SplitPropagatesThroughTheUpdate) {
  const std::string text = R"(HloModule d
ENTRY %main (x: f32[16,3], u: f32[2,3], i: s32[]) -> f32[16,3] {
  %x = f32[16,3] parameter(0)
  %u = f32[2,3] parameter(1)
  %i = s32[] parameter(2)
  %z = s32[] constant(0)
  %a = f32[16,3] dynamic-update-slice(f32[16,3] %x, f32[2,3] %u, s32[] %i, s32[] %z)
  %b = f32[16,3] dynamic-update-slice(f32[16,3] %a, f32[2,3] %u, s32[] %z, s32[] %z)
  ROOT %y = f32[16,3] negate(f32[16,3] %b)
})";
  const Mesh mesh = *Mesh::Create({4}, {}, {});
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      AnnotatedModule(text, {{"x", "(0, None)"}}, mesh);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<EquivalenceOutcome> outcome = RunEquivalence(**module, mesh);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->difference, 0);
  EXPECT_EQ(outcome->partition.result_shardings[0].ToString(mesh),
            outcome->partition.parameter_shardings[0][0].ToString(mesh));
  EXPECT_TRUE(outcome->partition.collectives.empty())
      << ir::PrintModule(*outcome->partition.module);
}

// A dynamic-slice with a constant start on one split dim and a run-time start on another (and on
// 4 devices, a constant start on the split dim beside a run-time one on a whole dim): every
// device slices what it holds of the window and one all-reduce sums it; nothing is gathered.
// Constant starts before, inside and beyond the dim, run-time ones from -3 to 12.
TEST(DynamicWindowsTest, DynamicSliceWithConstantAndRunTimeStarts) {
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{4}, {2, 2}}) {
    const Mesh mesh = *Mesh::Create(shape, {}, {});
    for (int64_t start : {-2, 0, 5, 11, 20}) {
      const std::string text = fmt::format(R"(HloModule d
ENTRY %main (x: f32[13,9], j: s32[]) -> f32[3,2] {{
  %x = f32[13,9] parameter(0)
  %j = s32[] parameter(1)
  %i = s32[] constant({})
  ROOT %y = f32[3,2] dynamic-slice(f32[13,9] %x, s32[] %i, s32[] %j), dynamic_slice_sizes={{3,2}}
}})",
                                           start);
      absl::StatusOr<std::unique_ptr<ir::Module>> module = AnnotatedModule(
          text, {{"x", shape.size() == 1 ? "(0, None)" : "(0, 1)"}, {"y", "(None, None)"}}, mesh);
      ASSERT_TRUE(module.ok()) << module.status();
      std::vector<ir::Literal> arguments = RandomArguments(*(*module)->entry(), 3);
      for (int64_t column = -3; column <= 12; ++column) {
        SCOPED_TRACE(fmt::format("{} on {}, column {}", text, mesh.ToString(), column));
        arguments[1] = ir::Literal::Create<int32_t>(ir::DType::kS32, {}, {int32_t(column)});
        absl::StatusOr<EquivalenceOutcome> outcome =
            RunEquivalence(**module, mesh, 1, nullptr, &arguments);
        ASSERT_TRUE(outcome.ok()) << outcome.status();
        EXPECT_EQ(outcome->difference, 0) << ir::PrintModule(*outcome->partition.module);
        ASSERT_EQ(outcome->partition.collectives.size(), 1u)
            << ir::PrintModule(*outcome->partition.module);
        EXPECT_EQ(outcome->partition.collectives[0].kind, Opcode::kAllReduce);
      }
    }
  }
}

}  // namespace
}  // namespace vkspmd::spmd::testing
