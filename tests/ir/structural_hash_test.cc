// Structural hash: fixed across processes (a golden value), blind to names, and changed by every
// kind of edit: attribute, shape, constant, sharding, opcode, operand order, alias.
#include "src/ir/structural_hash.h"

#include "gtest/gtest.h"
#include "src/ir/parser.h"

namespace vkspmd::ir {
namespace {

constexpr std::string_view kBase = R"hlo(HloModule m, num_partitions=2

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (p: f32[4,8], q: f32[8,2]) -> f32[4] {
  %p = f32[4,8]{1,0} parameter(0), sharding={devices=[2,1]0,1}
  %q = f32[8,2]{1,0} parameter(1)
  %dot = f32[4,2]{1,0} dot(f32[4,8]{1,0} %p, f32[8,2]{1,0} %q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %c = f32[] constant(0.5)
  %r = f32[4]{0} reduce(f32[4,2]{1,0} %dot, f32[] %c), dimensions={1}, to_apply=%add
  ROOT %ar = f32[4]{0} all-reduce(f32[4]{0} %r), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add
}
)hlo";

uint64_t HashOf(std::string_view text) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(text);
  EXPECT_TRUE(module.ok()) << module.status() << "\n" << text;
  return module.ok() ? StructuralHash(**module) : 0;
}

std::string Replace(std::string_view text, std::string_view from, std::string_view to) {
  std::string result(text);
  const size_t at = result.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) result.replace(at, from.size(), to);
  return result;
}

TEST(StructuralHashTest, IsStableAcrossProcesses) {
  // A golden value: it changes only if the printed form changes, which a cache key must notice.
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(kBase);
  ASSERT_TRUE(module.ok());
  EXPECT_EQ(StructuralHashHex(**module).size(), 16u);
  EXPECT_EQ(StructuralHash(**module), HashOf(kBase));
}

TEST(StructuralHashTest, IgnoresNames) {
  std::string renamed = Replace(kBase, "HloModule m", "HloModule other");
  for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"%dot =", "%product ="}, {"%dot,", "%product,"}, {"%main", "%entry"}}) {
    renamed = Replace(renamed, from, to);
  }
  renamed = Replace(renamed, "%add (", "%sum (");
  renamed = Replace(renamed, "to_apply=%add\n  ROOT", "to_apply=%sum\n  ROOT");
  renamed = Replace(renamed, "to_apply=%add\n}", "to_apply=%sum\n}");
  EXPECT_EQ(HashOf(renamed), HashOf(kBase));
}

TEST(StructuralHashTest, ChangesWithEveryKindOfEdit) {
  const uint64_t base = HashOf(kBase);
  const std::vector<std::pair<std::string, std::string>> edits = {
      {"replica_groups={{0,1}}", "replica_groups={{1,0}}"},                   // attribute
      {"constant(0.5)", "constant(0.25)"},                                    // constant
      {"sharding={devices=[2,1]0,1}", "sharding={devices=[2,1]1,0}"},         // sharding devices
      {"sharding={devices=[2,1]0,1}", "sharding={replicated}"},               // sharding kind
      {"channel_id=1", "channel_id=2"},                                       // channel
      {"ROOT %s = f32[] add", "ROOT %s = f32[] maximum"},                     // reducer opcode
      {"rhs_contracting_dims={0}", "rhs_contracting_dims={0}, metadata={}"},  // no change
  };
  for (const auto& [from, to] : edits) {
    std::string edited = Replace(kBase, from, to);
    if (to.find("metadata") != std::string::npos) {
      EXPECT_EQ(HashOf(edited), base) << "metadata does not change meaning";
      continue;
    }
    EXPECT_NE(HashOf(edited), base) << from << " -> " << to;
  }
}

constexpr std::string_view kSmall = R"hlo(HloModule m

ENTRY %main (p: f32[4], q: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %q = f32[4]{0} parameter(1)
  ROOT %s = f32[4]{0} subtract(f32[4]{0} %p, f32[4]{0} %q)
}
)hlo";

TEST(StructuralHashTest, MatchesAGoldenValue) {
  // Computed once; equal in every process and run since FNV-1a has no seed. A change here means
  // the printed form changed, which invalidates every cached compile: make it on purpose.
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(kSmall);
  ASSERT_TRUE(module.ok());
  EXPECT_EQ(StructuralHashHex(**module), "c45192111037ca8a");
}

TEST(StructuralHashTest, ChangesWithShapesAndAliases) {
  const uint64_t base = HashOf(kSmall);
  std::string shape = std::string(kSmall);
  for (int i = 0; i < 4; ++i) shape = Replace(shape, "f32[4]", "f32[5]");
  for (int i = 0; i < 4; ++i) shape = Replace(shape, "f32[4]{0}", "f32[5]{0}");
  EXPECT_NE(HashOf(shape), base);
  std::string swapped = Replace(kSmall, "%p, f32[4]{0} %q)", "%q, f32[4]{0} %p)");
  EXPECT_NE(HashOf(swapped), base);
  std::string aliased =
      Replace(kSmall, "HloModule m", "HloModule m, input_output_alias={ {}: (0, {}, may-alias) }");
  EXPECT_NE(HashOf(aliased), base);
  std::string typed = std::string(kSmall);
  for (int i = 0; i < 4; ++i) typed = Replace(typed, "f32[4]", "s32[4]");
  for (int i = 0; i < 4; ++i) typed = Replace(typed, "f32[4]{0}", "s32[4]{0}");
  EXPECT_NE(HashOf(typed), base);
}

}  // namespace
}  // namespace vkspmd::ir
