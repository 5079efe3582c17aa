// Propagation through the rule table: GSPMD-NOTES' worked examples, user annotations kept,
// the documented conflict priority, a sharding on every instruction of the printed module; and
// the errors for inputs the partitioner refuses (naming the op and the sharding).
#include "src/spmd/propagation.h"

#include "absl/strings/str_replace.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "src/ir/parser.h"
#include "src/ir/printer.h"
#include "src/spmd/partitioner.h"
#include "tests/spmd/spmd_test_util.h"

namespace vkspmd::spmd::testing {
namespace {

std::unique_ptr<ir::Module> Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? std::move(*module) : nullptr;
}

// The HLO sharding propagation gives instruction `name`.
std::string PropagatedText(ir::Module& module, const Mesh& mesh, const std::string& name) {
  absl::StatusOr<PropagationResult> result = PropagateShardings(module, mesh);
  if (!result.ok()) return std::string(result.status().message());
  AnnotateModule(module, result->shardings, mesh);
  for (const auto& instruction : module.entry()->instructions()) {
    if (instruction->name() == name) return instruction->sharding()->ToString();
  }
  return "no such instruction";
}

TEST(PropagationTest, BroadcastBackwardReplicatesTheNewDims) {
  // GSPMD-NOTES 2.2: output f32[4,24,6,8] {devices=[4,2,1,1]0..7}, dims={1,3} -> operand
  // {devices=[2,1,4]0,2,4,6,1,3,5,7 last_tile_dim_replicate}.
  std::unique_ptr<ir::Module> module = Parse(R"(HloModule b
ENTRY %main (p: f32[24,8]) -> f32[4,24,6,8] {
  %p = f32[24,8] parameter(0)
  ROOT %b = f32[4,24,6,8] broadcast(f32[24,8] %p), dimensions={1,3}, sharding={devices=[4,2,1,1]<=[8]}
})");
  const Mesh mesh = *Mesh::Create({4, 2});
  const std::string text = PropagatedText(*module, mesh, "p");
  EXPECT_EQ(*ir::ParseSharding(text),
            *ir::ParseSharding("{devices=[2,1,4]0,2,4,6,1,3,5,7 last_tile_dim_replicate}"))
      << text;
}

TEST(PropagationTest, ReduceForwardDropsTheReducedDims) {
  // GSPMD-NOTES 2.2: f32[8,8] {devices=[2,2]0,1,2,3} reduce dim 0 ->
  // {devices=[2,2]0,2,1,3 last_tile_dim_replicate}.
  std::unique_ptr<ir::Module> module = Parse(R"(HloModule r
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %main (p: f32[8,8]) -> f32[8] {
  %p = f32[8,8] parameter(0), sharding={devices=[2,2]0,1,2,3}
  %zero = f32[] constant(0)
  ROOT %r = f32[8] reduce(f32[8,8] %p, f32[] %zero), dimensions={0}, to_apply=%add
})");
  const std::string text = PropagatedText(*module, *Mesh::Create({2, 2}), "r");
  EXPECT_EQ(*ir::ParseSharding(text),
            *ir::ParseSharding("{devices=[2,2]0,2,1,3 last_tile_dim_replicate}"))
      << text;
}

constexpr char kMlp[] = R"(HloModule mlp
ENTRY %main (x: f32[8,16], w1: f32[16,32], w2: f32[32,16]) -> f32[8,16] {
  %x = f32[8,16] parameter(0)
  %w1 = f32[16,32] parameter(1)
  %w2 = f32[32,16] parameter(2)
  %h = f32[8,32] dot(f32[8,16] %x, f32[16,32] %w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %g = f32[8,32] tanh(f32[8,32] %h)
  ROOT %y = f32[8,16] dot(f32[8,32] %g, f32[32,16] %w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";

TEST(PropagationTest, MegatronShardingsReachEveryInstruction) {
  const Mesh mesh = *Mesh::Create({2, 4}, {}, {"dp", "tp"});
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      AnnotatedModule(kMlp, {{"x", "(dp, None)"}, {"w1", "(None, tp)"}}, mesh);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<PropagationResult> result = PropagateShardings(**module, mesh);
  ASSERT_TRUE(result.ok()) << result.status();
  AnnotateModule(**module, result->shardings, mesh);
  // h and g are [dp, tp]; w2 follows g's contracting split; y keeps the batch split.
  const auto sharding_of = [&](const std::string& name) {
    for (const auto& instruction : (*module)->entry()->instructions()) {
      if (instruction->name() == name) return instruction->sharding()->ToString();
    }
    return std::string();
  };
  EXPECT_EQ(sharding_of("h"), "{devices=[2,4]<=[8]}");
  EXPECT_EQ(sharding_of("g"), "{devices=[2,4]<=[8]}");
  EXPECT_EQ(sharding_of("w2"), "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}");
  EXPECT_EQ(sharding_of("y"), "{devices=[2,1,4]<=[8] last_tile_dim_replicate}");
  const std::string printed = ir::PrintModule(**module);
  for (const auto& instruction : (*module)->entry()->instructions()) {
    EXPECT_NE(printed.find("%" + instruction->name() + " = "), std::string::npos);
    EXPECT_TRUE(instruction->sharding().has_value()) << instruction->name();
  }
}

TEST(PropagationTest, UserAnnotationsAreNeverOverridden) {
  const Mesh mesh = *Mesh::Create({4}, {}, {"x"});
  // g is pinned replicated although both neighbours are split: it stays replicated.
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      AnnotatedModule(kMlp, {{"x", "(x, None)"}, {"g", "(None, None)"}, {"y", "(None, x)"}}, mesh);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<PropagationResult> result = PropagateShardings(**module, mesh);
  ASSERT_TRUE(result.ok()) << result.status();
  for (const auto& instruction : (*module)->entry()->instructions()) {
    if (instruction->name() == "g") {
      EXPECT_TRUE(result->shardings.at(instruction.get())[0].IsReplicated());
    }
    if (instruction->name() == "y") {
      EXPECT_EQ(result->shardings.at(instruction.get())[0].dims,
                (std::vector<std::vector<int64_t>>{{}, {0}}));
    }
  }
}

TEST(PropagationTest, ConflictsGoToTheUserAnnotationThenToAgreement) {
  // add(a, b): a is annotated on dim 0, b (unannotated) was given dim 1 by its own producer;
  // the annotated operand wins for the result.
  const Mesh mesh = *Mesh::Create({2}, {}, {"x"});
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      AnnotatedModule(R"(HloModule c
ENTRY %main (a: f32[4,4], p: f32[4,4]) -> f32[4,4] {
  %a = f32[4,4] parameter(0)
  %p = f32[4,4] parameter(1)
  %b = f32[4,4] negate(f32[4,4] %p)
  ROOT %s = f32[4,4] add(f32[4,4] %a, f32[4,4] %b)
})",
                      {{"a", "(x, None)"}, {"p", "(None, x)"}}, mesh);
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string text = PropagatedText(**module, mesh, "s");
  EXPECT_EQ(text, "{devices=[2,1]<=[2]}");
}

TEST(PropagationTest, WithoutAnnotationsTheCandidateMostOperandsShareWins) {
  // u and w are split on rows, v on columns, all along the one mesh axis: rows win (one operand
  // to reshard instead of two), whatever the operand order.
  const Mesh mesh = *Mesh::Create({2}, {}, {"x"});
  for (const char* order : {"%u, %v, %w", "%v, %u, %w"}) {
    absl::StatusOr<std::unique_ptr<ir::Module>> module =
        AnnotatedModule(fmt::format(R"(HloModule c
ENTRY %main (a: f32[4,4], b: f32[4,4], c: f32[4,4]) -> f32[4,4] {{
  %a = f32[4,4] parameter(0)
  %b = f32[4,4] parameter(1)
  %c = f32[4,4] parameter(2)
  %u = f32[4,4] negate(f32[4,4] %a)
  %v = f32[4,4] negate(f32[4,4] %b)
  %w = f32[4,4] negate(f32[4,4] %c)
  ROOT %s = f32[4,4] clamp({})
}})",
                                    absl::StrReplaceAll(order, {{"%", "f32[4,4] %"}})),
                        {{"a", "(x, None)"}, {"b", "(None, x)"}, {"c", "(x, None)"}}, mesh);
    ASSERT_TRUE(module.ok()) << module.status();
    EXPECT_EQ(PropagatedText(**module, mesh, "s"), "{devices=[2,1]<=[2]}") << order;
  }
}

std::string PartitionError(const std::string& text, const Mesh& mesh) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  if (!module.ok()) return std::string(module.status().message());
  absl::StatusOr<PartitionResult> result = Partition(**module, mesh);
  return result.ok() ? "ok" : std::string(result.status().message());
}

TEST(PartitionErrorTest, UnsupportedOpsAndShardingsNameBoth) {
  const Mesh mesh = *Mesh::Create({2});
  EXPECT_EQ(PartitionError(R"(HloModule m, num_partitions=2
ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0), sharding={devices=[2]0,1}
  ROOT %n = f32[4] negate(f32[4] %p), sharding={devices=[1,2]0,1 last_tile_dims={manual}}
})",
                           mesh),
            "4:8: %n: cannot partition negate with sharding [{}] manual {axis 0} (operands: %p "
            "[{axis 0}]): a [{axis 0}] value cannot become [{}] manual {axis 0}: manual regions "
            "are entered and left only through SPMDFullToShardShape and SPMDShardToFullShape");
  EXPECT_EQ(PartitionError(R"(HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0), sharding={devices=[2]0,1}
  ROOT %r = f32[4] all-reduce(f32[4] %p), replica_groups={}, to_apply=%add
})",
                           mesh),
            "9:8: %r: the partitioner does not support all-reduce in its input: collectives "
            "belong to partitioned programs (sharding none given)");
  // A [4] mesh is refined to [2,2] for a 2-D tiling of its devices (issue 19).
  EXPECT_EQ(PartitionError(R"(HloModule m
ENTRY %main (p: f32[4,4]) -> f32[4,4] {
  ROOT %p = f32[4,4] parameter(0), sharding={devices=[2,2]3,0,2,1}
})",
                           *Mesh::Create({4})),
            "ok");
  // Tiles that are no product of the mesh's axis sizes, nor of their prime factors.
  EXPECT_EQ(PartitionError(R"(HloModule m
ENTRY %main (p: f32[6,4]) -> f32[6,4] {
  ROOT %p = f32[6,4] parameter(0), sharding={devices=[3,1]0,1,2}
})",
                           *Mesh::Create({4})),
            "3:8: %p (parameter): sharding {devices=[3,1]0,1,2} does not use every device of mesh "
            "[4] devices 0..3 exactly once; a tiled value lives on all of its mesh's devices");
  EXPECT_EQ(PartitionError("HloModule m\nENTRY %main (p: f32[4]) -> f32[4] {\n"
                           "  ROOT %p = f32[4] parameter(0)\n}\n",
                           *Mesh::Create({2}, {4, 5})),
            "mesh [2] devices 4,5 must use the partitions 0..1 (in any order): the per-device "
            "program runs on every partition");
}

// A manual region (shard_map): the shards enter per-device code with SPMDFullToShardShape, the
// user's own code (a collective included) runs as written, and SPMDShardToFullShape makes the
// per-device values the shards of a sharded value again.
std::string ManualProgram(int64_t rows, int64_t devices) {
  const int64_t shard = (rows + devices - 1) / devices;
  return fmt::format(R"(HloModule manual, num_partitions={1}
%add (a: f32[], b: f32[]) -> f32[] {{
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}}
ENTRY %main (p: f32[{0},6]) -> f32[{0},6] {{
  %p = f32[{0},6] parameter(0)
  %annotate = f32[{0},6] custom-call(f32[{0},6] %p), custom_call_target="Sharding", sharding={{devices=[{1},1]<=[{1}]}}
  %shard = f32[{2},6] custom-call(f32[{0},6] %annotate), custom_call_target="SPMDFullToShardShape", sharding={{manual}}
  %negate = f32[{2},6] negate(f32[{2},6] %shard)
  %sum = f32[{2},6] all-reduce(f32[{2},6] %negate), channel_id=1, replica_groups={{}}, use_global_device_ids=true, to_apply=%add
  %full = f32[{0},6] custom-call(f32[{2},6] %sum), custom_call_target="SPMDShardToFullShape", sharding={{devices=[{1},1]<=[{1}]}}
  ROOT %r = f32[{0},6] exponential(f32[{0},6] %full)
}})",
                     rows, devices, shard);
}

TEST(ManualRegionTest, UserCodeRunsAsWrittenBetweenTheBoundaries) {
  for (const auto& [rows, devices] : std::vector<std::pair<int64_t, int64_t>>{{8, 2}, {7, 4}}) {
    std::unique_ptr<ir::Module> module = Parse(ManualProgram(rows, devices));
    ASSERT_NE(module, nullptr);
    const Mesh mesh = *Mesh::Create({devices});
    absl::StatusOr<EquivalenceOutcome> outcome = RunEquivalence(*module, mesh);
    ASSERT_TRUE(outcome.ok()) << outcome.status();
    EXPECT_LT(outcome->difference, 1e-6) << ir::PrintModule(*outcome->partition.module);
    EXPECT_EQ(CountOps(*outcome->partition.module, ir::Opcode::kAllReduce), 1);
    EXPECT_EQ(CountOps(*outcome->partition.module, ir::Opcode::kCustomCall), 0);
    EXPECT_TRUE(outcome->partition.collectives.empty());  // none added by the partitioner
    EXPECT_EQ(outcome->partition.result_shardings[0].dims,
              (std::vector<std::vector<int64_t>>{{0}, {}}));
  }
}

TEST(ManualRegionTest, ManualValuesLeaveOnlyThroughShardToFull) {
  std::unique_ptr<ir::Module> module = Parse(R"(HloModule m, num_partitions=2
ENTRY %main (p: f32[4]) -> f32[2] {
  %p = f32[4] parameter(0), sharding={devices=[2]0,1}
  %shard = f32[2] custom-call(f32[4] %p), custom_call_target="SPMDFullToShardShape", sharding={manual}
  ROOT %n = f32[2] negate(f32[2] %shard), sharding={replicated}
})");
  ASSERT_NE(module, nullptr);
  absl::StatusOr<PartitionResult> result = Partition(*module, *Mesh::Create({2}));
  EXPECT_EQ(std::string(result.status().message()),
            "5:8: %n: cannot partition negate with sharding [{}] (operands: %shard manual): a "
            "manual value cannot become [{}]: manual regions are entered and left only through "
            "SPMDFullToShardShape and SPMDShardToFullShape");
}

}  // namespace
}  // namespace vkspmd::spmd::testing
