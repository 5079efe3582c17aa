// gather and scatter in the IR: attributes parse and print in XLA's form, shape inference derives
// the result from the dimension numbers, and every inconsistency is an error naming the attribute
// and the instruction's line:column.
#include <string>

#include "gtest/gtest.h"
#include "src/ir/parser.h"
#include "src/ir/printer.h"

namespace vkspmd::ir {
namespace {

// An entry with an f32[11,6] table, s32[7,1] ids, f32[7,6] updates and the given root line.
std::string TextWithRoot(const std::string& root) {
  return "HloModule m\n\n%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
         "  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(%a, %b)\n}\n\n"
         "ENTRY %main (t: f32[11,6], ids: s32[7,1], u: f32[7,6]) -> f32[] {\n"
         "  %t = f32[11,6] parameter(0)\n  %ids = s32[7,1] parameter(1)\n"
         "  %u = f32[7,6] parameter(2)\n" +
         root + "\n}\n";
}

std::string ErrorOf(const std::string& root) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(TextWithRoot(root));
  return module.ok() ? "parsed" : std::string(module.status().message());
}

TEST(GatherScatterTest, PrintsXlaAttributesAndReadsThemBack) {
  const std::string gather =
      "  ROOT %g = f32[7,6] gather(%t, %ids), offset_dims={1}, collapsed_slice_dims={0}, "
      "start_index_map={0}, index_vector_dim=1, slice_sizes={1,6}, indices_are_sorted=true";
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(TextWithRoot(gather));
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string printed = PrintModule(**module);
  EXPECT_NE(printed.find("gather(f32[11,6]{1,0} %t, s32[7,1]{1,0} %ids), offset_dims={1}, "
                         "collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
                         "slice_sizes={1,6}, indices_are_sorted=true"),
            std::string::npos)
      << printed;
  const std::string scatter =
      "  ROOT %s2 = f32[11,6] scatter(%t, %ids, %u), update_window_dims={1}, "
      "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
      "unique_indices=true, to_apply=%add";
  module = ParseAndVerifyModule(TextWithRoot(scatter));
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string scattered = PrintModule(**module);
  EXPECT_NE(scattered.find("update_window_dims={1}, inserted_window_dims={0}, "
                           "scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
                           "unique_indices=true, to_apply=%add"),
            std::string::npos)
      << scattered;
  absl::StatusOr<std::unique_ptr<Module>> again = ParseAndVerifyModule(scattered);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(PrintModule(**again), scattered);
}

TEST(GatherScatterTest, BatchingDimsAreInferredAndPrinted) {
  const std::string text = R"(HloModule m
ENTRY %main (o: f32[3,7,5], i: s32[3,4,1]) -> f32[3,4,5] {
  %o = f32[3,7,5] parameter(0)
  %i = s32[3,4,1] parameter(1)
  ROOT %g = f32[3,4,5] gather(%o, %i), offset_dims={2}, collapsed_slice_dims={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, start_index_map={1}, index_vector_dim=2, slice_sizes={1,1,5}
})";
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_NE(
      PrintModule(**module).find("operand_batching_dims={0}, start_indices_batching_dims={0}"),
      std::string::npos);
}

TEST(GatherScatterTest, InconsistentDimensionNumbersAreErrors) {
  const std::string head = "  ROOT %g = f32[7,6] gather(%t, %ids), ";
  EXPECT_EQ(ErrorOf(head + "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
                           "index_vector_dim=1, slice_sizes={1,6,1}"),
            "13:8: %g: slice_sizes={1,6,1} must have one entry per operand dim (2)");
  EXPECT_EQ(ErrorOf(head + "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
                           "index_vector_dim=1, slice_sizes={2,6}"),
            "13:8: %g: slice_sizes[0]=2 must be at most 1 for a collapsed or batching dim");
  EXPECT_EQ(ErrorOf(head + "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
                           "index_vector_dim=1, slice_sizes={1,12}"),
            "13:8: %g: slice_sizes[1]=12 is out of range for operand f32[11,6]");
  EXPECT_EQ(ErrorOf(head + "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0,1}, "
                           "index_vector_dim=1, slice_sizes={1,6}"),
            "13:8: %g: start_index_map={0,1} must have one entry per index vector element (1)");
  EXPECT_EQ(ErrorOf(head + "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
                           "index_vector_dim=3, slice_sizes={1,6}"),
            "13:8: %g: index_vector_dim=3 is out of range for indices s32[7,1]");
  EXPECT_EQ(ErrorOf(head + "offset_dims={0,1}, collapsed_slice_dims={0}, start_index_map={0}, "
                           "index_vector_dim=1, slice_sizes={1,6}"),
            "13:8: %g: offset_dims={0,1} must have one entry per operand dim neither collapsed "
            "nor batching (1)");
  EXPECT_EQ(ErrorOf("  ROOT %g = f32[7,5] gather(%t, %ids), offset_dims={1}, "
                    "collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
                    "slice_sizes={1,6}"),
            "13:8: %g: shape f32[7,5] does not match the inferred shape f32[7,6]");
  EXPECT_EQ(ErrorOf("  ROOT %g = f32[7,6] gather(%t, %ids), update_window_dims={1}"),
            "13:40: attribute update_window_dims does not apply to gather");
}

TEST(GatherScatterTest, InconsistentScattersAreErrors) {
  const std::string head = "  ROOT %s2 = f32[11,6] scatter(%t, %ids, %u), ";
  EXPECT_EQ(ErrorOf(head + "update_window_dims={1}, inserted_window_dims={0}, "
                           "scatter_dims_to_operand_dims={0}, index_vector_dim=1"),
            "13:8: %s2: scatter needs to_apply=");
  EXPECT_EQ(ErrorOf(head + "update_window_dims={0}, inserted_window_dims={0}, "
                           "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add"),
            "13:8: %s2: updates dim 1 is 6 but indices dim 0 is 7");
  EXPECT_EQ(ErrorOf(head + "update_window_dims={1}, inserted_window_dims={}, "
                           "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add"),
            "13:8: %s2: update_window_dims={1} must have one entry per operand dim neither "
            "inserted nor batching (2)");
  EXPECT_EQ(ErrorOf(head + "update_window_dims={1}, inserted_window_dims={0}, "
                           "scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
                           "slice_sizes={1,6}, to_apply=%add"),
            "13:151: attribute slice_sizes does not apply to scatter");
}

TEST(GatherScatterTest, SortChecksItsComparator) {
  const std::string head =
      "HloModule m\n%lt (a: f32[], b: f32[]) -> pred[] {\n"
      "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
      "  ROOT %c = pred[] compare(%a, %b), direction=LT, type=TOTALORDER\n}\n"
      "ENTRY %e (x: f32[4,5], i: s32[4,5]) -> f32[4,5] {\n"
      "  %x = f32[4,5] parameter(0)\n  %i = s32[4,5] parameter(1)\n";
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(
      head + "  ROOT %s = f32[4,5] sort(%x), dimensions={1}, is_stable=true, to_apply=%lt\n}\n");
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string printed = PrintModule(**module);
  EXPECT_NE(printed.find("direction=LT, type=TOTALORDER"), std::string::npos) << printed;
  EXPECT_NE(printed.find("dimensions={1}, is_stable=true, to_apply=%lt"), std::string::npos);
  module = ParseAndVerifyModule(
      head + "  ROOT %s = (f32[4,5], s32[4,5]) sort(%x, %i), dimensions={1}, to_apply=%lt\n}\n");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().message(),
            "10:8: %s: to_apply=%lt must take 4 parameters (two per operand)");
  module = ParseAndVerifyModule(head +
                                "  ROOT %s = f32[4,5] sort(%x), dimensions={2}, to_apply=%lt\n}\n");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().message(),
            "10:8: %s: sort needs dimensions={d} with one dim of f32[4,5], got {2}");
}

}  // namespace
}  // namespace vkspmd::ir
