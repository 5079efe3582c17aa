// Gradients through while (known trip count) and conditional (issue 19): a lax.scan-style
// recurrence c = tanh(c * w + xs[t]) collecting ys, and a pred/indexed conditional, each
// differentiated through its lowering and compared with central differences of the original
// module, whose loops and branches the f64 CPU reference runs as written.
#include <gtest/gtest.h>

#include "src/autodiff/gradients.h"
#include "src/ir/parser.h"
#include "tests/autodiff/gradient_check.h"

namespace vkspmd::autodiff {
namespace {

constexpr char kAdd[] = R"(HloModule control_flow_loss
%add (lhs: f64[], rhs: f64[]) -> f64[] {
  %lhs = f64[] parameter(0)
  %rhs = f64[] parameter(1)
  ROOT %sum = f64[] add(%lhs, %rhs)
}
)";

// State (t, c, xs, w, ys); `%trip_count` is replaced by the loop's backend_config (or nothing).
constexpr char kScan[] = R"(
%cond (s: (s32[], f64[4], f64[3,4], f64[4], f64[3,4])) -> pred[] {
  %s = (s32[], f64[4], f64[3,4], f64[4], f64[3,4]) parameter(0)
  %t = s32[] get-tuple-element(%s), index=0
  %three = s32[] constant(3)
  ROOT %lt = pred[] compare(%t, %three), direction=LT
}
%body (s: (s32[], f64[4], f64[3,4], f64[4], f64[3,4])) -> (s32[], f64[4], f64[3,4], f64[4], f64[3,4]) {
  %s = (s32[], f64[4], f64[3,4], f64[4], f64[3,4]) parameter(0)
  %t = s32[] get-tuple-element(%s), index=0
  %c = f64[4] get-tuple-element(%s), index=1
  %xs = f64[3,4] get-tuple-element(%s), index=2
  %w = f64[4] get-tuple-element(%s), index=3
  %ys = f64[3,4] get-tuple-element(%s), index=4
  %zero = s32[] constant(0)
  %row = f64[1,4] dynamic-slice(%xs, %t, %zero), dynamic_slice_sizes={1,4}
  %x = f64[4] reshape(%row)
  %cw = f64[4] multiply(%c, %w)
  %pre = f64[4] add(%cw, %x)
  %next = f64[4] tanh(%pre)
  %next_row = f64[1,4] reshape(%next)
  %ys_next = f64[3,4] dynamic-update-slice(%ys, %next_row, %t, %zero)
  %one = s32[] constant(1)
  %t_next = s32[] add(%t, %one)
  ROOT %state = (s32[], f64[4], f64[3,4], f64[4], f64[3,4]) tuple(%t_next, %next, %xs, %w, %ys_next)
}
ENTRY %main (c0: f64[4], xs: f64[3,4], w: f64[4]) -> f64[] {
  %c0 = f64[4] parameter(0)
  %xs = f64[3,4] parameter(1)
  %w = f64[4] parameter(2)
  %t0 = s32[] constant(0)
  %zero = f64[] constant(0)
  %ys0 = f64[3,4] broadcast(%zero), dimensions={}
  %init = (s32[], f64[4], f64[3,4], f64[4], f64[3,4]) tuple(%t0, %c0, %xs, %w, %ys0)
  %loop = (s32[], f64[4], f64[3,4], f64[4], f64[3,4]) while(%init), condition=%cond, body=%body%trip_count
  %ys = f64[3,4] get-tuple-element(%loop), index=4
  %c = f64[4] get-tuple-element(%loop), index=1
  %squares = f64[3,4] multiply(%ys, %ys)
  %sum_squares = f64[] reduce(%squares, %zero), dimensions={0,1}, to_apply=%add
  %sum_c = f64[] reduce(%c, %zero), dimensions={0}, to_apply=%add
  ROOT %loss = f64[] add(%sum_squares, %sum_c)
}
)";

// Branch 0 exp(x) * y, branch 1 sin(x) * x, branch 2 y * y (an index beyond runs branch 2).
constexpr char kSwitch[] = R"(
%exp_times (a: (f64[3], f64[3])) -> f64[3] {
  %a = (f64[3], f64[3]) parameter(0)
  %x = f64[3] get-tuple-element(%a), index=0
  %y = f64[3] get-tuple-element(%a), index=1
  %e = f64[3] exponential(%x)
  ROOT %r = f64[3] multiply(%e, %y)
}
%sine_times (b: (f64[3], f64[3])) -> f64[3] {
  %b = (f64[3], f64[3]) parameter(0)
  %x = f64[3] get-tuple-element(%b), index=0
  %s = f64[3] sine(%x)
  ROOT %r = f64[3] multiply(%s, %x)
}
%square (c: (f64[3], f64[3])) -> f64[3] {
  %c = (f64[3], f64[3]) parameter(0)
  %y = f64[3] get-tuple-element(%c), index=1
  ROOT %r = f64[3] multiply(%y, %y)
}
ENTRY %main (i: s32[], x: f64[3], y: f64[3]) -> f64[] {
  %i = s32[] parameter(0)
  %x = f64[3] parameter(1)
  %y = f64[3] parameter(2)
  %pair = (f64[3], f64[3]) tuple(%x, %y)
  %branched = f64[3] conditional(%i, %pair, %pair, %pair), branch_computations={%exp_times, %sine_times, %square}
  %zero = f64[] constant(0)
  ROOT %loss = f64[] reduce(%branched, %zero), dimensions={0}, to_apply=%add
}
)";

std::unique_ptr<ir::Module> Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? std::move(*module) : nullptr;
}

// Every gradient of `wrt` within 1e-6 of central differences of the original module.
void ExpectGradientsMatchDifferences(const ir::Module& module, const std::vector<int64_t>& wrt,
                                     const std::vector<ir::Literal>& arguments) {
  EXPECT_EQ(testing::GradientsDifferFromDifferences(module, wrt, arguments), "");
}

TEST(ControlFlowGradientsTest, ScanGradientsMatchCentralDifferences) {
  const std::string scan = std::string(kAdd) + kScan;
  for (const std::string& trip_count :
       {std::string(", backend_config={\"known_trip_count\":{\"n\":\"3\"}}"), std::string()}) {
    std::string text = scan;
    text.replace(text.find("%trip_count"), 11, trip_count);
    std::unique_ptr<ir::Module> module = Parse(text);
    ASSERT_NE(module, nullptr);
    for (uint32_t seed : {1u, 2u}) {
      ExpectGradientsMatchDifferences(*module, {0, 1, 2},
                                      testing::RandomArguments(*module, -1, 1, seed));
    }
  }
}

TEST(ControlFlowGradientsTest, ConditionalGradientsFollowTheTakenBranch) {
  std::unique_ptr<ir::Module> module = Parse(std::string(kAdd) + kSwitch);
  ASSERT_NE(module, nullptr);
  for (int64_t index : {0, 1, 2, 5, -1}) {
    SCOPED_TRACE(index);
    std::vector<ir::Literal> arguments = testing::RandomArguments(*module, -1, 1, 7);
    arguments[0].SetFromInt64(0, index);
    ExpectGradientsMatchDifferences(*module, {1, 2}, arguments);
  }
}

TEST(ControlFlowGradientsTest, LoopsOfUnknownTripCountAreErrorsNamingThem) {
  std::unique_ptr<ir::Module> module = Parse(std::string(kAdd) + R"(
%below_ten (a: f64[]) -> pred[] {
  %a = f64[] parameter(0)
  %ten = f64[] constant(10)
  ROOT %lt = pred[] compare(%a, %ten), direction=LT
}
%double (b: f64[]) -> f64[] {
  %b = f64[] parameter(0)
  ROOT %d = f64[] add(%b, %b)
}
ENTRY %main (x: f64[]) -> f64[] {
  %x = f64[] parameter(0)
  ROOT %doubled = f64[] while(%x), condition=%below_ten, body=%double
}
)");
  ASSERT_NE(module, nullptr);
  absl::Status status = Gradients(*module, std::nullopt, {0}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(status.message().find("%doubled: its trip count is unknown"), std::string::npos)
      << status;
}

}  // namespace
}  // namespace vkspmd::autodiff
