// Writing follows planning: every kernel of the testdata programs gets GLSL that binds exactly its
// planned buffers (each part of a split buffer once), and compiles to valid SPIR-V, on the CPU;
// values several readers read are computed once.
#include "src/codegen/program_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/codegen/planner.h"
#include "src/codegen/program_plan.h"
#include "src/codegen/shader_compiler.h"
#include "src/ir/parser.h"
#include "tests/codegen/codegen_test_support.h"
#include "tests/support/occurrences.h"

namespace vkspmd::codegen {
namespace {

using ::testing::HasSubstr;

using ::vkspmd::testing::Occurrences;

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
      EXPECT_EQ(Occurrences(kernel.glsl, "barrier()"), 0) << kernel.glsl;
      EXPECT_EQ(Occurrences(kernel.glsl, "shared "), 0) << kernel.glsl;
      EXPECT_GT(Occurrences(kernel.glsl, "subgroupShuffleXor"), 0) << kernel.glsl;
    }
    EXPECT_GT(lane_kernels, 0);
    plan->subgroup_size = 0;
    ASSERT_TRUE(WriteKernels(*plan).ok());
    for (const KernelPlan& kernel : plan->kernels) {
      if (kernel.local_size != 8 || kernel.kind == KernelKind::kDot) continue;
      EXPECT_GT(Occurrences(kernel.glsl, "barrier()"), 0) << kernel.name;
      EXPECT_TRUE(CompileComputeShader(kernel.glsl, kernel.name).ok()) << kernel.name;
    }
  }
}

// The calls main() makes if every function call is inlined (as lavapipe's shader compiler does
// before it eliminates common subexpressions): each function `T vN(uint i)` (or `rowN`, `readN`)
// counts one plus what its calls count.
double InlinedCalls(const std::string& glsl) {
  // Bodies run from a definition "NAME(uint i) {" to the next one (main's to the end).
  struct Definition {
    std::string name;
    size_t name_start, body_start;
  };
  std::vector<Definition> definitions;
  const std::string signature = "(uint i) {";
  for (size_t at = glsl.find(signature); at != std::string::npos;
       at = glsl.find(signature, at + 1)) {
    const size_t name = glsl.rfind(' ', at) + 1;
    definitions.push_back({glsl.substr(name, at - name), name, at + signature.size()});
  }
  const size_t main_start = glsl.find("void main()");
  std::map<std::string, std::string> bodies;
  for (size_t k = 0; k < definitions.size(); ++k) {
    const size_t end = k + 1 < definitions.size() ? definitions[k + 1].name_start : main_start;
    bodies[definitions[k].name] =
        glsl.substr(definitions[k].body_start, end - definitions[k].body_start);
  }
  bodies["main"] = glsl.substr(main_start);
  // A call: "v" or "read", digits, "(", not inside a longer name.
  const auto calls = [](const std::string& body) {
    std::vector<std::string> names;
    for (size_t at = 0; at < body.size(); ++at) {
      if (at > 0 &&
          (std::isalnum(static_cast<unsigned char>(body[at - 1])) || body[at - 1] == '_')) {
        continue;
      }
      for (const std::string prefix : {"v", "read"}) {
        if (body.compare(at, prefix.size(), prefix) != 0) continue;
        size_t end = at + prefix.size();
        while (end < body.size() && std::isdigit(static_cast<unsigned char>(body[end]))) ++end;
        if (end > at + prefix.size() && end < body.size() && body[end] == '(') {
          names.push_back(body.substr(at, end - at));
        }
      }
    }
    return names;
  };
  std::map<std::string, double> memo;
  std::function<double(const std::string&)> size = [&](const std::string& name) {
    if (auto found = memo.find(name); found != memo.end()) return found->second;
    double total = 1;
    for (const std::string& callee : calls(bodies[name])) total += size(callee);
    return memo[name] = total;
  };
  return size("main");
}

// 16 rotations of a word each xor'ed with the word, all own-index, fused into one kernel by
// multi-output fusion: each word is read three times, so inlining the kernel's function calls
// gave 3^16 calls (43 million) before KernelWriter::ShareValues computed each word once.
TEST(ProgramWriterTest, ValuesSeveralReadersReadAreComputedOnce) {
  std::string text =
      "HloModule m\nENTRY e {\n  x0 = u32[64] parameter(0)\n  three = u32[] constant(3)\n"
      "  b3 = u32[64] broadcast(three), dimensions={}\n  rest = u32[] constant(29)\n"
      "  b29 = u32[64] broadcast(rest), dimensions={}\n";
  constexpr int kRounds = 16;
  for (int k = 0; k < kRounds; ++k) {
    absl::StrAppend(&text, "  l", k, " = u32[64] shift-left(x", k, ", b3)\n  r", k,
                    " = u32[64] shift-right-logical(x", k, ", b29)\n  o", k, " = u32[64] or(l", k,
                    ", r", k, ")\n  x", k + 1, " = u32[64] xor(o", k, ", x", k, ")\n");
  }
  absl::StrAppend(&text, "  ROOT y = u32[64] copy(x", kRounds, ")\n}\n");
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<ProgramPlan> plan = PlanProgram(**module, LavapipeTarget());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->kernels.size(), 1u);
  const std::string& glsl = plan->kernels[0].glsl;
  // Main computes the 16 shared words once each: 150 calls in all, about 9 a round (the xor, the
  // or, both shifts with their broadcasts, the word's variable read thrice).
  EXPECT_LT(InlinedCalls(glsl), 16 * kRounds) << glsl;
  EXPECT_TRUE(CompileComputeShader(glsl, plan->kernels[0].name).ok());
}

// On CPU drivers a dot reads both f16/bf16 operands 4 halves at a time (two 32-bit words, one
// load; llvmpipe runs each load as a loop over the lanes), as f32 dots read vec4s: x.W (lane runs
// and uniform runs along the contraction), x.W^T (4 contraction steps per lane-side column) and
// x^T.g (uniform runs of rows). Each operand's binding is also declared as uvec2[].
TEST(ProgramWriterTest, HalfDotsReadFourHalvesPerLoad) {
  for (const char* type : {"f16", "bf16"}) {
    for (const char* dims : {"lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                             "lhs_contracting_dims={1}, rhs_contracting_dims={1}",
                             "lhs_contracting_dims={0}, rhs_contracting_dims={0}"}) {
      SCOPED_TRACE(absl::StrCat(type, " ", dims));
      absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(absl::StrCat(
          "HloModule m\nENTRY e {\n  x = ", type, "[64,64] parameter(0)\n  y = ", type,
          "[64,64] parameter(1)\n  ROOT d = ", type, "[64,64] dot(x, y), ", dims, "\n}\n"));
      ASSERT_TRUE(module.ok()) << module.status();
      absl::StatusOr<ProgramPlan> plan = PlanProgram(**module, LavapipeTarget());
      ASSERT_TRUE(plan.ok()) << plan.status();
      ASSERT_EQ(plan->kernels.size(), 1u);
      const std::string& glsl = plan->kernels[0].glsl;
      EXPECT_EQ(Occurrences(glsl, "{ uvec2 data[]; }"), 2) << glsl;
      EXPECT_THAT(glsl, HasSubstr("uvec2 w = in0v.data[i];"));
      EXPECT_THAT(glsl, HasSubstr("uvec2 w = in1v.data[i];"));
      EXPECT_TRUE(CompileComputeShader(glsl, plan->kernels[0].name).ok());
    }
  }
}

// Float results as the reference computes them on any driver: products and sums are
// NoContraction (a driver may not fuse them into an fma), negate and abs change the sign bit
// alone (NaNs too), and where the device preserves f32 subnormals every kernel says so
// (DenormPreserve 32: OpExecutionMode 4459, capability 4464), or a driver may flush them.
TEST(ProgramWriterTest, FloatArithmeticIsNotContractedAndSubnormalsArePreservedWhereOffered) {
  constexpr char kText[] = R"(HloModule m
ENTRY e {
  a = f32[37] parameter(0)
  b = f32[37] parameter(1)
  c = f32[37] parameter(2)
  p = f32[37] multiply(a, b)
  s = f32[37] add(p, c)
  n = f32[37] negate(s)
  ROOT m = f32[37] abs(n)
})";
  for (bool preserve : {false, true}) {
    SCOPED_TRACE(preserve);
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(kText);
    ASSERT_TRUE(module.ok()) << module.status();
    TargetInfo target = LavapipeTarget();
    target.preserve_float32_denormals = preserve;
    absl::StatusOr<ProgramPlan> plan = PlanProgram(**module, target);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_EQ(plan->kernels.size(), 1u);
    const std::string& glsl = plan->kernels[0].glsl;
    EXPECT_THAT(glsl, HasSubstr("precise float r = x0 * x1;"));
    EXPECT_THAT(glsl, HasSubstr("precise float r = x0 + x1;"));
    EXPECT_THAT(glsl, HasSubstr("floatBitsToUint(x0) ^ 0x80000000u"));
    EXPECT_THAT(glsl, HasSubstr("floatBitsToUint(x0) & 0x7fffffffu"));
    absl::StatusOr<std::vector<uint32_t>> spirv = CompileComputeShader(glsl, "m");
    ASSERT_TRUE(spirv.ok()) << spirv.status();
    // OpExecutionMode (opcode 16, 4 words) %main DenormPreserve 32; OpCapability (17) 4464;
    // OpDecorate (71) %x NoContraction (42) on the product and the sum.
    bool mode = false, capability = false;
    int no_contraction = 0;
    for (size_t at = 5; at < spirv->size();) {
      const uint32_t words = (*spirv)[at] >> 16, opcode = (*spirv)[at] & 0xffffu;
      if (words == 0) break;
      if (opcode == 16 && words == 4 && (*spirv)[at + 2] == 4459 && (*spirv)[at + 3] == 32) {
        mode = true;
      }
      if (opcode == 17 && words == 2 && (*spirv)[at + 1] == 4464) capability = true;
      if (opcode == 71 && words == 3 && (*spirv)[at + 2] == 42) ++no_contraction;
      at += words;
    }
    EXPECT_EQ(mode, preserve);
    EXPECT_EQ(capability, preserve);
    EXPECT_GE(no_contraction, 2);
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
