// Writing follows planning: every kernel of the testdata programs gets GLSL that binds exactly its
// planned buffers (each part of a split buffer once), and compiles to valid SPIR-V, on the CPU.
#include "src/codegen/program_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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
      EXPECT_EQ(Count(kernel.glsl, " buffer B"), static_cast<int>(bindings)) << kernel.name;
      absl::StatusOr<std::vector<uint32_t>> spirv = CompileComputeShader(kernel.glsl, kernel.name);
      EXPECT_TRUE(spirv.ok()) << kernel.name << ": " << spirv.status();
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
