// Writing follows planning: every kernel of the testdata programs gets GLSL that binds exactly its
// planned buffers (each part of a split buffer once), and compiles to valid SPIR-V, on the CPU.
#include "src/codegen/program_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "src/codegen/planner.h"
#include "src/codegen/program_plan.h"
#include "src/codegen/shader_compiler.h"
#include "src/ir/parser.h"
#include "tests/codegen/codegen_test_support.h"

namespace vkspmd::codegen {
namespace {

using ::testing::HasSubstr;

int Count(const std::string& text, const std::string& word) {
  int count = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    ++count;
  }
  return count;
}

TEST(ProgramWriterTest, EveryKernelBindsItsPlannedBuffersAndCompiles) {
  for (const char* name : {"softmax", "layer_norm", "mlp_backward", "dynamic_update_slice",
                           "predicates", "reduce_max_rank3", "all_reduce_groups"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<std::unique_ptr<ir::Module>> module =
        ir::ParseAndVerifyModule(TestdataProgram(name));
    ASSERT_TRUE(module.ok()) << module.status();
    absl::StatusOr<ProgramPlan> plan = PlanProgram(**module, LavapipeTarget());
    ASSERT_TRUE(plan.ok()) << plan.status();
    for (const KernelPlan& kernel : plan->kernels) {
      if (kernel.kind == KernelKind::kCollective) {
        EXPECT_TRUE(kernel.glsl.empty());
        continue;
      }
      uint32_t bindings = 0;
      for (int output : kernel.outputs()) bindings += plan->buffers[output].parts();
      for (int input : kernel.inputs) bindings += plan->buffers[input].parts();
      // Distinct bindings: a vec4 view of an input (KernelWriter::VectorRead) shares its binding.
      std::set<std::string> declared;
      for (size_t at = kernel.glsl.find("binding = "); at != std::string::npos;
           at = kernel.glsl.find("binding = ", at + 1)) {
        declared.insert(kernel.glsl.substr(at, kernel.glsl.find(')', at) - at));
      }
      EXPECT_EQ(declared.size(), bindings) << kernel.name;
      absl::StatusOr<std::vector<uint32_t>> spirv = CompileComputeShader(kernel.glsl, kernel.name);
      EXPECT_TRUE(spirv.ok()) << kernel.name << ": " << spirv.status();
    }
  }
}

TEST(ProgramWriterTest, ReductionsOverOneSubgroupNeedNoSharedMemoryOrBarriers) {
  // On lavapipe a row's lanes are one subgroup of 8: the shuffles combine them, and the kernels
  // have no barrier (which makes llvmpipe run a kernel as coroutines: the attention backward's row
  // kernel took 1.2 ms with one, 0.55 ms without). Where the subgroup size is not known, the
  // subgroups' results meet in shared memory.
  for (const char* name : {"softmax", "layer_norm"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<std::unique_ptr<ir::Module>> module =
        ir::ParseAndVerifyModule(TestdataProgram(name));
    ASSERT_TRUE(module.ok()) << module.status();
    absl::StatusOr<ProgramPlan> plan = PlanProgram(**module, LavapipeTarget());
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->subgroup_size, 8u);
    int lane_kernels = 0;
    for (const KernelPlan& kernel : plan->kernels) {
      if (kernel.local_size != 8 || kernel.kind == KernelKind::kDot) continue;
      ++lane_kernels;
      EXPECT_EQ(Count(kernel.glsl, "barrier()"), 0) << kernel.glsl;
      EXPECT_EQ(Count(kernel.glsl, "shared "), 0) << kernel.glsl;
      EXPECT_GT(Count(kernel.glsl, "subgroupShuffleXor"), 0) << kernel.glsl;
    }
    EXPECT_GT(lane_kernels, 0);
    plan->subgroup_size = 0;
    ASSERT_TRUE(WriteKernels(*plan).ok());
    for (const KernelPlan& kernel : plan->kernels) {
      if (kernel.local_size != 8 || kernel.kind == KernelKind::kDot) continue;
      EXPECT_GT(Count(kernel.glsl, "barrier()"), 0) << kernel.name;
      EXPECT_TRUE(CompileComputeShader(kernel.glsl, kernel.name).ok()) << kernel.name;
    }
  }
}

TEST(ProgramWriterTest, ReadingABufferThePlanDoesNotBindIsAnError) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(R"(HloModule m
ENTRY e {
  a = f32[8] parameter(0)
  b = f32[8] parameter(1)
  ROOT c = f32[8] add(a, b)
})");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<ProgramPlan> plan = PlanKernels(**module, LavapipeTarget());
  ASSERT_TRUE(plan.ok()) << plan.status();
  plan->kernels[0].inputs = {0};  // Drop b.
  absl::Status written = WriteKernels(*plan);
  EXPECT_EQ(written.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(written.message(), HasSubstr("unplanned {1}"));
}

}  // namespace
}  // namespace vkspmd::codegen
