// Parser and printer: what XLA prints is accepted (metadata and other meaning-free attributes
// ignored, operands with or without shapes and '%'), and printing is a textual fixed point.
#include "src/ir/parser.h"

#include "gtest/gtest.h"
#include "src/ir/printer.h"

namespace vkspmd::ir {
namespace {

std::string Reprint(std::string_view text) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? PrintModule(**module) : "";
}

TEST(ParserTest, AcceptsXlaDumpsAndIgnoresHarmlessAttributes) {
  constexpr std::string_view kText = R"hlo(
HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[8]{0})->f32[8]{0}}, allow_spmd_sharding_propagation_to_output={true}, frontend_attributes={fingerprint="abc"}

// A comment, and a block comment: /* here */
ENTRY %main.3 (Arg_0.1: f32[8]) -> f32[8] {
  %Arg_0.1 = f32[8]{0} parameter(0), metadata={op_name="x"}, parameter_replication={false}
  ROOT %sine.2 = f32[8]{0} sine(f32[8]{0} %Arg_0.1), metadata={op_type="sin" op_name="jit(f)/sin" source_file="/tmp/f.py" source_line=4}, backend_config="{}", frontend_attributes={_xla="1"}
}
)hlo";
  EXPECT_EQ(Reprint(kText),
            "HloModule jit_f\n\nENTRY %main.3 (Arg_0.1: f32[8]) -> f32[8] {\n"
            "  %Arg_0.1 = f32[8]{0} parameter(0)\n"
            "  ROOT %sine.2 = f32[8]{0} sine(f32[8]{0} %Arg_0.1)\n}\n");
}

TEST(ParserTest, AcceptsTheNewerFormWithoutOperandShapesOrPercent) {
  constexpr std::string_view kText = R"hlo(HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  p = f32[4,2] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[4] reduce(p, z), dimensions={1}, to_apply=add
})hlo";
  EXPECT_EQ(Reprint(kText),
            "HloModule m\n\n%add (x: f32[], y: f32[]) -> f32[] {\n"
            "  %x = f32[] parameter(0)\n  %y = f32[] parameter(1)\n"
            "  ROOT %s = f32[] add(f32[] %x, f32[] %y)\n}\n\n"
            "ENTRY %main (p: f32[4,2]) -> f32[4] {\n  %p = f32[4,2]{1,0} parameter(0)\n"
            "  %z = f32[] constant(0)\n"
            "  ROOT %r = f32[4]{0} reduce(f32[4,2]{1,0} %p, f32[] %z), dimensions={1}, "
            "to_apply=%add\n}\n");
}

TEST(ParserTest, KeepsInputOutputAliasAndDeviceCounts) {
  constexpr std::string_view kText =
      R"hlo(HloModule m, input_output_alias={ {0}: (1, {}, may-alias), {1}: (0, {}, must-alias) }, replica_count=2, num_partitions=4

ENTRY %main (a: f32[2], b: f32[3]) -> (f32[3], f32[2]) {
  %a = f32[2]{0} parameter(0)
  %b = f32[3]{0} parameter(1)
  ROOT %t = (f32[3]{0}, f32[2]{0}) tuple(f32[3]{0} %b, f32[2]{0} %a)
}
)hlo";
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(kText);
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_EQ((*module)->input_output_aliases().size(), 2u);
  EXPECT_EQ((*module)->input_output_aliases()[0].parameter_number, 1);
  EXPECT_TRUE((*module)->input_output_aliases()[1].must_alias);
  EXPECT_EQ((*module)->replica_count(), 2);
  EXPECT_EQ((*module)->partition_count(), 4);
  const std::string printed = PrintModule(**module);
  EXPECT_EQ(printed.substr(0, printed.find('\n')),
            "HloModule m, input_output_alias={ {0}: (1, {}, may-alias), {1}: (0, {}, must-alias) "
            "}, replica_count=2, num_partitions=4");
  EXPECT_EQ(Reprint(printed), printed);
}

TEST(ParserTest, PrintsSliceStridesPaddingAndDotDimsCanonically) {
  constexpr std::string_view kText = R"hlo(HloModule m

ENTRY %main (p: f32[4,6], q: f32[4,6,3]) -> (f32[2,3], f32[7,5], f32[3]) {
  %p = f32[4,6]{1,0} parameter(0)
  %q = f32[4,6,3]{2,1,0} parameter(1)
  %s = f32[2,3]{1,0} slice(f32[4,6]{1,0} %p), slice={[0:2:1], [0:6:2]}
  %z = f32[] constant(0)
  %pad = f32[7,5]{1,0} pad(f32[4,6]{1,0} %p, f32[] %z), padding=1_2x0_-1_0
  %d = f32[3]{0} dot(f32[4,6]{1,0} %p, f32[4,6,3]{2,1,0} %q), lhs_contracting_dims={0,1}, rhs_contracting_dims={0,1}
  ROOT %t = (f32[2,3]{1,0}, f32[7,5]{1,0}, f32[3]{0}) tuple(f32[2,3]{1,0} %s, f32[7,5]{1,0} %pad, f32[3]{0} %d)
}
)hlo";
  absl::StatusOr<std::unique_ptr<Module>> module = ParseModule(kText);
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string printed = PrintModule(**module);
  EXPECT_NE(printed.find("slice={[0:2], [0:6:2]}"), std::string::npos) << printed;
  EXPECT_NE(printed.find("padding=1_2x0_-1"), std::string::npos) << printed;
  EXPECT_EQ(Reprint(printed), printed);
}

TEST(ParserTest, RecordsTextPositionsOnInstructions) {
  absl::StatusOr<std::unique_ptr<Module>> module =
      ParseModule("HloModule m\nENTRY %e () -> f32[] {\n    ROOT %c = f32[] constant(1)\n}\n");
  ASSERT_TRUE(module.ok());
  const Instruction* root = (*module)->entry()->root();
  EXPECT_EQ(root->location().line, 3);
  EXPECT_EQ(root->location().column, 10);
  EXPECT_EQ(root->Describe(), "3:10: %c");
}

TEST(ParserTest, ReplicaGroupsKeepTheirFormAndExpand) {
  constexpr std::string_view kText = R"hlo(HloModule m, num_partitions=4

ENTRY %main (p: f32[2]) -> (f32[4], f32[4]) {
  %p = f32[2]{0} parameter(0)
  %a = f32[4]{0} all-gather(f32[2]{0} %p), channel_id=1, replica_groups=[2,2]<=[2,2]T(1,0), dimensions={0}, use_global_device_ids=true
  %b = f32[4]{0} all-gather(f32[2]{0} %p), channel_id=2, replica_groups={{0,2},{1,3}}, dimensions={0}, use_global_device_ids=true
  ROOT %t = (f32[4]{0}, f32[4]{0}) tuple(f32[4]{0} %a, f32[4]{0} %b)
}
)hlo";
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(kText);
  ASSERT_TRUE(module.ok()) << module.status();
  const auto& instructions = (*module)->entry()->instructions();
  EXPECT_EQ(instructions[1]->attributes().replica_groups.ToString(), "[2,2]<=[2,2]T(1,0)");
  EXPECT_EQ(instructions[1]->attributes().replica_groups,
            instructions[2]->attributes().replica_groups);
  EXPECT_EQ(Reprint(kText), PrintModule(**module));
}

TEST(ParserTest, RejectsNamesThatCannotBePrintedBack) {
  // Found by the fuzzer: "%-" printed as the signature parameter "-" did not read back.
  absl::StatusOr<std::unique_ptr<Module>> module = ParseModule(
      "HloModule m\nENTRY %m (p: f32[4]) -> f32[4] {\n %- = f32[4]{0} parameter(0)\n}\n");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(std::string(module.status().message()), "3:2: expected a name, got '%-'");
}

// JAX writes unspecified_dims (XLA's sharding_op_util attribute) as a custom-call's
// backend_config string: read as sorted dims, printed back, and checked against the rank; other
// backend_config values of custom-calls mean nothing to vkspmd.
TEST(ParserTest, ReadsUnspecifiedDimsOfShardingCustomCalls) {
  constexpr std::string_view kText = R"hlo(HloModule m, num_partitions=4

ENTRY %main (p: f32[8,6]) -> f32[8,6] {
  %p = f32[8,6]{1,0} parameter(0)
  %c = f32[8,6]{1,0} custom-call(f32[8,6]{1,0} %p), custom_call_target="Sharding", sharding={devices=[1,2,2]<=[4] last_tile_dim_replicate}, backend_config="unspecified_dims=[1,0]"
  ROOT %d = f32[8,6]{1,0} custom-call(f32[8,6]{1,0} %c), custom_call_target="Sharding", sharding={replicated}, backend_config="{}"
}
)hlo";
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(kText);
  ASSERT_TRUE(module.ok()) << module.status();
  const auto& instructions = (*module)->entry()->instructions();
  EXPECT_EQ(instructions[1]->attributes().unspecified_dims, (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(instructions[2]->attributes().unspecified_dims.empty());
  const std::string printed = PrintModule(**module);
  EXPECT_NE(printed.find("backend_config=\"unspecified_dims=[0,1]\""), std::string::npos)
      << printed;
  EXPECT_EQ(Reprint(printed), printed);
  const auto error = [&](std::string_view dims) {
    std::string text(kText);
    text.replace(text.find("[1,0]"), 5, dims);
    return std::string(ParseModule(text).status().message());
  };
  EXPECT_EQ(error("[2]"),
            "5:156: backend_config \"unspecified_dims=[2]\": '2' is not a dim of a rank-2 value");
  EXPECT_EQ(error("[1,1]"),
            "5:156: backend_config \"unspecified_dims=[1,1]\": dim 1 is listed twice");
  EXPECT_EQ(error("0"),
            "5:156: backend_config \"unspecified_dims=0\": unspecified_dims must be a list "
            "[d0,d1,...]");
}

}  // namespace
}  // namespace vkspmd::ir
