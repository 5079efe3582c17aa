// Program texts of the equivalence matrix.
#include "tests/spmd/programs.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "fmt/format.h"

namespace vkspmd::spmd::testing {
namespace {

constexpr char kReducers[] = R"(
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %a, f32[] %b)
}

%argmax (a_value: f32[], a_index: s32[], b_value: f32[], b_index: s32[]) -> (f32[], s32[]) {
  %a_value = f32[] parameter(0)
  %a_index = s32[] parameter(1)
  %b_value = f32[] parameter(2)
  %b_index = s32[] parameter(3)
  %greater = pred[] compare(f32[] %a_value, f32[] %b_value), direction=GE
  %value = f32[] select(pred[] %greater, f32[] %a_value, f32[] %b_value)
  %index = s32[] select(pred[] %greater, s32[] %a_index, s32[] %b_index)
  ROOT %result = (f32[], s32[]) tuple(f32[] %value, s32[] %index)
}
)";

using Configs = std::vector<std::map<std::string, std::string>>;

// x[a,b] -> op(x); shardings of x.
Program Unary(const std::string& op) {
  return {"unary_" + op,
          "ENTRY %main (x: f32[$a,$b]) -> f32[$a,$b] {\n  %x = f32[$a,$b] parameter(0)\n"
          "  ROOT %r = f32[$a,$b] " +
              op + "(f32[$a,$b] %x)\n}\n",
          {{{"x", "(0, None)"}}, {{"x", "(None, (1, 0))"}}, {{"x", "(1, 2)"}}}};
}

Program Binary(const std::string& op) {
  return {"binary_" + op,
          "ENTRY %main (x: f32[$a,$b], y: f32[$a,$b]) -> f32[$a,$b] {\n"
          "  %x = f32[$a,$b] parameter(0)\n  %y = f32[$a,$b] parameter(1)\n"
          "  ROOT %r = f32[$a,$b] " +
              op + "(f32[$a,$b] %x, f32[$a,$b] %y)\n}\n",
          {{{"x", "(0, 1)"}, {"y", "(0, 1)"}},
           {{"x", "(0, None)"}, {"y", "(None, 0)"}},
           {{"x", "(1, 0)"}}}};
}

std::vector<Program> OpPrograms() {
  std::vector<Program> programs;
  for (const char* op : {"negate", "abs", "exponential", "tanh", "logistic", "floor"}) {
    programs.push_back(Unary(op));
  }
  for (const char* op : {"add", "subtract", "multiply", "divide", "maximum", "atan2"}) {
    programs.push_back(Binary(op));
  }
  programs.push_back({"compare_select",
                      R"(ENTRY %main (x: f32[$a,$b], y: f32[$a,$b]) -> f32[$a,$b] {
  %x = f32[$a,$b] parameter(0)
  %y = f32[$a,$b] parameter(1)
  %p = pred[$a,$b] compare(f32[$a,$b] %x, f32[$a,$b] %y), direction=GT
  ROOT %r = f32[$a,$b] select(pred[$a,$b] %p, f32[$a,$b] %x, f32[$a,$b] %y)
})",
                      {{{"x", "(0, 1)"}}, {{"x", "(0, None)"}, {"y", "(None, 1)"}}}});
  programs.push_back({"clamp",
                      R"(ENTRY %main (x: f32[$a,$b]) -> f32[$a,$b] {
  %x = f32[$a,$b] parameter(0)
  %lo = f32[] constant(-0.5)
  %hi = f32[] constant(0.75)
  ROOT %r = f32[$a,$b] clamp(f32[] %lo, f32[$a,$b] %x, f32[] %hi)
})",
                      {{{"x", "(0, 1)"}}, {{"r", "(None, 0)"}}}});
  programs.push_back({"convert",
                      R"(ENTRY %main (x: f32[$a,$b]) -> s32[$a,$b] {
  %x = f32[$a,$b] parameter(0)
  %ten = f32[] constant(10)
  %tens = f32[$a,$b] broadcast(f32[] %ten), dimensions={}
  %scaled = f32[$a,$b] multiply(f32[$a,$b] %x, f32[$a,$b] %tens)
  ROOT %r = s32[$a,$b] convert(f32[$a,$b] %scaled)
})",
                      {{{"x", "(1, 0)"}}, {{"r", "(0, None)"}}}});
  programs.push_back(
      {"integer_ops",
       R"(ENTRY %main (x: s32[$a,$b], y: s32[$a,$b]) -> s32[$a,$b] {
  %x = s32[$a,$b] parameter(0)
  %y = s32[$a,$b] parameter(1)
  %and = s32[$a,$b] and(s32[$a,$b] %x, s32[$a,$b] %y)
  %xor = s32[$a,$b] xor(s32[$a,$b] %and, s32[$a,$b] %x)
  ROOT %r = s32[$a,$b] maximum(s32[$a,$b] %xor, s32[$a,$b] %y)
})",
       {{{"x", "(0, 1)"}, {"y", "(0, 1)"}}, {{"x", "(0, None)"}, {"y", "(1, None)"}}}});
  programs.push_back({"broadcast",
                      R"(ENTRY %main (x: f32[$a,$b], v: f32[$b]) -> f32[$a,$b] {
  %x = f32[$a,$b] parameter(0)
  %v = f32[$b] parameter(1)
  %bv = f32[$a,$b] broadcast(f32[$b] %v), dimensions={1}
  ROOT %r = f32[$a,$b] add(f32[$a,$b] %x, f32[$a,$b] %bv)
})",
                      {{{"x", "(0, 1)"}}, {{"v", "(0,)"}}, {{"v", "(0,)"}, {"x", "(1, None)"}}}});
  programs.push_back({"transpose",
                      R"(ENTRY %main (x: f32[$a,$b], y: f32[$b,$a]) -> f32[$b,$a] {
  %x = f32[$a,$b] parameter(0)
  %y = f32[$b,$a] parameter(1)
  %t = f32[$b,$a] transpose(f32[$a,$b] %x), dimensions={1,0}
  ROOT %r = f32[$b,$a] add(f32[$b,$a] %t, f32[$b,$a] %y)
})",
                      {{{"x", "(0, 1)"}}, {{"x", "(0, None)"}, {"y", "(0, None)"}}}});
  programs.push_back({"reshape_merge",
                      R"(ENTRY %main (x: f32[$a,$b]) -> f32[$ab] {
  %x = f32[$a,$b] parameter(0)
  ROOT %r = f32[$ab] reshape(f32[$a,$b] %x)
})",
                      {{{"x", "(0, None)"}}, {{"x", "(None, 0)"}}, {{"x", "((0, 1), None)"}}}});
  programs.push_back({"reshape_split",
                      R"(ENTRY %main (x: f32[$a4]) -> f32[4,$a] {
  %x = f32[$a4] parameter(0)
  %r0 = f32[4,$a] reshape(f32[$a4] %x)
  ROOT %r = f32[4,$a] negate(f32[4,$a] %r0)
})",
                      {{{"x", "(0,)"}}, {{"r", "(None, 0)"}}}});
  programs.push_back({"reshape_chain",
                      R"(ENTRY %main (x: f32[$a,$b2]) -> f32[$b,$a] {
  %x = f32[$a,$b2] parameter(0)
  %split = f32[$a,2,$b] reshape(f32[$a,$b2] %x)
  %t = f32[2,$b,$a] transpose(f32[$a,2,$b] %split), dimensions={1,2,0}
  %merged = f32[$b2,$a] reshape(f32[2,$b,$a] %t)
  %e = f32[$b2,$a] exponential(f32[$b2,$a] %merged)
  ROOT %r = f32[$b,$a] slice(f32[$b2,$a] %e), slice={[0:$b], [0:$a]}
})",
                      {{{"x", "(0, None)"}}, {{"x", "(None, 0)"}}, {{"x", "(1, 0)"}}}});
  programs.push_back({"slice",
                      R"(ENTRY %main (x: f32[$a,$b]) -> f32[$am2,$bh] {
  %x = f32[$a,$b] parameter(0)
  ROOT %r = f32[$am2,$bh] slice(f32[$a,$b] %x), slice={[1:$am1], [0:$b:2]}
})",
                      {{{"x", "(0, 1)"}}, {{"x", "(None, 0)"}}}});
  programs.push_back({"concatenate",
                      R"(ENTRY %main (x: f32[$a,$b], y: f32[$a,$c]) -> f32[$a,$bc] {
  %x = f32[$a,$b] parameter(0)
  %y = f32[$a,$c] parameter(1)
  ROOT %r = f32[$a,$bc] concatenate(f32[$a,$b] %x, f32[$a,$c] %y), dimensions={1}
})",
                      {{{"x", "(0, 1)"}, {"y", "(0, 1)"}}, {{"x", "(1, None)"}}}});
  programs.push_back({"pad",
                      R"(ENTRY %main (x: f32[$a,$b]) -> f32[$a3,$b2] {
  %x = f32[$a,$b] parameter(0)
  %zero = f32[] constant(0)
  ROOT %r = f32[$a3,$b2] pad(f32[$a,$b] %x, f32[] %zero), padding=1_2x0_1_1
})",
                      {{{"x", "(0, 1)"}}, {{"x", "(None, 0)"}}}});
  programs.push_back({"reverse",
                      R"(ENTRY %main (x: f32[$a,$b]) -> f32[$a,$b] {
  %x = f32[$a,$b] parameter(0)
  ROOT %r = f32[$a,$b] reverse(f32[$a,$b] %x), dimensions={0}
})",
                      {{{"x", "(0, 1)"}}, {{"x", "(1, 0)"}}}});
  programs.push_back({"dynamic_slice",
                      R"(ENTRY %main (x: f32[$a,$b], i: s32[]) -> f32[2,$b] {
  %x = f32[$a,$b] parameter(0)
  %i = s32[] parameter(1)
  %zero = s32[] constant(0)
  ROOT %r = f32[2,$b] dynamic-slice(f32[$a,$b] %x, s32[] %i, s32[] %zero), dynamic_slice_sizes={2,$b}
})",
                      {{{"x", "(0, 1)"}}, {{"x", "(1, 0)"}}}});
  // A constant start on one dim and a run-time one on the other: masked on both.
  programs.push_back({"dynamic_slice_mixed",
                      R"(ENTRY %main (x: f32[$a,$b], j: s32[]) -> f32[3,2] {
  %x = f32[$a,$b] parameter(0)
  %j = s32[] parameter(1)
  %i = s32[] constant(2)
  ROOT %r = f32[3,2] dynamic-slice(f32[$a,$b] %x, s32[] %i, s32[] %j), dynamic_slice_sizes={3,2}
})",
                      {{{"x", "(0, 1)"}}, {{"x", "(1, 0)"}, {"r", "(0, None)"}}}});
  programs.push_back({"dynamic_update_slice",
                      R"(ENTRY %main (x: f32[$a,$b], u: f32[2,$b], i: s32[]) -> f32[$a,$b] {
  %x = f32[$a,$b] parameter(0)
  %u = f32[2,$b] parameter(1)
  %i = s32[] parameter(2)
  %zero = s32[] constant(0)
  ROOT %r = f32[$a,$b] dynamic-update-slice(f32[$a,$b] %x, f32[2,$b] %u, s32[] %i, s32[] %zero)
})",
                      {{{"x", "(0, 1)"}, {"u", "(None, 1)"}}, {{"x", "(1, 0)"}}}});
  // Constant starts beyond both ends (XLA clamps them to the last rows and the first columns),
  // and run-time starts on both dims: each device writes the part of the update in its shard.
  programs.push_back({"dynamic_update_slice_clamped",
                      R"(ENTRY %main (x: f32[$a,$b], u: f32[3,2]) -> f32[$a,$b] {
  %x = f32[$a,$b] parameter(0)
  %u = f32[3,2] parameter(1)
  %i = s32[] constant(100)
  %j = s32[] constant(-4)
  ROOT %r = f32[$a,$b] dynamic-update-slice(f32[$a,$b] %x, f32[3,2] %u, s32[] %i, s32[] %j)
})",
                      {{{"x", "(0, 1)"}}, {{"x", "(1, 0)"}, {"u", "(0, None)"}}}});
  programs.push_back(
      {"dynamic_update_slice_2d",
       R"(ENTRY %main (x: f32[$a,$b], u: f32[3,2], i: s32[], j: s32[]) -> f32[$a,$b] {
  %x = f32[$a,$b] parameter(0)
  %u = f32[3,2] parameter(1)
  %i = s32[] parameter(2)
  %j = s32[] parameter(3)
  %one = s32[] constant(1)
  %k = s32[] add(s32[] %i, s32[] %one)
  ROOT %r = f32[$a,$b] dynamic-update-slice(f32[$a,$b] %x, f32[3,2] %u, s32[] %k, s32[] %j)
})",
       {{{"x", "(0, 1)"}, {"r", "(0, 1)"}}, {{"x", "((0, 1), None)"}}}});
  programs.push_back({"iota",
                      R"(ENTRY %main (x: f32[$a,$b]) -> f32[$a,$b] {
  %x = f32[$a,$b] parameter(0)
  %rows = f32[$a,$b] iota(), iota_dimension=0
  %cols = s32[$a,$b] iota(), iota_dimension=1
  %colsf = f32[$a,$b] convert(s32[$a,$b] %cols)
  %sum = f32[$a,$b] add(f32[$a,$b] %rows, f32[$a,$b] %colsf)
  ROOT %r = f32[$a,$b] multiply(f32[$a,$b] %sum, f32[$a,$b] %x)
})",
                      {{{"x", "(0, 1)"}}, {{"x", "(1, 0)"}}}});
  programs.push_back({"constant",
                      R"(ENTRY %main (x: f32[$a,$b]) -> f32[$a,$b] {
  %x = f32[$a,$b] parameter(0)
  %c = f32[$b] constant($bconst)
  %bc = f32[$a,$b] broadcast(f32[$b] %c), dimensions={1}
  ROOT %r = f32[$a,$b] add(f32[$a,$b] %x, f32[$a,$b] %bc)
})",
                      {{{"x", "(0, 1)"}}, {{"c", "(0,)"}}}});
  return programs;
}

std::vector<Program> ContractionPrograms() {
  std::vector<Program> programs;
  programs.push_back({"dot_matmul",
                      R"(ENTRY %main (x: f32[$a,$b], w: f32[$b,$c]) -> f32[$a,$c] {
  %x = f32[$a,$b] parameter(0)
  %w = f32[$b,$c] parameter(1)
  ROOT %r = f32[$a,$c] dot(f32[$a,$b] %x, f32[$b,$c] %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
                      {{{"x", "(0, None)"}},
                       {{"x", "(None, 0)"}, {"w", "(0, 1)"}},
                       {{"x", "(0, 1)"}, {"w", "(1, None)"}},
                       {{"w", "(None, 0)"}, {"r", "(0, None)"}}}});
  programs.push_back(
      {"dot_batch",
       R"(ENTRY %main (x: f32[2,$a,$b], y: f32[2,$b,$c]) -> f32[2,$a,$c] {
  %x = f32[2,$a,$b] parameter(0)
  %y = f32[2,$b,$c] parameter(1)
  ROOT %r = f32[2,$a,$c] dot(f32[2,$a,$b] %x, f32[2,$b,$c] %y), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
})",
       {{{"x", "(0, 1, None)"}}, {{"x", "(None, None, 0)"}, {"y", "(None, 0, 1)"}}}});
  programs.push_back({"dot_matvec",
                      R"(ENTRY %main (w: f32[$a,$b], v: f32[$b]) -> f32[$a] {
  %w = f32[$a,$b] parameter(0)
  %v = f32[$b] parameter(1)
  ROOT %r = f32[$a] dot(f32[$a,$b] %w, f32[$b] %v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
                      {{{"w", "(0, 1)"}}, {{"v", "(0,)"}}}});
  programs.push_back({"reduce_sum",
                      R"(ENTRY %main (x: f32[$a,$b]) -> f32[$a] {
  %x = f32[$a,$b] parameter(0)
  %zero = f32[] constant(0)
  ROOT %r = f32[$a] reduce(f32[$a,$b] %x, f32[] %zero), dimensions={1}, to_apply=%add
})",
                      {{{"x", "(0, 1)"}}, {{"x", "(1, 0)"}}, {{"x", "((0, 1), None)"}}}});
  programs.push_back({"reduce_max",
                      R"(ENTRY %main (x: f32[$a,$b]) -> f32[$b] {
  %x = f32[$a,$b] parameter(0)
  %init = f32[] constant(-inf)
  ROOT %r = f32[$b] reduce(f32[$a,$b] %x, f32[] %init), dimensions={0}, to_apply=%max
})",
                      {{{"x", "(0, 1)"}}, {{"x", "((1, 0), None)"}}}});
  programs.push_back({"reduce_all",
                      R"(ENTRY %main (x: f32[$a,$b]) -> f32[] {
  %x = f32[$a,$b] parameter(0)
  %zero = f32[] constant(0)
  ROOT %r = f32[] reduce(f32[$a,$b] %x, f32[] %zero), dimensions={0,1}, to_apply=%add
})",
                      {{{"x", "(0, 1)"}}, {{"x", "(None, (0, 1, 2))"}}}});
  programs.push_back({"argmax",
                      R"(ENTRY %main (x: f32[$a,$b]) -> (f32[$a], s32[$a]) {
  %x = f32[$a,$b] parameter(0)
  %iota = s32[$a,$b] iota(), iota_dimension=1
  %init_value = f32[] constant(-inf)
  %init_index = s32[] constant(0)
  ROOT %r = (f32[$a], s32[$a]) reduce(f32[$a,$b] %x, s32[$a,$b] %iota, f32[] %init_value, s32[] %init_index), dimensions={1}, to_apply=%argmax
})",
                      {{{"x", "(0, 1)"}}, {{"x", "(1, 0)"}}}});
  programs.push_back({"rng_bit_generator",
                      R"(ENTRY %main (x: f32[$a,$b]) -> u32[$a,$b] {
  %x = f32[$a,$b] parameter(0)
  %state = u64[2] constant({7, 9})
  %rng = (u64[2], u32[$a,$b]) rng-bit-generator(u64[2] %state), algorithm=rng_philox
  ROOT %bits = u32[$a,$b] get-tuple-element((u64[2], u32[$a,$b]) %rng), index=1
})",
                      {{{"bits", "(0, 1)"}}}});
  programs.push_back({"tuple",
                      R"(ENTRY %main (x: f32[$a,$b], y: f32[$a,$b]) -> (f32[$a,$b], f32[$a,$b]) {
  %x = f32[$a,$b] parameter(0)
  %y = f32[$a,$b] parameter(1)
  %t = (f32[$a,$b], f32[$a,$b]) tuple(f32[$a,$b] %x, f32[$a,$b] %y)
  %first = f32[$a,$b] get-tuple-element((f32[$a,$b], f32[$a,$b]) %t), index=0
  %second = f32[$a,$b] get-tuple-element((f32[$a,$b], f32[$a,$b]) %t), index=1
  %sum = f32[$a,$b] add(f32[$a,$b] %first, f32[$a,$b] %second)
  ROOT %r = (f32[$a,$b], f32[$a,$b]) tuple(f32[$a,$b] %sum, f32[$a,$b] %x)
})",
                      {{{"x", "(0, 1)"}, {"y", "(1, 0)"}}, {{"x", "(0, None)"}}}});
  programs.push_back({"tuple_parameter",
                      R"(ENTRY %main (t: (f32[$a,$b], f32[$b])) -> f32[$a,$b] {
  %t = (f32[$a,$b], f32[$b]) parameter(0)
  %m = f32[$a,$b] get-tuple-element((f32[$a,$b], f32[$b]) %t), index=0
  %v = f32[$b] get-tuple-element((f32[$a,$b], f32[$b]) %t), index=1
  %bv = f32[$a,$b] broadcast(f32[$b] %v), dimensions={1}
  ROOT %r = f32[$a,$b] multiply(f32[$a,$b] %m, f32[$a,$b] %bv)
})",
                      {{{"m", "(0, 1)"}}, {{"r", "(1, 0)"}}}});
  return programs;
}

std::vector<Program> ModelPrograms() {
  std::vector<Program> programs;
  programs.push_back({"elementwise_chain",
                      R"(ENTRY %main (x: f32[$a,$b], y: f32[$a,$b]) -> f32[$a,$b] {
  %x = f32[$a,$b] parameter(0)
  %y = f32[$a,$b] parameter(1)
  %e = f32[$a,$b] exponential(f32[$a,$b] %x)
  %m = f32[$a,$b] multiply(f32[$a,$b] %x, f32[$a,$b] %y)
  %t = f32[$a,$b] tanh(f32[$a,$b] %m)
  ROOT %r = f32[$a,$b] add(f32[$a,$b] %e, f32[$a,$b] %t)
})",
                      {{{"x", "(0, 1)"}, {"y", "(0, 1)"}}, {{"x", "((0, 1), None)"}}}});
  programs.push_back({"softmax",
                      R"(ENTRY %main (x: f32[$a,$b]) -> f32[$a,$b] {
  %x = f32[$a,$b] parameter(0)
  %neg_inf = f32[] constant(-inf)
  %row_max = f32[$a] reduce(f32[$a,$b] %x, f32[] %neg_inf), dimensions={1}, to_apply=%max
  %max_b = f32[$a,$b] broadcast(f32[$a] %row_max), dimensions={0}
  %shifted = f32[$a,$b] subtract(f32[$a,$b] %x, f32[$a,$b] %max_b)
  %exp = f32[$a,$b] exponential(f32[$a,$b] %shifted)
  %zero = f32[] constant(0)
  %row_sum = f32[$a] reduce(f32[$a,$b] %exp, f32[] %zero), dimensions={1}, to_apply=%add
  %sum_b = f32[$a,$b] broadcast(f32[$a] %row_sum), dimensions={0}
  ROOT %r = f32[$a,$b] divide(f32[$a,$b] %exp, f32[$a,$b] %sum_b)
})",
                      {{{"x", "(0, None)"}}, {{"x", "(None, 0)"}}, {{"x", "(1, 0)"}}}});
  programs.push_back(
      {"layer_norm",
       R"(ENTRY %main (x: f32[$a,$b], gamma: f32[$b], beta: f32[$b]) -> f32[$a,$b] {
  %x = f32[$a,$b] parameter(0)
  %gamma = f32[$b] parameter(1)
  %beta = f32[$b] parameter(2)
  %zero = f32[] constant(0)
  %n = f32[] constant($b)
  %ns = f32[$a] broadcast(f32[] %n), dimensions={}
  %sum = f32[$a] reduce(f32[$a,$b] %x, f32[] %zero), dimensions={1}, to_apply=%add
  %mean = f32[$a] divide(f32[$a] %sum, f32[$a] %ns)
  %mean_b = f32[$a,$b] broadcast(f32[$a] %mean), dimensions={0}
  %centered = f32[$a,$b] subtract(f32[$a,$b] %x, f32[$a,$b] %mean_b)
  %square = f32[$a,$b] multiply(f32[$a,$b] %centered, f32[$a,$b] %centered)
  %sq_sum = f32[$a] reduce(f32[$a,$b] %square, f32[] %zero), dimensions={1}, to_apply=%add
  %var = f32[$a] divide(f32[$a] %sq_sum, f32[$a] %ns)
  %eps = f32[] constant(1e-5)
  %epss = f32[$a] broadcast(f32[] %eps), dimensions={}
  %var_eps = f32[$a] add(f32[$a] %var, f32[$a] %epss)
  %inv = f32[$a] rsqrt(f32[$a] %var_eps)
  %inv_b = f32[$a,$b] broadcast(f32[$a] %inv), dimensions={0}
  %normed = f32[$a,$b] multiply(f32[$a,$b] %centered, f32[$a,$b] %inv_b)
  %gamma_b = f32[$a,$b] broadcast(f32[$b] %gamma), dimensions={1}
  %beta_b = f32[$a,$b] broadcast(f32[$b] %beta), dimensions={1}
  %scaled = f32[$a,$b] multiply(f32[$a,$b] %normed, f32[$a,$b] %gamma_b)
  ROOT %r = f32[$a,$b] add(f32[$a,$b] %scaled, f32[$a,$b] %beta_b)
})",
       {{{"x", "(0, None)"}}, {{"x", "(None, 0)"}}, {{"x", "(0, 1)"}, {"gamma", "(1,)"}}}});
  programs.push_back(
      {"mlp_forward",
       R"(ENTRY %main (x: f32[$a,$b], w1: f32[$b,$c], b1: f32[$c], w2: f32[$c,$b]) -> f32[$a,$b] {
  %x = f32[$a,$b] parameter(0)
  %w1 = f32[$b,$c] parameter(1)
  %b1 = f32[$c] parameter(2)
  %w2 = f32[$c,$b] parameter(3)
  %h = f32[$a,$c] dot(f32[$a,$b] %x, f32[$b,$c] %w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %bias = f32[$a,$c] broadcast(f32[$c] %b1), dimensions={1}
  %hb = f32[$a,$c] add(f32[$a,$c] %h, f32[$a,$c] %bias)
  %zero = f32[] constant(0)
  %zeros = f32[$a,$c] broadcast(f32[] %zero), dimensions={}
  %relu = f32[$a,$c] maximum(f32[$a,$c] %hb, f32[$a,$c] %zeros)
  ROOT %r = f32[$a,$b] dot(f32[$a,$c] %relu, f32[$c,$b] %w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
       {{{"x", "(0, None)"}},
        {{"w1", "(None, 0)"}, {"w2", "(0, None)"}},
        {{"x", "(0, None)"}, {"w1", "(None, 1)"}, {"w2", "(1, None)"}}}});
  programs.push_back(
      {"mlp_backward",
       R"(ENTRY %main (x: f32[$a,$b], w1: f32[$b,$c], w2: f32[$c,$b], dy: f32[$a,$b]) -> (f32[$b,$c], f32[$c,$b], f32[$a,$b]) {
  %x = f32[$a,$b] parameter(0)
  %w1 = f32[$b,$c] parameter(1)
  %w2 = f32[$c,$b] parameter(2)
  %dy = f32[$a,$b] parameter(3)
  %h = f32[$a,$c] dot(f32[$a,$b] %x, f32[$b,$c] %w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %zero = f32[] constant(0)
  %zeros = f32[$a,$c] broadcast(f32[] %zero), dimensions={}
  %relu = f32[$a,$c] maximum(f32[$a,$c] %h, f32[$a,$c] %zeros)
  %active = pred[$a,$c] compare(f32[$a,$c] %h, f32[$a,$c] %zeros), direction=GT
  %drelu = f32[$a,$c] dot(f32[$a,$b] %dy, f32[$c,$b] %w2), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  %dh = f32[$a,$c] select(pred[$a,$c] %active, f32[$a,$c] %drelu, f32[$a,$c] %zeros)
  %dw1 = f32[$b,$c] dot(f32[$a,$b] %x, f32[$a,$c] %dh), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %dw2 = f32[$c,$b] dot(f32[$a,$c] %relu, f32[$a,$b] %dy), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %dx = f32[$a,$b] dot(f32[$a,$c] %dh, f32[$b,$c] %w1), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  ROOT %r = (f32[$b,$c], f32[$c,$b], f32[$a,$b]) tuple(f32[$b,$c] %dw1, f32[$c,$b] %dw2, f32[$a,$b] %dx)
})",
       {{{"x", "(0, None)"}, {"dy", "(0, None)"}},
        {{"w1", "(None, 0)"}, {"w2", "(0, None)"}},
        {{"x", "(0, None)"},
         {"dy", "(0, None)"},
         {"w1", "(0, None)"},
         {"w2", "(0, None)"},
         {"dw1", "(0, None)"},
         {"dw2", "(0, None)"}}}});
  programs.push_back(
      {"megatron_mlp",
       R"(ENTRY %main (x: f32[$a,$b], w1: f32[$b,$c], w2: f32[$c,$b]) -> f32[$a,$b] {
  %x = f32[$a,$b] parameter(0)
  %w1 = f32[$b,$c] parameter(1)
  %w2 = f32[$c,$b] parameter(2)
  %h = f32[$a,$c] dot(f32[$a,$b] %x, f32[$b,$c] %w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %g = f32[$a,$c] tanh(f32[$a,$c] %h)
  ROOT %r = f32[$a,$b] dot(f32[$a,$c] %g, f32[$c,$b] %w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
       {{{"w1", "(None, 0)"}, {"w2", "(0, None)"}},
        {{"x", "(0, None)"}, {"w1", "(None, 1)"}, {"w2", "(1, None)"}},
        {{"x", "(0, None)"}, {"w1", "(None, 1)"}, {"w2", "(1, None)"}, {"r", "(0, 1)"}}}});
  programs.push_back({"attention",
                      R"(ENTRY %main (q: f32[$a,$b], k: f32[$a,$b], v: f32[$a,$b]) -> f32[$a,$b] {
  %q = f32[$a,$b] parameter(0)
  %k = f32[$a,$b] parameter(1)
  %v = f32[$a,$b] parameter(2)
  %s = f32[$a,$a] dot(f32[$a,$b] %q, f32[$a,$b] %k), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  %scale = f32[] constant(0.25)
  %scales = f32[$a,$a] broadcast(f32[] %scale), dimensions={}
  %scaled = f32[$a,$a] multiply(f32[$a,$a] %s, f32[$a,$a] %scales)
  %neg_inf = f32[] constant(-inf)
  %m = f32[$a] reduce(f32[$a,$a] %scaled, f32[] %neg_inf), dimensions={1}, to_apply=%max
  %mb = f32[$a,$a] broadcast(f32[$a] %m), dimensions={0}
  %shifted = f32[$a,$a] subtract(f32[$a,$a] %scaled, f32[$a,$a] %mb)
  %e = f32[$a,$a] exponential(f32[$a,$a] %shifted)
  %zero = f32[] constant(0)
  %sum = f32[$a] reduce(f32[$a,$a] %e, f32[] %zero), dimensions={1}, to_apply=%add
  %sb = f32[$a,$a] broadcast(f32[$a] %sum), dimensions={0}
  %p = f32[$a,$a] divide(f32[$a,$a] %e, f32[$a,$a] %sb)
  ROOT %o = f32[$a,$b] dot(f32[$a,$a] %p, f32[$a,$b] %v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
                      {{{"q", "(0, None)"}},
                       {{"q", "(None, 0)"}, {"k", "(None, 0)"}, {"v", "(None, 0)"}},
                       {{"q", "(0, None)"}, {"k", "(1, None)"}, {"v", "(1, None)"}}}});
  return programs;
}

}  // namespace

const std::vector<Program>& EquivalencePrograms() {
  static const std::vector<Program>* programs = [] {
    auto* all = new std::vector<Program>(OpPrograms());
    for (std::vector<Program> more : {ContractionPrograms(), ModelPrograms()}) {
      all->insert(all->end(), more.begin(), more.end());
    }
    for (Program& program : *all)
      program.text = "HloModule " + program.name + "\n" + kReducers + "\n" + program.text;
    return all;
  }();
  return *programs;
}

std::string Instantiate(const std::string& text, const Sizes& sizes) {
  const int64_t a = sizes.a, b = sizes.b, c = sizes.c;
  std::vector<int64_t> counting(b);
  for (int64_t i = 0; i < b; ++i) counting[i] = i;
  // Longer names first so that $a does not eat the start of $ab.
  const std::vector<std::pair<std::string, std::string>> values = {
      {"$bconst", fmt::format("{{{}}}", absl::StrJoin(counting, ", "))},
      {"$am2", std::to_string(a - 2)},
      {"$am1", std::to_string(a - 1)},
      {"$ab", std::to_string(a * b)},
      {"$a4", std::to_string(4 * a)},
      {"$a3", std::to_string(a + 3)},
      {"$b2", std::to_string(2 * b)},
      {"$bh", std::to_string((b + 1) / 2)},
      {"$bc", std::to_string(b + c)},
      {"$a", std::to_string(a)},
      {"$b", std::to_string(b)},
      {"$c", std::to_string(c)}};
  std::string result = text;
  for (const auto& [name, value] : values) result = absl::StrReplaceAll(result, {{name, value}});
  return result;
}

const char kTileAssignmentFormsProgram[] = R"(HloModule forms, num_partitions={n}
%add.f32 (a: f32[], b: f32[]) -> f32[] {{
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}}
ENTRY %main (x: f32[{r},{c}], w: f32[{c},{k}]) -> (f32[{r},{k}], f32[{r}]) {{
  %x = f32[{r},{c}] parameter(0), sharding={s0}
  %w = f32[{c},{k}] parameter(1), sharding={s1}
  %xs = f32[{r},{c}] custom-call(f32[{r},{c}] %x), custom_call_target="Sharding", sharding={s2}
  %e = f32[{r},{c}] tanh(f32[{r},{c}] %xs)
  %y = f32[{r},{k}] dot(f32[{r},{c}] %e, f32[{c},{k}] %w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, sharding={s3}
  %z = f32[{r},{k}] add(f32[{r},{k}] %y, f32[{r},{k}] %y)
  %zero = f32[] constant(0)
  %sum = f32[{r}] reduce(f32[{r},{k}] %z, f32[] %zero), dimensions={{1}}, to_apply=%add.f32
  ROOT %t = (f32[{r},{k}], f32[{r}]) tuple(f32[{r},{k}] %z, f32[{r}] %sum), sharding={{{s4}, {{replicated}}}}
}})";

// A rank-3 elementwise chain: the 3-D iota transposes of 8 and 12 devices.
const char kTileAssignmentForms3dProgram[] = R"(HloModule forms3d, num_partitions={n}
ENTRY %main (x: f32[5,7,4], v: f32[5,7,4]) -> f32[5,7,4] {{
  %x = f32[5,7,4] parameter(0), sharding={s0}
  %v = f32[5,7,4] parameter(1), sharding={s1}
  %xs = f32[5,7,4] custom-call(f32[5,7,4] %x), custom_call_target="Sharding", sharding={s2}
  %m = f32[5,7,4] multiply(f32[5,7,4] %xs, f32[5,7,4] %v)
  ROOT %n = f32[5,7,4] negate(f32[5,7,4] %m), sharding={s3}
}})";

std::vector<FormsCase> TileAssignmentForms2d() {
  const auto mesh = [](std::vector<int64_t> shape) { return *Mesh::Create(std::move(shape)); };
  return {
      {{mesh({2})},
       {"{devices=[2,1]1,0}", "{devices=[1,2]1,0}", "{devices=[2,1]<=[2]}", "{maximal device=1}",
        "{devices=[1,1,2]1,0 last_tile_dim_replicate}",
        "{devices=[1,2,1]1,0 last_tile_dims={replicated}}", "{replicated}"}},
      {{mesh({4}), mesh({2, 2})},
       {"{devices=[2,2]<=[2,2]T(1,0)}", "{devices=[2,2]3,1,0,2}", "{devices=[4,1]2,0,3,1}",
        "{devices=[1,4]<=[2,2]T(1,0)}", "{devices=[2,1,2]0,3,1,2 last_tile_dim_replicate}",
        "{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}",
        "{devices=[1,1,2,2]<=[4] last_tile_dims={replicated, replicated}}", "{maximal device=3}"}},
      {{mesh({6}), mesh({3, 2})},
       {"{devices=[3,2]<=[2,3]T(1,0)}", "{devices=[2,3]5,4,3,2,1,0}",
        "{devices=[3,1,2]<=[6] last_tile_dim_replicate}", "{devices=[1,6]<=[3,2]T(1,0)}",
        "{devices=[6,1]1,3,5,0,2,4}", "{devices=[1,2,3]<=[3,2]T(1,0) last_tile_dim_replicate}",
        "{maximal device=4}"}},
      {{mesh({8}), mesh({2, 4})},
       {"{devices=[2,2,2]<=[2,2,2]T(2,0,1) last_tile_dim_replicate}",
        "{devices=[4,2]<=[2,2,2]T(1,2,0)}", "{devices=[2,4]7,6,5,4,3,2,1,0}",
        "{devices=[8,1]<=[2,4]T(1,0)}", "{devices=[1,2,4]<=[8] last_tile_dim_replicate}",
        "{devices=[2,1,2,2]<=[8] last_tile_dims={replicated, replicated}}", "{maximal device=5}"}},
  };
}

std::vector<FormsCase> TileAssignmentForms3d() {
  const auto mesh = [](std::vector<int64_t> shape) { return *Mesh::Create(std::move(shape)); };
  return {
      {{mesh({8})},
       {"{devices=[2,2,2]<=[2,2,2]T(2,0,1)}", "{devices=[2,4,1]<=[2,2,2]T(1,0,2)}",
        "{devices=[1,2,2,2]7,5,3,1,6,4,2,0 last_tile_dim_replicate}",
        "{devices=[2,2,2]0,4,1,5,2,6,3,7}"}},
      {{mesh({12}), mesh({2, 3, 2})},
       {"{devices=[2,3,2]<=[2,3,2]T(2,0,1)}", "{devices=[3,2,2]<=[12]}",
        "{devices=[1,3,2,2]<=[2,3,2]T(1,2,0) last_tile_dim_replicate}",
        "{devices=[4,3,1]<=[3,4]T(1,0)}", "{devices=[2,2,3]11,10,9,8,7,6,5,4,3,2,1,0}"}},
  };
}

std::vector<std::string> FormsInRotation(const std::vector<std::string>& forms, size_t i) {
  const size_t n = forms.size();
  std::vector<std::string> slots;
  for (size_t j = 0; j < 5; ++j) slots.push_back(forms[i < n ? (i + j) % n : i - n]);
  return slots;
}

std::string InstantiateForms(const char* text, int64_t devices, const Sizes& sizes,
                             const std::vector<std::string>& slots) {
  return fmt::format(fmt::runtime(text), fmt::arg("n", devices), fmt::arg("r", sizes.a),
                     fmt::arg("c", sizes.b), fmt::arg("k", sizes.c), fmt::arg("s0", slots[0]),
                     fmt::arg("s1", slots[1]), fmt::arg("s2", slots[2]), fmt::arg("s3", slots[3]),
                     fmt::arg("s4", slots[4]));
}

}  // namespace vkspmd::spmd::testing
