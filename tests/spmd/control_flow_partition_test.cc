// while and conditional through the partitioner (issue 19): the JAX-style lax.scan, cond and
// switch programs (tests/testdata/control_flow), lowered to plain ops and partitioned with the
// loop state's shardings over meshes of 2, 4 and 2x2, equal the unpartitioned evaluation of the
// original loops and branches on the CPU reference (padding poisoned with NaN).
#include <set>

#include "absl/strings/str_replace.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "src/ir/parser.h"
#include "src/ir/printer.h"
#include "tests/spmd/spmd_test_util.h"
#include "tests/support/control_flow_programs.h"

namespace vkspmd::spmd::testing {
namespace {

using ir::Opcode;

std::string ReadProgram(const std::string& name) {
  return vkspmd::testing::ControlFlowProgramText(name);
}

std::vector<Mesh> Meshes() {
  return {*Mesh::Create({2}, {}, {}), *Mesh::Create({4}, {}, {}), *Mesh::Create({2, 2}, {}, {})};
}

// `text` with `sharding` (where "T" stands for the mesh's device count) after `anchor`, the end of
// an instruction's attribute.
std::unique_ptr<ir::Module> Annotated(const std::string& text, const std::string& anchor,
                                      const std::string& sharding, const Mesh& mesh) {
  const std::string devices = std::to_string(mesh.device_count());
  const std::string annotation = absl::StrReplaceAll(sharding, {{"T", devices}});
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(
      absl::StrReplaceAll(text, {{anchor, anchor + ", sharding=" + annotation}}));
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? std::move(*module) : nullptr;
}

TEST(ControlFlowPartitionTest, ScanSplitAlongItsColumnsKeepsTheStateSplitWithNoCollective) {
  for (const Mesh& mesh : Meshes()) {
    SCOPED_TRACE(mesh.ToString());
    // The state's sharding only on the while, as GSPMD's propagation leaves it.
    std::unique_ptr<ir::Module> module = Annotated(
        ReadProgram("scan"), "body=%region_0.body",
        "{{replicated}, {devices=[T]<=[T]}, {devices=[1,T]<=[T]}, {devices=[1,T]<=[T]}}", mesh);
    ASSERT_NE(module, nullptr);
    for (uint64_t seed : {1, 2}) {
      absl::StatusOr<EquivalenceOutcome> outcome = RunEquivalence(*module, mesh, seed);
      ASSERT_TRUE(outcome.ok()) << outcome.status();
      const ir::Module& partitioned = *outcome->partition.module;
      EXPECT_LE(outcome->difference, 1e-6) << ir::PrintModule(partitioned);
      EXPECT_TRUE(outcome->partition.collectives.empty()) << ir::PrintModule(partitioned);
      // The state's split reached the parameters: each device holds 8 / T columns of xs.
      EXPECT_EQ(partitioned.entry()->parameter(1)->shape().dimensions(),
                (std::vector<int64_t>{5, 8 / mesh.device_count()}));
    }
  }
}

TEST(ControlFlowPartitionTest, ScanSplitAlongTheScannedDimMatchesTheReference) {
  for (const Mesh& mesh : Meshes()) {
    SCOPED_TRACE(mesh.ToString());
    // 5 steps over T devices: uneven, and the dynamic-slice needs its dim whole.
    std::unique_ptr<ir::Module> module =
        Annotated(ReadProgram("scan"), "body=%region_0.body",
                  "{{replicated}, {replicated}, {devices=[T,1]<=[T]}, {devices=[T,1]<=[T]}}", mesh);
    ASSERT_NE(module, nullptr);
    absl::StatusOr<EquivalenceOutcome> outcome = RunEquivalence(*module, mesh, 3);
    ASSERT_TRUE(outcome.ok()) << outcome.status();
    EXPECT_LE(outcome->difference, 1e-6) << ir::PrintModule(*outcome->partition.module);
  }
}

TEST(ControlFlowPartitionTest, ConditionalsOnSplitOperandsTakeEveryBranchLikeTheReference) {
  for (const Mesh& mesh : Meshes()) {
    SCOPED_TRACE(mesh.ToString());
    // f32[7] and s32[5] split unevenly; the conditional's result split as its operands.
    std::unique_ptr<ir::Module> cond =
        Annotated(ReadProgram("cond"), "false_computation=%region_0.4", "{devices=[T]<=[T]}", mesh);
    std::unique_ptr<ir::Module> index_switch =
        Annotated(ReadProgram("switch"), "%branch_2.9}", "{devices=[T]<=[T]}", mesh);
    ASSERT_NE(cond, nullptr);
    ASSERT_NE(index_switch, nullptr);
    std::set<int64_t> predicates, indices;
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      for (const ir::Module* module : {cond.get(), index_switch.get()}) {
        absl::StatusOr<EquivalenceOutcome> outcome = RunEquivalence(*module, mesh, seed);
        ASSERT_TRUE(outcome.ok()) << outcome.status();
        EXPECT_LE(outcome->difference, 1e-6) << ir::PrintModule(*outcome->partition.module);
        EXPECT_EQ(CountOps(*outcome->partition.module, Opcode::kAllGather), 0)
            << ir::PrintModule(*outcome->partition.module);
      }
      predicates.insert(RandomArguments(*cond->entry(), seed)[0].GetAsInt64(0));
      indices.insert(RandomArguments(*index_switch->entry(), seed)[0].GetAsInt64(0));
    }
    EXPECT_EQ(predicates.size(), 2u) << "both branches of the pred conditional ran";
    EXPECT_GE(indices.size(), 3u) << "several branch indices ran";
  }
}

}  // namespace
}  // namespace vkspmd::spmd::testing
