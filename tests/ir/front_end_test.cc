// What XLA's front and back ends print beyond the IR's op set, read as IR ops: modules without a
// header line, module and instruction attributes, tiled and non-default layouts, fusion and call
// (inlined), async collective pairs, bitcast, map, copy-start/-done and optimization-barrier.
// Expected values are written out by hand.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "src/interp/evaluator.h"
#include "src/ir/parser.h"
#include "src/ir/printer.h"

namespace vkspmd::ir {
namespace {

std::unique_ptr<Module> Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? std::move(*module) : nullptr;
}

Literal F32(std::vector<int64_t> dimensions, std::vector<float> values) {
  return Literal::Create<float>(DType::kF32, std::move(dimensions), values);
}

std::vector<float> Values(const Literal& literal) {
  std::vector<float> values;
  for (int64_t i = 0; i < literal.ElementCount(); ++i) values.push_back(literal.Get<float>(i));
  return values;
}

// The entry's result on the CPU reference, as floats.
std::vector<float> Evaluated(const Module& module, const std::vector<Literal>& arguments) {
  absl::StatusOr<Literal> result = interp::Evaluate(module, arguments);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? Values(*result) : std::vector<float>{};
}

int CountOps(const Module& module, Opcode opcode) {
  int count = 0;
  for (const auto& instruction : module.entry()->instructions()) {
    count += instruction->opcode() == opcode ? 1 : 0;
  }
  return count;
}

TEST(FrontEndTest, ModuleWithoutHeaderLineIsNamedAfterItsEntry) {
  std::unique_ptr<Module> module = Parse(R"(
region_0.1 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT add = f32[] add(a, b)
}

ENTRY main.4 {
  x = f32[3]{0} parameter(0)
  zero = f32[] constant(0)
  ROOT sum = f32[] reduce(x, zero), dimensions={0}, to_apply=region_0.1
}
)");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(module->name(), "main.4");
  EXPECT_EQ(module->entry()->name(), "main.4");
  EXPECT_EQ(Evaluated(*module, {F32({3}, {1, 2, 4})}), std::vector<float>{7});
}

TEST(FrontEndTest, ModuleAndInstructionAttributesOfDumpsAreAccepted) {
  std::unique_ptr<Module> module = Parse(
      R"(HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[2,3]{1,0:T(8,128)})->f32[2,3]{1,0:T(8,128)}}, allow_spmd_sharding_propagation_to_output={true}, allow_spmd_sharding_propagation_to_parameters={false}, num_partitions=1, replica_count=1, frontend_attributes={xla.sdy.meshes="{mesh = #sdy.mesh<[\"x\"=1]>}"}

ENTRY %main.3 (Arg_0.1: f32[2,3]) -> f32[2,3] {
  %Arg_0.1 = f32[2,3]{1,0} parameter(0), sharding={replicated}, metadata={op_name="x"}
  ROOT %negate.2 = f32[2,3]{1,0} negate(f32[2,3]{1,0} %Arg_0.1), frontend_attributes={_xla_stream_annotation="1"}, metadata={op_name="jit(f)/jit(main)/neg" source_file="/tmp/f.py" source_line=3 deduplicated_name="fusion"}, backend_config={"operation_queue_id":"0","wait_on_operation_queues":[],"force_earliest_schedule":false}, sharding={replicated}
}
)");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(Evaluated(*module, {F32({2, 3}, {1, -2, 3, -4, 5, -6})}),
            (std::vector<float>{-1, 2, -3, 4, -5, 6}));
}

TEST(FrontEndTest, TiledAndAnnotatedLayoutsAndNonDefaultOrdersKeepLogicalValues) {
  // Values are logical in HLO: a layout says how bytes are placed, never which element is which.
  std::unique_ptr<Module> module = Parse(R"(HloModule m
ENTRY e {
  p = f32[2,3]{1,0:T(8,128)(2,1)S(1)} parameter(0)
  q = f32[2,3]{0,1} parameter(1)
  s = f32[]{:T(128)} constant(10)
  b = f32[2,3]{1,0:T(2,128)E(32)L(s32)D(D,D)} broadcast(s), dimensions={}
  a = f32[2,3]{1,0:T(8,128)} add(p, q)
  ROOT r = f32[2,3]{1,0:#(f32[2,3]{1,0})} add(a, b)
}
)");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(
      Evaluated(*module, {F32({2, 3}, {1, 2, 3, 4, 5, 6}), F32({2, 3}, {10, 20, 30, 40, 50, 60})}),
      (std::vector<float>{21, 32, 43, 54, 65, 76}));
}

constexpr char kFusions[] = R"(HloModule m, is_scheduled=true

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

%inner (p0: f32[2,3], p1: f32[2,3]) -> f32[2,3] {
  %p0 = f32[2,3]{1,0} parameter(0)
  %p1 = f32[2,3]{1,0} parameter(1)
  ROOT %sub = f32[2,3]{1,0} subtract(f32[2,3]{1,0} %p0, f32[2,3]{1,0} %p1)
}

%fused_computation (param_0: f32[2,3], param_1: f32[2,3]) -> (f32[2], f32[2,3]) {
  %param_1 = f32[2,3]{1,0} parameter(1)
  %param_0 = f32[2,3]{1,0} parameter(0)
  %nested = f32[2,3]{1,0} fusion(f32[2,3]{1,0} %param_0, f32[2,3]{1,0} %param_1), kind=kLoop, calls=%inner
  %zero = f32[] constant(0)
  %row_sums = f32[2]{0} reduce(f32[2,3]{1,0} %nested, f32[] %zero), dimensions={1}, to_apply=%add
  ROOT %tuple = (f32[2]{0}, f32[2,3]{1,0}) tuple(f32[2]{0} %row_sums, f32[2,3]{1,0} %nested)
}

%passthrough (param_0.1: f32[2,3]) -> f32[2,3] {
  ROOT %param_0.1 = f32[2,3]{1,0} parameter(0)
}

ENTRY %main (x: f32[2,3], y: f32[2,3]) -> (f32[2], f32[2,3], f32[2,3]) {
  %x = f32[2,3]{1,0} parameter(0), sharding={devices=[2,1]0,1}
  %y = f32[2,3]{1,0} parameter(1)
  %fusion = (f32[2]{0}, f32[2,3]{1,0}) fusion(f32[2,3]{1,0} %x, f32[2,3]{1,0} %y), kind=kInput, calls=%fused_computation
  %get-tuple-element = f32[2]{0} get-tuple-element((f32[2]{0}, f32[2,3]{1,0}) %fusion), index=0, sharding={devices=[2]0,1}
  %get-tuple-element.1 = f32[2,3]{1,0} get-tuple-element((f32[2]{0}, f32[2,3]{1,0}) %fusion), index=1
  %fusion.1 = f32[2,3]{1,0} fusion(f32[2,3]{1,0} %x), kind=kCustom, calls=%passthrough, sharding={replicated}
  ROOT %tuple.1 = (f32[2]{0}, f32[2,3]{1,0}, f32[2,3]{1,0}) tuple(f32[2]{0} %get-tuple-element, f32[2,3]{1,0} %get-tuple-element.1, f32[2,3]{1,0} %fusion.1)
}
)";

TEST(FrontEndTest, FusionsAreInlinedRecursivelyWithParametersMappedAndShardingsKept) {
  std::unique_ptr<Module> module = Parse(kFusions);
  ASSERT_NE(module, nullptr);
  // Only the entry and the reducer are left: the fused computations were inlined.
  ASSERT_EQ(module->computations().size(), 2u);
  EXPECT_EQ(module->computations()[0]->name(), "add");
  EXPECT_EQ(CountOps(*module, Opcode::kTuple), 1) << "the fusion's tuple is read through";
  EXPECT_EQ(CountOps(*module, Opcode::kGetTupleElement), 0);
  const Instruction* root = module->entry()->root();
  ASSERT_EQ(root->opcode(), Opcode::kTuple);
  // The reduce got the get-tuple-element's sharding; the pass-through fusion's sharding lands on
  // a copy, leaving %x's own sharding alone.
  EXPECT_EQ(root->operand(0)->opcode(), Opcode::kReduce);
  ASSERT_TRUE(root->operand(0)->sharding().has_value());
  EXPECT_EQ(root->operand(0)->sharding()->ToString(), "{devices=[2]0,1}");
  EXPECT_EQ(root->operand(1)->opcode(), Opcode::kSubtract);
  const Instruction* copy = root->operand(2);
  EXPECT_EQ(copy->opcode(), Opcode::kCopy);
  ASSERT_TRUE(copy->sharding().has_value());
  EXPECT_EQ(copy->sharding()->ToString(), "{replicated}");
  EXPECT_EQ(copy->operand(0)->sharding()->ToString(), "{devices=[2,1]0,1}");

  absl::StatusOr<Literal> result = interp::Evaluate(
      *module, {F32({2, 3}, {10, 20, 30, 40, 50, 60}), F32({2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(Values(result->tuple_elements()[0]), (std::vector<float>{54, 135}));
  EXPECT_EQ(Values(result->tuple_elements()[1]), (std::vector<float>{9, 18, 27, 36, 45, 54}));
  EXPECT_EQ(Values(result->tuple_elements()[2]), (std::vector<float>{10, 20, 30, 40, 50, 60}));

  // The printed module reads back as the same program.
  const std::string printed = PrintModule(*module);
  EXPECT_EQ(printed.find(" fusion("), std::string::npos) << printed;
  std::unique_ptr<Module> reparsed = Parse(printed);
  ASSERT_NE(reparsed, nullptr);
  EXPECT_EQ(PrintModule(*reparsed), printed);
}

TEST(FrontEndTest, CallsAreInlinedWithParametersInTheirOrderAndNamesKeptUnique) {
  std::unique_ptr<Module> module = Parse(R"(HloModule jit_f
diff.1 {
  Arg_0.2 = f32[3]{0} parameter(0)
  Arg_1.3 = f32[3]{0} parameter(1)
  ROOT subtract.4 = f32[3]{0} subtract(Arg_1.3, Arg_0.2)
}
twice.5 {
  Arg_0.6 = f32[3]{0} parameter(0)
  call.7 = f32[3]{0} call(Arg_0.6, Arg_0.6), to_apply=diff.1
  ROOT add.8 = f32[3]{0} add(Arg_0.6, Arg_0.6)
}
ENTRY main.9 {
  Arg_0.1 = f32[3]{0} parameter(0)
  Arg_1.2 = f32[3]{0} parameter(1)
  call.10 = f32[3]{0} call(Arg_0.1, Arg_1.2), to_apply=diff.1
  call.11 = f32[3]{0} call(call.10), to_apply=twice.5
  subtract.4 = f32[3]{0} negate(call.11)
  ROOT call.12 = f32[3]{0} call(subtract.4, Arg_0.1), to_apply=diff.1
}
)");
  ASSERT_NE(module, nullptr);
  // y - x = {9, 18, 27}; twice: {18, 36, 54}; negate: {-18, -36, -54}; x - that.
  EXPECT_EQ(Evaluated(*module, {F32({3}, {1, 2, 3}), F32({3}, {10, 20, 30})}),
            (std::vector<float>{19, 38, 57}));
  std::vector<std::string> names;
  for (const auto& instruction : module->entry()->instructions()) {
    for (const std::string& seen : names) EXPECT_NE(seen, instruction->name());
    names.push_back(instruction->name());
  }
  EXPECT_EQ(module->computations().size(), 1u);
}

TEST(FrontEndTest, AsyncCollectivePairsReadAsTheirSynchronousForms) {
  std::unique_ptr<Module> module = Parse(R"(HloModule jit_f, is_scheduled=true, num_partitions=2

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

%async_computation (param_0: f32[4]) -> f32[2] {
  %param_0 = f32[4]{0} parameter(0)
  ROOT %reduce-scatter = f32[2]{0} reduce-scatter(f32[4]{0} %param_0), channel_id=4, replica_groups={{0,1}}, use_global_device_ids=true, dimensions={0}, to_apply=%add
}

ENTRY %main (x: f32[4]) -> (f32[4], f32[8], f32[4], f32[2], f32[4]) {
  %x = f32[4]{0} parameter(0)
  %all-reduce-start = f32[4]{0} all-reduce-start(f32[4]{0} %x), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add, backend_config={"collective_backend_config":{"is_sync":false}}
  %all-reduce-done = f32[4]{0} all-reduce-done(f32[4]{0} %all-reduce-start)
  %all-gather-start = (f32[4]{0}, f32[8]{0}) all-gather-start(f32[4]{0} %x), channel_id=2, replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true
  %all-gather-done = f32[8]{0} all-gather-done((f32[4]{0}, f32[8]{0}) %all-gather-start)
  %collective-permute-start = (f32[4]{0}, f32[4]{0}, u32[]{:S(2)}, u32[]{:S(2)}) collective-permute-start(f32[4]{0} %x), channel_id=3, source_target_pairs={{0,1},{1,0}}
  %collective-permute-done = f32[4]{0} collective-permute-done((f32[4]{0}, f32[4]{0}, u32[], u32[]) %collective-permute-start)
  %reduce-scatter-start = ((f32[4]{0}), f32[2]{0}) async-start(f32[4]{0} %x), calls=%async_computation
  %reduce-scatter-done = f32[2]{0} async-done(((f32[4]{0}), f32[2]{0}) %reduce-scatter-start)
  %copy-start = (f32[4]{0:S(1)}, f32[4]{0}, u32[]) copy-start(f32[4]{0} %x)
  %copy-done = f32[4]{0:S(1)} copy-done((f32[4]{0:S(1)}, f32[4]{0}, u32[]) %copy-start)
  ROOT %tuple = (f32[4]{0}, f32[8]{0}, f32[4]{0}, f32[2]{0}, f32[4]{0}) tuple(%all-reduce-done, %all-gather-done, %collective-permute-done, %reduce-scatter-done, %copy-done)
}
)");
  ASSERT_NE(module, nullptr);
  const std::string printed = PrintModule(*module);
  for (const char* op :
       {" all-reduce(", " all-gather(", " collective-permute(", " reduce-scatter(", " copy("}) {
    EXPECT_NE(printed.find(op), std::string::npos) << op << " missing from\n" << printed;
  }
  for (const char* op : {"-start(", "-done(", "async-"}) {
    EXPECT_EQ(printed.find(op), std::string::npos) << op << " left in\n" << printed;
  }
  absl::StatusOr<std::vector<Literal>> results =
      interp::EvaluateOnDevices(*module, {{F32({4}, {1, 2, 3, 4})}, {F32({4}, {10, 20, 30, 40})}});
  ASSERT_TRUE(results.ok()) << results.status();
  const Literal& device1 = (*results)[1];
  EXPECT_EQ(Values(device1.tuple_elements()[0]), (std::vector<float>{11, 22, 33, 44}));
  EXPECT_EQ(Values(device1.tuple_elements()[1]), (std::vector<float>{1, 2, 3, 4, 10, 20, 30, 40}));
  EXPECT_EQ(Values(device1.tuple_elements()[2]), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(Values(device1.tuple_elements()[3]), (std::vector<float>{33, 44}));
  EXPECT_EQ(Values(device1.tuple_elements()[4]), (std::vector<float>{10, 20, 30, 40}));
}

TEST(FrontEndTest, BitcastsBecomeReshapesAndTransposesFromTheirLayouts) {
  std::unique_ptr<Module> module = Parse(R"(HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  flat = f32[6]{0} bitcast(p)
  same = f32[2,3]{1,0} bitcast(p)
  column_major = f32[3,2]{0,1} bitcast(p)
  back = f32[3,2]{1,0} copy(column_major)
  flat2 = f32[6]{0} bitcast(back)
  ROOT t = (f32[6]{0}, f32[2,3]{1,0}, f32[6]{0}) tuple(flat, same, flat2)
}
)");
  ASSERT_NE(module, nullptr);
  // The bytes of p in a column-major [3,2] are its transpose.
  absl::StatusOr<Literal> result = interp::Evaluate(*module, {F32({2, 3}, {0, 1, 2, 3, 4, 5})});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(Values(result->tuple_elements()[0]), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(Values(result->tuple_elements()[1]), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(Values(result->tuple_elements()[2]), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(CountOps(*module, Opcode::kTranspose), 1);
}

TEST(FrontEndTest, RankThreeBitcastReadsThePhysicalOrder) {
  // f32[4,2,3]{0,2,1} is laid out major-to-minor as dims 1, 2, 0, i.e. [2,3,4]: the bytes of a
  // row-major [2,3,4] p, so result[i,j,k] = p[j,k,i] (NumPy: p.transpose(2, 0, 1)).
  std::unique_ptr<Module> module = Parse(R"(HloModule m
ENTRY e {
  p = f32[2,3,4]{2,1,0} parameter(0)
  ROOT b = f32[4,2,3]{0,2,1} bitcast(p)
}
)");
  ASSERT_NE(module, nullptr);
  std::vector<float> iota(24);
  for (int i = 0; i < 24; ++i) iota[i] = static_cast<float>(i);
  EXPECT_EQ(Evaluated(*module, {F32({2, 3, 4}, iota)}),
            (std::vector<float>{0, 4, 8,  12, 16, 20, 1, 5, 9,  13, 17, 21,
                                2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23}));
}

TEST(FrontEndTest, MapExpandsItsScalarComputationElementwise) {
  std::unique_ptr<Module> module = Parse(R"(HloModule m
fma {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  one = f32[] constant(1)
  m = f32[] multiply(a, b)
  big = pred[] compare(m, one), direction=GT
  sum = f32[] add(m, one)
  ROOT r = f32[] select(big, sum, a)
}
ENTRY e {
  x = f32[2,2]{1,0} parameter(0)
  y = f32[2,2]{1,0} parameter(1)
  ROOT mapped = f32[2,2]{1,0} map(x, y), dimensions={0,1}, to_apply=fma
}
)");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(Evaluated(*module, {F32({2, 2}, {1, 2, 3, -4}), F32({2, 2}, {0.5, 3, 4, 5})}),
            (std::vector<float>{1, 7, 13, -4}));
}

TEST(FrontEndTest, OptimizationBarrierIsItsOperand) {
  std::unique_ptr<Module> module = Parse(R"(HloModule m
ENTRY e {
  x = f32[2]{0} parameter(0)
  y = f32[2]{0} parameter(1)
  t = (f32[2]{0}, f32[2]{0}) tuple(x, y)
  b = (f32[2]{0}, f32[2]{0}) opt-barrier(t)
  g0 = f32[2]{0} get-tuple-element(b), index=0
  g1 = f32[2]{0} get-tuple-element(b), index=1
  ROOT s = f32[2]{0} subtract(g0, g1)
}
)");
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(Evaluated(*module, {F32({2}, {5, 7}), F32({2}, {1, 2})}), (std::vector<float>{4, 5}));
}

}  // namespace
}  // namespace vkspmd::ir
