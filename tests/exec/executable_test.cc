// Single-device execution against the CPU reference: every single-device program of
// tests/testdata that the device compiler supports, plus reductions and contractions long enough
// to need several passes. Integers and predicates must match exactly; floats within 1e-4 relative
// (f32 arithmetic and accumulation order on the device versus double-then-round on the CPU, and
// the drivers' transcendental functions, which GLSL allows a few ulp of error).
#include "src/exec/executable.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "src/interp/evaluator.h"
#include "src/io/npy.h"
#include "src/ir/parser.h"
#include "tests/exec/device_reference.h"
#include "tests/exec/dispatch_counter.h"
#include "tests/exec/literal_compare.h"
#include "tests/exec/random_module.h"
#include "tests/exec/testdata_programs.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

// The stored .npy inputs of a testdata program where they exist, random values otherwise.
std::vector<ir::Literal> Arguments(const ir::Module& module, const std::string& base,
                                   uint32_t seed) {
  std::vector<ir::Literal> arguments = RandomArguments(module, seed);
  for (const ir::Instruction* parameter : module.entry()->parameters()) {
    int64_t number = parameter->attributes().parameter_number;
    absl::StatusOr<ir::Literal> stored =
        io::ReadNpyFile(absl::StrCat(base, ".arg", number, ".npy"));
    if (stored.ok() && stored->shape() == parameter->shape())
      arguments[number] = std::move(*stored);
  }
  return arguments;
}

class ExecutableTest : public DeviceTest {
 protected:
  void SetUp() override { OpenDevices(1); }

  // Compiles and runs `text` on the device and compares with the CPU reference.
  void ExpectMatchesReference(const std::string& text, const std::string& base = "",
                              uint32_t seed = 1) {
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
    ASSERT_TRUE(module.ok()) << module.status();
    std::vector<ir::Literal> arguments = Arguments(**module, base, seed);
    EXPECT_EQ(DeviceDiffersFromReference(**module, arguments, device(0)), "");
  }
};

TEST_F(ExecutableTest, TestdataProgramsMatchTheReference) {
  int compiled = 0;
  for (const TestdataProgram& program : ReadTestdataPrograms(VKSPMD_TESTDATA_DIR)) {
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(program.text);
    ASSERT_TRUE(module.ok()) << program.path << ": " << module.status();
    if ((*module)->replica_count() * (*module)->partition_count() != 1) continue;
    absl::StatusOr<codegen::ProgramPlan> plan =
        codegen::PlanProgram(**module, exec::TargetFor(device(0)));
    if (!plan.ok()) {
      // Not compiled yet: the error must say what and where.
      EXPECT_EQ(plan.status().code(), absl::StatusCode::kUnimplemented) << program.path;
      EXPECT_NE(plan.status().message().find("%"), absl::string_view::npos) << plan.status();
      continue;
    }
    SCOPED_TRACE(program.path.string());
    ExpectMatchesReference(program.text, program.base);
    ++compiled;
  }
  EXPECT_GE(compiled, 20) << "most single-device testdata programs compile";
}

// The text of tests/testdata/NAME.hlo.
std::string TestdataText(const std::string& name) {
  return ReadTestdataText(VKSPMD_TESTDATA_DIR, name);
}

TEST_F(ExecutableTest, FusesElementwiseChainsIntoOneKernel) {
  constexpr char kChain[] = R"(
HloModule chain
ENTRY %main (x: f32[1000], y: f32[1000]) -> f32[1000] {
  %x = f32[1000] parameter(0)
  %y = f32[1000] parameter(1)
  %a = f32[1000] multiply(%x, %y)
  %b = f32[1000] add(%a, %x)
  %c = f32[1000] tanh(%b)
  %d = f32[1000] exponential(%c)
  %two = f32[] constant(2)
  %twos = f32[1000] broadcast(%two), dimensions={}
  %e = f32[1000] multiply(%d, %twos)
  %f = f32[1000] subtract(%e, %y)
  %g = f32[1000] negate(%f)
  ROOT %h = f32[1000] maximum(%g, %x)
}
)";
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(kChain);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<codegen::ProgramPlan> plan =
      codegen::PlanProgram(**module, exec::TargetFor(device(0)));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->kernels.size(), 1u);
  DispatchCounter counter(device(0));
  ASSERT_TRUE(exec::Executable::Compile(**module, device(0)).ok());
  EXPECT_EQ(counter.count(), 1) << "ten ops, one recorded vkCmdDispatch";
  ExpectMatchesReference(kChain);
}

constexpr char kRowReducers[] = R"(
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
)";

// Softmax over rows of `columns` floats, in the form JAX emits (keepdims reshapes included).
std::string Softmax(int rows, int columns) {
  return absl::StrFormat(R"(
HloModule softmax
%s
ENTRY %%main (x: f32[%d,%d]) -> f32[%d,%d] {
  %%x = f32[%d,%d] parameter(0)
  %%low = f32[] constant(-inf)
  %%m = f32[%d] reduce(%%x, %%low), dimensions={1}, to_apply=%%max
  %%mk = f32[%d,1] reshape(%%m)
  %%mr = f32[%d] reshape(%%mk)
  %%mb = f32[%d,%d] broadcast(%%mr), dimensions={0}
  %%d = f32[%d,%d] subtract(%%x, %%mb)
  %%e = f32[%d,%d] exponential(%%d)
  %%zero = f32[] constant(0)
  %%s = f32[%d] reduce(%%e, %%zero), dimensions={1}, to_apply=%%add
  %%sb = f32[%d,%d] broadcast(%%s), dimensions={0}
  ROOT %%y = f32[%d,%d] divide(%%e, %%sb)
}
)",
                         kRowReducers, rows, columns, rows, columns, rows, columns, rows, rows,
                         rows, rows, columns, rows, columns, rows, columns, rows, rows, columns,
                         rows, columns);
}

TEST_F(ExecutableTest, SoftmaxAndLayerNormAreOneKernelEach) {
  for (auto [rows, columns] : {std::pair{1, 1}, {7, 31}, {33, 1000}, {2, 4097}, {130, 8}}) {
    SCOPED_TRACE(absl::StrCat(rows, "x", columns));
    std::string text = Softmax(rows, columns);
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
    ASSERT_TRUE(module.ok()) << module.status();
    DispatchCounter counter(device(0));
    absl::StatusOr<std::unique_ptr<exec::Executable>> executable =
        exec::Executable::Compile(**module, device(0));
    ASSERT_TRUE(executable.ok()) << executable.status();
    EXPECT_LE(counter.count(), 2);
    EXPECT_EQ(counter.count(), 1) << "max, exp, sum and divide in one row kernel";
    ExpectMatchesReference(text);
  }
  std::string layer_norm;
  for (const TestdataProgram& program : ReadTestdataPrograms(VKSPMD_TESTDATA_DIR)) {
    if (program.path.filename() == "layer_norm.hlo") layer_norm = program.text;
  }
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(layer_norm);
  ASSERT_TRUE(module.ok()) << module.status();
  DispatchCounter counter(device(0));
  ASSERT_TRUE(exec::Executable::Compile(**module, device(0)).ok());
  EXPECT_EQ(counter.count(), 1) << "mean, variance and scaling in one row kernel";
}

TEST_F(ExecutableTest, MultiOutputFusionMatchesTheReferenceInOneDispatch) {
  // An Adam-like update (testdata/fusion/adam_update.hlo): the new parameter and both moments
  // from one kernel, donated in place.
  const std::string text = TestdataText("fusion/adam_update");
  ExpectMatchesReference(text);
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 1)
      << "the update and both moments in one multi-output kernel";
}

TEST_F(ExecutableTest, ARowKernelFoldedIntoItsMapReaderMatchesTheReference) {
  // Layer norm's variance (rows of 40: 5 per lane of 8) kept for later, as a training step keeps
  // it for the backward pass, and its rsqrt: y's kernel computes the variance and the rsqrt row
  // by row and stores both once per row. 3 dispatches with the variance's kernel of its own, 2
  // with the rsqrt's.
  const std::string variance = TestdataText("fusion/variance_rsqrt");
  ExpectMatchesReference(variance);
  EXPECT_EQ(DispatchesOfCompiling(device(0), variance), 1);
  // Softmax with the exponentials and the broadcast sum kept (rows of 19, not a multiple of the
  // lanes): sm sums each row and stores ex and sb too. 3 with sb's kernel of its own, 2 before a
  // row kernel absorbed the map kernel (ex) it reads.
  const std::string softmax = TestdataText("fusion/softmax_kept");
  ExpectMatchesReference(softmax);
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(softmax);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<std::unique_ptr<exec::Executable>> executable =
      exec::Executable::Compile(**module, device(0));
  ASSERT_TRUE(executable.ok()) << executable.status();
  const codegen::ProgramPlan& plan = (*executable)->plan();
  ASSERT_EQ(plan.kernels.size(), 1u);
  EXPECT_EQ(plan.kernels[0].kind, codegen::KernelKind::kRows);
  EXPECT_EQ(plan.kernels[0].root->name(), "sm");
  EXPECT_EQ(plan.kernels[0].also_stores.size(), 2u);  // sb and ex.
  EXPECT_EQ(DispatchesOfCompiling(device(0), softmax), 1);
}

TEST_F(ExecutableTest, AFoldedReductionMatchesTheReferenceInOneDispatch) {
  // A bias update with its gradient (a sum over 37 rows, and a max over them) computed by the
  // update's own invocations; the zero pad maps nothing, as autodiff emits it.
  const std::string text = R"(HloModule bias
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT z = f32[] add(x, y)
}
max {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT z = f32[] maximum(x, y)
}
ENTRY e {
  g = f32[37,11] parameter(0)
  b = f32[11] parameter(1)
  zero = f32[] constant(0)
  s = f32[11] reduce(g, zero), dimensions={0}, to_apply=add
  sp = f32[11] pad(s, zero), padding=0_0
  low = f32[] constant(-inf)
  m = f32[11] reduce(g, low), dimensions={0}, to_apply=max
  ss = f32[11] multiply(sp, m)
  lr = f32[] constant(0.1)
  lrb = f32[11] broadcast(lr), dimensions={}
  step = f32[11] multiply(ss, lrb)
  ROOT nb = f32[11] subtract(b, step)
})";
  ExpectMatchesReference(text);
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 1)
      << "both reductions inside the update's kernel";
}

TEST_F(ExecutableTest, DotsReadingThroughTransposesMatchTheReference) {
  const std::string text = R"(HloModule through
ENTRY e {
  x = f32[13,9] parameter(0)
  w = f32[11,9] parameter(1)
  g = f32[13,11] parameter(2)
  q = f32[2,3,7,5] parameter(3)
  wt = f32[9,11] transpose(w), dimensions={1,0}
  y = f32[13,11] dot(x, wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  dx = f32[13,9] dot(g, wt), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  qt = f32[2,7,3,5] transpose(q), dimensions={0,2,1,3}
  s = f32[2,7,5,5] dot(qt, qt), lhs_batch_dims={0,1}, lhs_contracting_dims={2}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  ROOT t = (f32[13,11], f32[13,9], f32[2,7,5,5]) tuple(y, dx, s)
})";
  ExpectMatchesReference(text);
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 3) << "three dots, no transpose kernels";
}

TEST_F(ExecutableTest, DotsReadingThroughReshapesOfTransposesMatchTheReference) {
  // The attention heads' output [batch, heads, seq, head] as [batch * seq, heads * head]: the
  // output projection, its weight gradient and the gradient back to the heads (a buffer split
  // into heads again) read o and the projection's result through their transposes and
  // reshapes; the bias gradient (a column sum of m) computes m inline. No copy kernels: three
  // dots and the sum.
  const std::string text = absl::StrCat(R"(HloModule through
)",
                                        kRowReducers, R"(
ENTRY e {
  o = f32[2,3,5,4] parameter(0)
  w = f32[12,6] parameter(1)
  g = f32[10,6] parameter(2)
  v = f32[2,3,5,4] parameter(3)
  zero = f32[] constant(0)
  ot = f32[2,5,3,4] transpose(o), dimensions={0,2,1,3}
  m = f32[10,12] reshape(ot)
  y = f32[10,6] dot(m, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  gw = f32[12,6] dot(m, g), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  db = f32[12] reduce(m, zero), dimensions={0}, to_apply=%add
  gm = f32[10,12] dot(g, w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  gr = f32[2,5,3,4] reshape(gm)
  gt = f32[2,3,5,4] transpose(gr), dimensions={0,2,1,3}
  gv = f32[2,3,4,4] dot(gt, v), lhs_batch_dims={0,1}, lhs_contracting_dims={2}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  ROOT t = (f32[10,6], f32[12,6], f32[12], f32[2,3,4,4]) tuple(y, gw, db, gv)
})");
  ExpectMatchesReference(text);
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 5) << "four dots and the sum, no copies";
}

TEST_F(ExecutableTest, ASumOfMoreBuffersThanTheDeviceBindsMatchesTheReference) {
  // 70 parameters summed elementwise: more than the 32 storage buffers lavapipe binds per kernel.
  std::string text = "HloModule wide\nENTRY e {\n";
  for (int k = 0; k < 70; ++k) absl::StrAppend(&text, "  p", k, " = f32[5] parameter(", k, ")\n");
  std::string previous = "p0";
  for (int k = 1; k < 70; ++k) {
    absl::StrAppend(&text, "  acc", k, " = f32[5] add(", previous, ", p", k, ")\n");
    previous = absl::StrCat("acc", k);
  }
  absl::StrAppend(&text, "  ROOT r = f32[5] negate(", previous, ")\n}\n");
  ExpectMatchesReference(text);
}

TEST_F(ExecutableTest, RowFusionKeepsValuesReadOutsideTheirRow) {
  // %m is read transposed by %t, so its reduction cannot live inside %y's row kernel, and %e
  // is also a result: both keep their buffers, and the results still match.
  ExpectMatchesReference(absl::StrCat(R"(
HloModule not_aligned
)",
                                      kRowReducers, R"(
ENTRY %main (x: f32[6,6]) -> (f32[6,6], f32[6,6]) {
  %x = f32[6,6] parameter(0)
  %low = f32[] constant(-inf)
  %m = f32[6] reduce(%x, %low), dimensions={1}, to_apply=%max
  %mb = f32[6,6] broadcast(%m), dimensions={1}
  %e = f32[6,6] exponential(%x)
  %y = f32[6,6] subtract(%e, %mb)
  ROOT %t = (f32[6,6], f32[6,6]) tuple(%y, %e)
}
)"));
}

TEST_F(ExecutableTest, ElementwiseKernelsOfAnyShapeShareOnePipeline) {
  // Element counts are push constants, so the same chain over five shapes of three ranks is
  // one generated source and one pipeline on the device.
  const size_t before = device(0).device().shared_pipeline_count();
  for (const char* shape : {"f32[1]", "f32[7]", "f32[31,64]", "f32[1000]", "f32[3,1,4097]"}) {
    SCOPED_TRACE(shape);
    ExpectMatchesReference(absl::StrReplaceAll(R"(
HloModule sweep
ENTRY %main (x: SHAPE, y: SHAPE) -> SHAPE {
  %x = SHAPE parameter(0)
  %y = SHAPE parameter(1)
  %two = f32[] constant(2)
  %twos = SHAPE broadcast(%two), dimensions={}
  %a = SHAPE multiply(%x, %twos)
  %b = SHAPE add(%a, %y)
  ROOT %c = SHAPE tanh(%b)
}
)",
                                               {{"SHAPE", shape}}));
  }
  EXPECT_EQ(device(0).device().shared_pipeline_count() - before, 1u);
}

TEST_F(ExecutableTest, LongReductionsAndContractionsRunInBoundedPasses) {
  ExpectMatchesReference(R"(
HloModule long_reduce
%add (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %s = s32[] add(%a, %b)
}
ENTRY %main (x: s32[3,300007]) -> s32[3] {
  %x = s32[3,300007] parameter(0)
  %zero = s32[] constant(7)
  ROOT %r = s32[3] reduce(%x, %zero), dimensions={1}, to_apply=%add
}
)");
  // 10M elements: three passes of at most 4,096 iterations per invocation.
  ExpectMatchesReference(R"(
HloModule ten_million
%add (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %s = s32[] add(%a, %b)
}
ENTRY %main (x: s32[10000000]) -> s32[] {
  %x = s32[10000000] parameter(0)
  %zero = s32[] constant(0)
  ROOT %r = s32[] reduce(%x, %zero), dimensions={0}, to_apply=%add
}
)");
  // A column reduction (the reduced dim is not the last): one invocation per output column.
  ExpectMatchesReference(R"(
HloModule columns
%max (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %s = s32[] maximum(%a, %b)
}
ENTRY %main (x: s32[70001,5]) -> s32[5] {
  %x = s32[70001,5] parameter(0)
  %low = s32[] constant(-2147483648)
  ROOT %r = s32[5] reduce(%x, %low), dimensions={0}, to_apply=%max
}
)");
  ExpectMatchesReference(R"(
HloModule long_dot
ENTRY %main (a: f32[3,300000], b: f32[300000,2]) -> f32[3,2] {
  %a = f32[3,300000] parameter(0)
  %b = f32[300000,2] parameter(1)
  ROOT %d = f32[3,2] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)");
}

TEST_F(ExecutableTest, DotWithBatchAndTransposedOperandsFusesTheTranspose) {
  ExpectMatchesReference(R"(
HloModule batched
ENTRY %main (a: f32[2,17,5], b: f32[2,17,3]) -> f32[2,5,3] {
  %a = f32[2,17,5] parameter(0)
  %b = f32[2,17,3] parameter(1)
  ROOT %d = f32[2,5,3] dot(%a, %b), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}
}
)");
}

TEST_F(ExecutableTest, AHundredThousandChainedOpsCompileInSeconds) {
  // Kernel writing used to recurse once per fused op (5,000 overflowed the stack) and cost grew
  // with the square of the chain (2,000 ops: 78 s). Fusions are now capped, and the equal pieces
  // of the chain share one pipeline.
  constexpr int kOps = 100000;
  std::string text =
      "HloModule chain\nENTRY %main (x: f32[17]) -> f32[17] {\n  %v0 = f32[17] parameter(0)\n";
  for (int k = 1; k <= kOps; ++k) {
    absl::StrAppend(&text, k == kOps ? "  ROOT " : "  ", "%v", k, " = f32[17] ",
                    k % 2 ? "tanh" : "negate", "(%v", k - 1, ")\n");
  }
  absl::StrAppend(&text, "}\n");
  const auto start = std::chrono::steady_clock::now();
  ExpectMatchesReference(text);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Measured 1.2 s (reference evaluation included); generous for loaded CI machines.
  EXPECT_LT(seconds, 60) << "compiling and running a 100,000-op chain";
}

TEST_F(ExecutableTest, MoreElementsThanOneDispatchDimension) {
  ExpectMatchesReference(R"(
HloModule big
ENTRY %main (x: s32[4194311]) -> s32[4194311] {
  %x = s32[4194311] parameter(0)
  %i = s32[4194311] iota(), iota_dimension=0
  ROOT %s = s32[4194311] add(%x, %i)
}
)");
}

TEST_F(ExecutableTest, BuffersLargerThanOneBindingAreSplitIntoRanges) {
  // 2^25 + 9 four-byte elements: just over lavapipe's 128 MiB maxStorageBufferRange, so the
  // parameter, the elementwise result and the reduction's input are each bound as two ranges.
  const uint64_t range = device(0).device().physical_device().max_storage_buffer_range;
  if (range > (1ull << 27)) GTEST_SKIP() << "the device binds " << range << " bytes at once";
  ExpectMatchesReference(R"(
HloModule big_bindings
%max (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %m = s32[] maximum(%a, %b)
}
ENTRY %main (x: s32[33554441]) -> (s32[33554441], s32[]) {
  %x = s32[33554441] parameter(0)
  %i = s32[33554441] iota(), iota_dimension=0
  %y = s32[33554441] add(%x, %i)
  %low = s32[] constant(-2147483648)
  %m = s32[] reduce(%y, %low), dimensions={0}, to_apply=%max
  ROOT %t = (s32[33554441], s32[]) tuple(%y, %m)
}
)");
}

TEST_F(ExecutableTest, NarrowIntegersWrapAndSaturateAsXlaDoes) {
  // Computed in 32 bits on the device, so every intermediate must be wrapped back: 100 + 100 is
  // -56 as s8 before the comparison, -128 / -1 is -128, a logical shift right sees the 8-bit
  // pattern, float converts saturate, iota wraps, and u16 arithmetic is modulo 65536.
  ExpectMatchesReference(R"(
HloModule narrow
%add (a: s8[], b: s8[]) -> s8[] {
  %a = s8[] parameter(0)
  %b = s8[] parameter(1)
  ROOT %s = s8[] add(%a, %b)
}
ENTRY %main (x: s8[300], f: f32[300], w: u16[300]) -> (pred[300], s8[300], s8[300], u8[300], s8[300], u16[300], s8[]) {
  %x = s8[300] parameter(0)
  %f = f32[300] parameter(1)
  %w = u16[300] parameter(2)
  %hundred = s8[] constant(100)
  %hundreds = s8[300] broadcast(%hundred), dimensions={}
  %h2 = s8[300] add(%hundreds, %hundreds)
  %zero = s8[] constant(0)
  %zeros = s8[300] broadcast(%zero), dimensions={}
  %negative = pred[300] compare(%h2, %zeros), direction=LT
  %min = s8[] constant(-128)
  %mins = s8[300] broadcast(%min), dimensions={}
  %minus_one = s8[] constant(-1)
  %minus_ones = s8[300] broadcast(%minus_one), dimensions={}
  %quotient = s8[300] divide(%mins, %minus_ones)
  %three = s8[] constant(3)
  %threes = s8[300] broadcast(%three), dimensions={}
  %shifted = s8[300] shift-right-logical(%x, %threes)
  %scale = f32[] constant(1000)
  %scales = f32[300] broadcast(%scale), dimensions={}
  %big = f32[300] multiply(%f, %scales)
  %to_u8 = u8[300] convert(%big)
  %iota = s8[300] iota(), iota_dimension=0
  %iota_x = s8[300] multiply(%iota, %x)
  %wide = u16[300] multiply(%w, %w)
  %square = u16[300] multiply(%wide, %wide)
  %sum = s8[] reduce(%iota_x, %zero), dimensions={0}, to_apply=%add
  ROOT %t = (pred[300], s8[300], s8[300], u8[300], s8[300], u16[300], s8[]) tuple(%negative, %quotient, %shifted, %to_u8, %iota_x, %square, %sum)
}
)");
}

TEST_F(ExecutableTest, IntermediatesWithDisjointLifetimesShareBuffers) {
  constexpr char kDots[] = R"(
HloModule dots
ENTRY %main (x: f32[16,16]) -> f32[16,16] {
  %x = f32[16,16] parameter(0)
  %d1 = f32[16,16] dot(%x, %x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %t1 = f32[16,16] tanh(%d1)
  %d2 = f32[16,16] dot(%t1, %t1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %t2 = f32[16,16] tanh(%d2)
  %d3 = f32[16,16] dot(%t2, %t2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %t3 = f32[16,16] tanh(%d3)
  ROOT %d4 = f32[16,16] dot(%t3, %t3), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(kDots);
  ASSERT_TRUE(module.ok()) << module.status();
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto executable, exec::Executable::Compile(**module, device(0)));
  EXPECT_EQ(executable->plan().buffers.size(), 5u);
  EXPECT_EQ(executable->device_buffer_count(), 4u) << "d3 reuses d1's buffer";
  ExpectMatchesReference(kDots);
}

TEST_F(ExecutableTest, PredicatesInBuffersOneBytePerElementWhereTheDeviceCan) {
  constexpr char kPredicates[] = R"(
HloModule predicates
%and (a: pred[], b: pred[]) -> pred[] {
  %a = pred[] parameter(0)
  %b = pred[] parameter(1)
  ROOT %r = pred[] and(%a, %b)
}
ENTRY %main (mask: pred[7,9], x: f32[7,9]) -> (pred[7,9], pred[9], f32[7,9]) {
  %mask = pred[7,9] parameter(0)
  %x = f32[7,9] parameter(1)
  %zero = f32[] constant(0)
  %zeros = f32[7,9] broadcast(%zero), dimensions={}
  %positive = pred[7,9] compare(%x, %zeros), direction=GT
  %both = pred[7,9] xor(%mask, %positive)
  %true = pred[] constant(true)
  %all = pred[9] reduce(%both, %true), dimensions={0}, to_apply=%and
  %picked = f32[7,9] select(%both, %x, %zeros)
  ROOT %out = (pred[7,9], pred[9], f32[7,9]) tuple(%both, %all, %picked)
}
)";
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(kPredicates);
  ASSERT_TRUE(module.ok()) << module.status();
  const runtime::PhysicalDeviceInfo& info = device(0).device().physical_device();
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto executable, exec::Executable::Compile(**module, device(0)));
  const uint32_t expected_bytes = info.storage_buffer_8bit && info.shader_int8 ? 1 : 4;
  for (const codegen::BufferPlan& buffer : executable->plan().buffers) {
    if (buffer.shape.dtype() == ir::DType::kPred) {
      EXPECT_EQ(buffer.element_bytes, expected_bytes) << buffer.name;
    }
  }
  ExpectMatchesReference(kPredicates);
}

TEST_F(ExecutableTest, DonatedParametersReceiveOutputsComputedInPlace) {
  constexpr char kUpdate[] = R"(
HloModule sgd, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY %main (w: f32[31,7], g: f32[31,7]) -> (f32[31,7], f32[]) {
  %w = f32[31,7] parameter(0)
  %g = f32[31,7] parameter(1)
  %rate = f32[] constant(0.1)
  %rates = f32[31,7] broadcast(%rate), dimensions={}
  %step = f32[31,7] multiply(%g, %rates)
  %updated = f32[31,7] subtract(%w, %step)
  %zero = f32[] constant(0)
  %add = f32[] add(%zero, %zero)
  ROOT %out = (f32[31,7], f32[]) tuple(%updated, %zero)
}
)";
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(kUpdate);
  ASSERT_TRUE(module.ok()) << module.status();
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto executable, exec::Executable::Compile(**module, device(0)));
  ASSERT_EQ(executable->plan().donations.size(), 1u);
  EXPECT_EQ(executable->device_buffer_count(), executable->plan().buffers.size() - 1);
  // The same executable twice: the second run must not see the first run's in-place write.
  for (uint32_t seed : {1u, 2u}) {
    std::vector<ir::Literal> arguments = Arguments(**module, "", seed);
    absl::StatusOr<ir::Literal> reference = interp::Evaluate(**module, arguments);
    ASSERT_TRUE(reference.ok()) << reference.status();
    VKSPMD_ASSERT_OK_AND_ASSIGN(ir::Literal result, executable->Run(arguments));
    EXPECT_EQ(CompareLiterals(result, *reference), "") << "run with seed " << seed;
  }

  // A transpose reads other elements than it writes: no donation, and still correct.
  constexpr char kTranspose[] = R"(
HloModule transpose, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY %main (w: f32[9,9]) -> f32[9,9] {
  %w = f32[9,9] parameter(0)
  %t = f32[9,9] transpose(%w), dimensions={1,0}
  ROOT %r = f32[9,9] add(%t, %w)
}
)";
  module = ir::ParseAndVerifyModule(kTranspose);
  ASSERT_TRUE(module.ok()) << module.status();
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto transposed, exec::Executable::Compile(**module, device(0)));
  EXPECT_TRUE(transposed->plan().donations.empty());
  ExpectMatchesReference(kTranspose);
}

TEST_F(ExecutableTest, UnsupportedOpsAreClearErrors) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(R"(
HloModule custom
ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %c = f32[4] custom-call(%x), custom_call_target="Sharding", sharding={replicated}
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::Status status = exec::Executable::Compile(**module, device(0)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("custom-call"), absl::string_view::npos) << status;
  EXPECT_NE(status.message().find("%c"), absl::string_view::npos) << status;

  module = ir::ParseAndVerifyModule(R"(
HloModule f64_exp
ENTRY %main (x: f64[4]) -> f64[4] {
  %x = f64[4] parameter(0)
  ROOT %e = f64[4] exponential(%x)
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  status = exec::Executable::Compile(**module, device(0)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("exponential on f64"), absl::string_view::npos) << status;
  EXPECT_NE(status.message().find("%e"), absl::string_view::npos) << status;
}

TEST_F(ExecutableTest, SixtyFourBitTypesKeepTheirFullWidth) {
  // Values only 64 bits hold: 2^40-scale integers, f64 sums that f32 would round (1 + 1e-12),
  // saturating f64 -> s64 converts, shifts past 32, and a row reduction whose lanes exchange
  // 64-bit values through two 32-bit shuffles.
  ExpectMatchesReference(R"(
HloModule wide
%add (a: f64[], b: f64[]) -> f64[] {
  %a = f64[] parameter(0)
  %b = f64[] parameter(1)
  ROOT %s = f64[] add(%a, %b)
}
%max (a: s64[], b: s64[]) -> s64[] {
  %a = s64[] parameter(0)
  %b = s64[] parameter(1)
  ROOT %m = s64[] maximum(%a, %b)
}
ENTRY %main (x: f64[37,129], n: s64[37,129], u: u64[37,129]) -> (f64[37], s64[37], f64[37,129], s64[37,129], u64[37,129], s64[37,37]) {
  %x = f64[37,129] parameter(0)
  %n = s64[37,129] parameter(1)
  %u = u64[37,129] parameter(2)
  %tiny = f64[] constant(1e-12)
  %tinies = f64[37,129] broadcast(%tiny), dimensions={}
  %one = f64[] constant(1)
  %ones = f64[37,129] broadcast(%one), dimensions={}
  %bumped = f64[37,129] add(%ones, %tinies)
  %residue = f64[37,129] subtract(%bumped, %ones)
  %scaled = f64[37,129] multiply(%x, %residue)
  %zero = f64[] constant(0)
  %sums = f64[37] reduce(%scaled, %zero), dimensions={1}, to_apply=%add
  %big = f64[] constant(1e30)
  %bigs = f64[37,129] broadcast(%big), dimensions={}
  %huge = f64[37,129] multiply(%x, %bigs)
  %saturated = s64[37,129] convert(%huge)
  %forty = s64[] constant(40)
  %forties = s64[37,129] broadcast(%forty), dimensions={}
  %shifted = s64[37,129] shift-left(%n, %forties)
  %low = s64[] constant(-9223372036854775808)
  %maxima = s64[37] reduce(%shifted, %low), dimensions={1}, to_apply=%max
  %thirty_three = u64[] constant(33)
  %thirty_threes = u64[37,129] broadcast(%thirty_three), dimensions={}
  %product = u64[37,129] multiply(%u, %u)
  %high = u64[37,129] shift-right-logical(%product, %thirty_threes)
  %dot = s64[37,37] dot(%n, %shifted), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  ROOT %t = (f64[37], s64[37], f64[37,129], s64[37,129], u64[37,129], s64[37,37]) tuple(%sums, %maxima, %scaled, %saturated, %high, %dot)
}
)");
}

// A program that any device compiles, for tests of what surrounds it.
constexpr char kNegate[] = R"(
HloModule negate
ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %n = f32[4] negate(%x)
}
)";

TEST_F(ExecutableTest, WrongArgumentsAreErrors) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(kNegate);
  ASSERT_TRUE(module.ok());
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto executable, exec::Executable::Compile(**module, device(0)));
  EXPECT_EQ(executable->Run({}).status().code(), absl::StatusCode::kInvalidArgument);
  ir::Literal wrong(ir::Shape(ir::DType::kF32, {5}));
  absl::Status status = executable->Run({wrong}).status();
  EXPECT_NE(status.message().find("argument 0 is f32[5]"), absl::string_view::npos) << status;
}

// VKSPMD_MASKED_PART_INVOCATIONS=N sets TargetInfo::max_masked_part_invocations (2048 on CPU
// drivers, none on GPUs, 0: none); anything but a count fails the compile, naming the variable
// and the value.
// dynamic-slice and dynamic-update-slice clamp each start in its own type, as XLA and the CPU
// reference do: a u32 start of 2^31 + 5 and an s64 one of 2^32 + 1 both clamp to the last window
// (rows 7..9 of 10, columns 4..5 of 6), where converting them to int first made the u32 one
// negative (clamped to 0) and dropped the s64 one's high bits (1); an s64 start of -5 clamps to 0.
TEST_F(ExecutableTest, DynamicSliceStartsClampInTheirOwnType) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(R"(HloModule clamp
ENTRY e {
  x = f32[10,6] parameter(0)
  a = u32[] parameter(1)
  b = s64[] parameter(2)
  c = s64[] parameter(3)
  u = f32[2,2] parameter(4)
  ds = f32[3,2] dynamic-slice(x, a, b), dynamic_slice_sizes={3,2}
  dus = f32[10,6] dynamic-update-slice(x, u, a, c)
  ROOT t = (f32[3,2], f32[10,6]) tuple(ds, dus)
})");
  ASSERT_TRUE(module.ok()) << module.status();
  ir::Literal x(ir::Shape(ir::DType::kF32, {10, 6}));
  for (int64_t k = 0; k < 60; ++k) x.Set<float>(k, static_cast<float>(k));
  ir::Literal a(ir::Shape(ir::DType::kU32, {}));
  a.Set<uint32_t>(0, 2147483653u);
  ir::Literal b(ir::Shape(ir::DType::kS64, {}));
  b.Set<int64_t>(0, 4294967297);
  ir::Literal c(ir::Shape(ir::DType::kS64, {}));
  c.Set<int64_t>(0, -5);
  ir::Literal u(ir::Shape(ir::DType::kF32, {2, 2}));
  for (int64_t k = 0; k < 4; ++k) u.Set<float>(k, -1.0f - k);
  const std::vector<ir::Literal> arguments = {x, a, b, c, u};
  EXPECT_EQ(DeviceDiffersFromReference(**module, arguments, device(0), /*relative=*/0), "");
  // By hand: the slice is x[7..9, 4..5], the update lands at rows 8..9, columns 0..1.
  absl::StatusOr<DeviceAndReference> results =
      RunOnDeviceAndReference(**module, arguments, device(0));
  ASSERT_TRUE(results.ok()) << results.status();
  const ir::Literal& slice = results->device.tuple_elements()[0];
  const std::vector<float> expected_slice = {46, 47, 52, 53, 58, 59};
  for (int64_t k = 0; k < 6; ++k) EXPECT_EQ(slice.Get<float>(k), expected_slice[k]) << k;
  const ir::Literal& updated = results->device.tuple_elements()[1];
  EXPECT_EQ(updated.Get<float>(8 * 6 + 0), -1.0f);
  EXPECT_EQ(updated.Get<float>(9 * 6 + 1), -4.0f);
  EXPECT_EQ(updated.Get<float>(7 * 6 + 0), 42.0f);
}

// The numeric VKSPMD_* switches of TargetFor: a count sets the target's field, unset or empty
// keeps the default, and anything else fails Executable::Compile naming the variable and value.
struct NumericSwitch {
  const char* name;
  const char* unit;
  uint64_t (*field)(const codegen::TargetInfo&);
  friend void PrintTo(const NumericSwitch& variable, std::ostream* out) { *out << variable.name; }
};

class NumericSwitchTest : public DeviceTest, public ::testing::WithParamInterface<NumericSwitch> {
 protected:
  void SetUp() override { OpenDevices(1); }
  void TearDown() override { unsetenv(GetParam().name); }
};

TEST_P(NumericSwitchTest, ACountSetsTheTargetAndAnythingElseFailsTheCompile) {
  const NumericSwitch& variable = GetParam();
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(kNegate);
  ASSERT_TRUE(module.ok()) << module.status();
  unsetenv(variable.name);
  const uint64_t by_default = variable.field(exec::TargetFor(device(0)));
  for (const auto& [value, count] : std::vector<std::pair<const char*, uint64_t>>{
           {"0", 0}, {"4096", 4096}, {"4294967295", 4294967295u}, {"", by_default}}) {
    setenv(variable.name, value, 1);
    EXPECT_EQ(variable.field(exec::TargetFor(device(0))), count) << value;
    absl::Status status = exec::Executable::Compile(**module, device(0)).status();
    EXPECT_TRUE(status.ok()) << "'" << value << "': " << status;
  }
  for (const char* junk : {"lots", "-1", "1.5", "12k", "4294967296", " 12", "+5", "-"}) {
    setenv(variable.name, junk, 1);
    EXPECT_EQ(variable.field(exec::TargetFor(device(0))), by_default) << junk;
    absl::Status status = exec::Executable::Compile(**module, device(0)).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << junk << ": " << status;
    EXPECT_NE(status.message().find(absl::StrCat(variable.name, " must be a whole number of ",
                                                 variable.unit, " from 0 to 4294967295, not '",
                                                 junk, "'")),
              absl::string_view::npos)
        << status;
  }
}

TEST_F(ExecutableTest, LavapipeLimitsMaskedWorkAndCachesThirtyTwoRowValues) {
  if (!device(0).device().physical_device().is_cpu()) GTEST_SKIP() << "CPU drivers' defaults";
  const codegen::TargetInfo target = exec::TargetFor(device(0));
  EXPECT_EQ(target.max_masked_part_invocations, 2048u);
  EXPECT_EQ(target.row_cache_slots, 32u);
}

INSTANTIATE_TEST_SUITE_P(
    Switches, NumericSwitchTest,
    ::testing::Values(NumericSwitch{"VKSPMD_MASKED_PART_INVOCATIONS", "invocations",
                                    [](const codegen::TargetInfo& target) -> uint64_t {
                                      return target.max_masked_part_invocations;
                                    }},
                      NumericSwitch{"VKSPMD_ROW_CACHE_SLOTS", "slots",
                                    [](const codegen::TargetInfo& target) -> uint64_t {
                                      return target.row_cache_slots;
                                    }}),
    [](const ::testing::TestParamInfo<NumericSwitch>& switch_info) {
      return std::string(switch_info.param.name + 7);  // without "VKSPMD_"
    });

}  // namespace
}  // namespace vkspmd::testing
