// Loops of unknown trip count driven from the host (exec::LoopProgram): loops whose count
// depends on the data, zero-iteration loops, a loop nested in another's body, a state of nested
// tuples and loops inside conditional branches (the host picks the branch), on one device and
// partitioned over meshes of 2, 4 and 2x2 devices (the state split unevenly), each equal to the
// CPU reference running the real loops; the iterations and branches counted on the host match the
// reference's; devices disagreeing on a condition or a branch are an error naming it.
#include "src/exec/loop_program.h"

#include <gtest/gtest.h>

#include "src/interp/evaluator.h"
#include "src/ir/control_flow_lowering.h"
#include "src/ir/parser.h"
#include "tests/exec/literal_compare.h"
#include "tests/support/control_flow_programs.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

using ir::DType;
using ir::Literal;

// tests/testdata/control_flow: grow (|x| grows until its largest element reaches 100 times a
// limit; the count depends on the data) and nested_while (n % 5 outer iterations, each doubling
// v until its sum reaches 100: an inner loop whose count depends on v).
struct MeshCase {
  std::vector<int64_t> shape;
  std::string shard;  // The split parameters' sharding.
};

std::vector<MeshCase> Meshes() {
  return {{{1}, "replicated"},
          {{2}, "devices=[2]1,0"},
          {{4}, "devices=[4]0,1,2,3"},
          {{2, 2}, "devices=[2,2]0,1,2,3 last_tile_dim_replicate"}};
}

class LoopProgramTest : public DeviceTest {
 protected:
  void SetUp() override { OpenDevices(4); }

  // Testdata `name` with its `split` parameters sharded as `mesh_case` says, partitioned over its
  // mesh and run: "" when it equals the reference, else what differs; `iterations` (when given)
  // is how many times the bodies ran.
  std::string DiffersFromReference(const std::string& name, const std::vector<int64_t>& split,
                                   const MeshCase& mesh_case, const std::vector<Literal>& arguments,
                                   int64_t* iterations = nullptr) {
    collectives_ = -1;
    absl::StatusOr<std::unique_ptr<ir::Module>> module =
        ir::ParseModule(ControlFlowProgramText(name));
    if (!module.ok()) return "parse: " + module.status().ToString();
    absl::StatusOr<ir::Sharding> sharding = ir::ParseSharding("{" + mesh_case.shard + "}");
    if (!sharding.ok()) return sharding.status().ToString();
    for (int64_t p : split) (*module)->entry()->parameter(p)->set_sharding(*sharding);
    if (!loop_sharding_.empty()) {
      absl::StatusOr<ir::Sharding> on_loop = ir::ParseSharding(loop_sharding_);
      if (!on_loop.ok()) return on_loop.status().ToString();
      for (const auto& instruction : (*module)->entry()->instructions()) {
        if (instruction->opcode() == ir::Opcode::kWhile) instruction->set_sharding(*on_loop);
      }
    }
    absl::StatusOr<Literal> reference = interp::Evaluate(**module, arguments);
    if (!reference.ok()) return "reference: " + reference.status().ToString();
    absl::StatusOr<spmd::Mesh> mesh = spmd::Mesh::Create(mesh_case.shape);
    if (!mesh.ok()) return mesh.status().ToString();
    absl::StatusOr<std::unique_ptr<exec::LoopProgram>> loops =
        exec::LoopProgram::Partition(**module, *mesh);
    if (!loops.ok()) return "partition: " + loops.status().ToString();
    std::vector<runtime::MeshDevice*> devices;
    for (int64_t d = 0; d < mesh->device_count(); ++d) devices.push_back(&device(d));
    if (absl::Status compiled = (*loops)->Compile(devices); !compiled.ok()) {
      return "compile: " + compiled.ToString();
    }
    absl::StatusOr<Literal> result = (*loops)->Run(arguments);
    if (!result.ok()) return "run: " + result.status().ToString();
    if (iterations != nullptr) *iterations = (*loops)->last_iterations();
    branches_ = (*loops)->last_branches();
    collectives_ = (*loops)->collective_count();
    return CompareLiterals(*result, *reference, 1e-5);
  }

  // The error of running `text` (a per-device program of one s32[] parameter) on 2 devices,
  // each given `n`; what went wrong before the run otherwise.
  std::string PerDeviceRunError(const char* text, int32_t n) {
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseModule(text);
    if (!module.ok()) return "parse: " + module.status().ToString();
    absl::StatusOr<std::unique_ptr<exec::LoopProgram>> loops =
        exec::LoopProgram::FromPerDeviceModule(**module, *spmd::Mesh::Create({2}));
    if (!loops.ok()) return "split: " + loops.status().ToString();
    if (absl::Status compiled = (*loops)->Compile({&device(0), &device(1)}); !compiled.ok()) {
      return "compile: " + compiled.ToString();
    }
    const Literal value = Literal::Create(DType::kS32, {}, std::vector<int32_t>{n});
    absl::StatusOr<std::vector<Literal>> results = (*loops)->RunPerDevice({{value}, {value}});
    return results.ok() ? "the run succeeded" : std::string(results.status().message());
  }

  int64_t collectives_ = -1;       // Of the last program partitioned.
  std::vector<int64_t> branches_;  // The branches the last run took.
  std::string loop_sharding_;      // For the entry's while, when not empty.
};

Literal Vector(std::vector<float> values) {
  const auto size = static_cast<int64_t>(values.size());
  return Literal::Create(DType::kF32, {size}, std::move(values));
}

Literal F32(float value) { return Literal::Create(DType::kF32, {}, std::vector<float>{value}); }

TEST_F(LoopProgramTest, DataDependentLoopsMatchTheReferenceOnEveryMesh) {
  const Literal x = Vector({0.5f, -1, 2, 0.25f, 1.5f, -3});
  const Literal y = Vector({1, 2, 3, 4, 5, 6});
  for (const MeshCase& mesh_case : Meshes()) {
    // limit 0.4 * 100: 3 -> 4.75 -> 7.375 -> 11.31 -> 17.22 -> 26.08 -> 39.37 -> 59.3: 7
    // iterations.
    int64_t iterations = -1;
    EXPECT_EQ(DiffersFromReference("grow", {0, 2}, mesh_case, {x, F32(0.4f), y}, &iterations), "")
        << mesh_case.shard;
    EXPECT_EQ(iterations, 7) << mesh_case.shard;
    // Split over several devices, the condition's largest element is all-reduced.
    if (mesh_case.shard != "replicated") {
      EXPECT_GT(collectives_, 0) << mesh_case.shard;
    }
    // The condition fails at once: the body never runs, the state passes through.
    EXPECT_EQ(DiffersFromReference("grow", {0, 2}, mesh_case, {x, F32(-0.05f), y}, &iterations), "")
        << mesh_case.shard;
    EXPECT_EQ(iterations, 0) << mesh_case.shard;
  }
}

// The while's own sharding splits a state whose inputs are not annotated: the condition then
// all-reduces its largest element, where a replicated state needs no collective.
TEST_F(LoopProgramTest, TheWhilesShardingSplitsTheState) {
  const Literal x = Vector({0.5f, -1, 2, 0.25f, 1.5f, -3});
  const Literal y = Vector({1, 2, 3, 4, 5, 6});
  const MeshCase four = {{4}, "replicated"};
  EXPECT_EQ(DiffersFromReference("grow", {}, four, {x, F32(0.4f), y}), "");
  EXPECT_EQ(collectives_, 0);
  loop_sharding_ = "{{replicated}, {devices=[4]3,2,1,0}, {replicated}}";
  EXPECT_EQ(DiffersFromReference("grow", {}, four, {x, F32(0.4f), y}), "");
  EXPECT_GT(collectives_, 0);
}

TEST_F(LoopProgramTest, NestedLoopsMatchTheReferenceOnEveryMesh) {
  const Literal v = Vector({0.5f, 1, 0.25f, 2, 0.75f, 1.5f});
  for (const MeshCase& mesh_case : Meshes()) {
    for (int32_t n : {0, 3}) {
      int64_t iterations = -1;
      EXPECT_EQ(DiffersFromReference("nested_while", {0}, mesh_case,
                                     {v, Literal::Create(DType::kS32, {}, std::vector<int32_t>{n})},
                                     &iterations),
                "")
          << mesh_case.shard << " n=" << n;
      // 3 outer iterations; inside, the sum 6.06 doubles 5 times to 193.9, then 58.2 once and
      // 34.9 twice: 3 + 5 + 1 + 2.
      EXPECT_EQ(iterations, n == 0 ? 0 : 11) << mesh_case.shard;
    }
  }
}

// nested_state: the grow loop with its state (count, (x, limit)), a nested root and a tuple
// computed before the loop returned after it.
TEST_F(LoopProgramTest, ANestedTupleStateMatchesTheReferenceOnEveryMesh) {
  const Literal x = Vector({0.5f, -1, 2, 0.25f, 1.5f, -3});
  const Literal y = Vector({1, 2, 3, 4, 5, 6});
  for (const MeshCase& mesh_case : Meshes()) {
    int64_t iterations = -1;
    EXPECT_EQ(
        DiffersFromReference("nested_state", {0, 2}, mesh_case, {x, F32(0.4f), y}, &iterations), "")
        << mesh_case.shard;
    EXPECT_EQ(iterations, 7) << mesh_case.shard;
    EXPECT_EQ(
        DiffersFromReference("nested_state", {0, 2}, mesh_case, {x, F32(-0.05f), y}, &iterations),
        "")
        << mesh_case.shard;
    EXPECT_EQ(iterations, 0) << mesh_case.shard;
  }
  // The while's tuple sharding lists the three leaves (count, x, limit), as XLA's do.
  loop_sharding_ = "{{replicated}, {devices=[4]3,2,1,0}, {replicated}}";
  EXPECT_EQ(DiffersFromReference("nested_state", {}, {{4}, "replicated"}, {x, F32(0.4f), y}), "");
  EXPECT_GT(collectives_, 0);
}

// loop_in_branch: conditional(k) over {grow (a loop of unknown count), shrink, scale}, then
// conditional(count > 0) over {grow, twice}. The host reads each selector and runs one branch: a
// loop in a branch not taken never runs, and an index outside 0..2 takes the last branch.
TEST_F(LoopProgramTest, LoopsInsideConditionalBranchesMatchTheReferenceOnEveryMesh) {
  const Literal x = Vector({0.5f, -1, 2, 0.25f, 1.5f, -3});
  struct Case {
    int32_t k;
    std::vector<int64_t> branches;
    int64_t iterations;
  };
  // k=0: grow to 59.3 in 7 iterations, then to 201 past 160 in 3; k=2: 3|x| (largest 9) grows
  // past 160 in 7.
  const std::vector<Case> cases = {
      {0, {0, 0}, 10}, {1, {1, 1}, 0}, {2, {2, 0}, 7}, {7, {2, 0}, 7}, {-1, {2, 0}, 7}};
  for (const MeshCase& mesh_case : Meshes()) {
    for (const Case& c : cases) {
      int64_t iterations = -1;
      const Literal k = Literal::Create(DType::kS32, {}, std::vector<int32_t>{c.k});
      EXPECT_EQ(
          DiffersFromReference("loop_in_branch", {0}, mesh_case, {x, F32(0.4f), k}, &iterations),
          "")
          << mesh_case.shard << " k=" << c.k;
      EXPECT_EQ(branches_, c.branches) << mesh_case.shard << " k=" << c.k;
      EXPECT_EQ(iterations, c.iterations) << mesh_case.shard << " k=" << c.k;
    }
  }
}

// Without a host (the device compiler, spmd::Partition) the loop in the branch stays an error.
TEST(LoopProgramPartitionTest, AConditionalKeptForTheHostHoldsTheLoopOnlyThere) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      ir::ParseModule(ControlFlowProgramText("loop_in_branch"));
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_TRUE(*exec::LoopProgram::NeedsHostLoop(**module));
  absl::StatusOr<std::unique_ptr<ir::Module>> kept =
      ir::LowerControlFlow(**module, {.keep_unknown_loops = true});
  ASSERT_TRUE(kept.ok()) << kept.status();
  int conditionals = 0;
  for (const auto& instruction : (*kept)->entry()->instructions()) {
    EXPECT_NE(instruction->opcode(), ir::Opcode::kWhile) << instruction->Describe();
    conditionals += instruction->opcode() == ir::Opcode::kConditional;
  }
  EXPECT_EQ(conditionals, 2);
  absl::StatusOr<std::unique_ptr<ir::Module>> lowered = ir::LowerControlFlow(**module);
  ASSERT_FALSE(lowered.ok());
  EXPECT_TRUE(absl::IsUnimplemented(lowered.status())) << lowered.status();
  EXPECT_NE(lowered.status().message().find("%loop: its trip count is unknown"), std::string::npos)
      << lowered.status();
}

// A per-device program (as JAX's compiled dumps are) whose loop condition all-reduces: each
// piece runs as it is on both devices, equal to the reference running the per-device program.
TEST_F(LoopProgramTest, APerDeviceProgramsLoopMatchesTheReference) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      ir::ParseModule(ControlFlowProgramText("per_device_loop"));
  ASSERT_TRUE(module.ok()) << module.status();
  const std::vector<std::vector<Literal>> arguments = {{Vector({0.5f, -1, 2, 0.25f})},
                                                       {Vector({3, 0.125f, -0.5f, 1})}};
  absl::StatusOr<std::vector<Literal>> reference = interp::EvaluateOnDevices(**module, arguments);
  ASSERT_TRUE(reference.ok()) << reference.status();
  absl::StatusOr<std::unique_ptr<exec::LoopProgram>> loops =
      exec::LoopProgram::FromPerDeviceModule(**module, *spmd::Mesh::Create({2}));
  ASSERT_TRUE(loops.ok()) << loops.status();
  ASSERT_TRUE((*loops)->Compile({&device(0), &device(1)}).ok());
  absl::StatusOr<std::vector<Literal>> results = (*loops)->RunPerDevice(arguments);
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_GT((*loops)->last_iterations(), 0);
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(CompareLiterals((*results)[d], (*reference)[d], 1e-5), "") << "device " << d;
  }
}

// Device d leaves the loop after d + 1 iterations: the host finds the devices disagree.
TEST_F(LoopProgramTest, DevicesThatDisagreeOnAConditionAreAnErrorNamingTheLoop) {
  constexpr char kDiverging[] = R"(HloModule diverging, num_partitions=2
%cond (s: (s32[])) -> pred[] {
  %s = (s32[]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %id = u32[] partition-id()
  %signed = s32[] convert(%id)
  %one = s32[] constant(1)
  %limit = s32[] add(%signed, %one)
  ROOT %lt = pred[] compare(%i, %limit), direction=LT
}
%body (t: (s32[])) -> (s32[]) {
  %t = (s32[]) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  ROOT %next = (s32[]) tuple(%i1)
}
ENTRY %main (n: s32[]) -> (s32[]) {
  %n = s32[] parameter(0)
  %init = (s32[]) tuple(%n)
  ROOT %loop = (s32[]) while(%init), condition=%cond, body=%body
}
)";
  EXPECT_NE(PerDeviceRunError(kDiverging, 0).find("%loop: the devices disagree on its condition"),
            std::string::npos);
}

// Device d takes branch d of a conditional holding a loop: the host finds the devices disagree.
TEST_F(LoopProgramTest, DevicesThatDisagreeOnABranchAreAnErrorNamingTheConditional) {
  constexpr char kDiverging[] = R"(HloModule diverging_branch, num_partitions=2
%cond (s: (s32[])) -> pred[] {
  %s = (s32[]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %one = s32[] constant(1)
  ROOT %gt = pred[] compare(%i, %one), direction=GT
}
%body (s: (s32[])) -> (s32[]) {
  %s = (s32[]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %two = s32[] constant(2)
  %half = s32[] divide(%i, %two)
  ROOT %next = (s32[]) tuple(%half)
}
%halve (a: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %start = (s32[]) tuple(%a)
  %halving = (s32[]) while(%start), condition=%cond, body=%body
  ROOT %last = s32[] get-tuple-element(%halving), index=0
}
%keep (b: s32[]) -> s32[] {
  ROOT %b = s32[] parameter(0)
}
ENTRY %main (n: s32[]) -> s32[] {
  %n = s32[] parameter(0)
  %id = u32[] partition-id()
  %index = s32[] convert(%id)
  ROOT %r = s32[] conditional(%index, %n, %n), branch_computations={%halve, %keep}
}
)";
  EXPECT_NE(PerDeviceRunError(kDiverging, 40).find("%r: the devices disagree on its branch index"),
            std::string::npos);
}

}  // namespace
}  // namespace vkspmd::testing
