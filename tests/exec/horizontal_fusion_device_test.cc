// Horizontal fusion on a device: independent map kernels run as parts of one dispatch (each over
// its own workgroups) and the results equal the CPU reference; the recorded vkCmdDispatch calls
// are pinned.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "src/exec/executable.h"
#include "src/ir/parser.h"
#include "tests/exec/device_reference.h"
#include "tests/exec/dispatch_counter.h"
#include "tests/exec/random_module.h"
#include "tests/support/device_test.h"
#include "tests/support/scoped_environment.h"

namespace vkspmd::testing {
namespace {

class HorizontalFusionDeviceTest : public DeviceTest {
 protected:
  void SetUp() override { OpenDevices(1); }

  void ExpectMatchesReference(const std::string& text) {
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
    ASSERT_TRUE(module.ok()) << module.status();
    for (uint32_t seed : {1u, 2u}) {
      EXPECT_EQ(DeviceDiffersFromReference(**module, RandomArguments(**module, seed), device(0)),
                "")
          << "seed " << seed;
    }
  }
};

// The Adam-like update of parameter wK (moment mK, gradient gK, all of shape `shape`): the new
// moment vK and parameter uK.
std::string AdamUpdate(int k, const std::string& shape) {
  return absl::StrReplaceAll(R"(
  betaK = SHAPE broadcast(beta), dimensions={}
  nK = SHAPE multiply(mK, betaK)
  ggK = SHAPE multiply(gK, gK)
  vK = SHAPE add(nK, ggK)
  eK = SHAPE broadcast(eps), dimensions={}
  dK = SHAPE add(vK, eK)
  sK = SHAPE sqrt(dK)
  qK = SHAPE divide(gK, sK)
  rateK = SHAPE broadcast(rate), dimensions={}
  tK = SHAPE multiply(qK, rateK)
  uK = SHAPE subtract(wK, tK))",
                             {{"K", std::to_string(k)}, {"SHAPE", shape}});
}

// Adam-like updates of three parameters of 1000, 77 and 5 elements (parts spanning many
// workgroups, one, and part of one), each after the dot giving its gradient (the third's summed
// over rows, a reduce folded into its update), every parameter donated its update; all updates
// share the step's scalars.
std::string AdamUpdates() {
  return absl::StrCat(
      R"(HloModule adam3, input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}, may-alias), {2}: (2, {}, may-alias) }
add {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT s = f32[] add(p, q)
}
ENTRY e {
  w1 = f32[40,25] parameter(0)
  w2 = f32[7,11] parameter(1)
  w3 = f32[5] parameter(2)
  m1 = f32[40,25] parameter(3)
  m2 = f32[7,11] parameter(4)
  m3 = f32[5] parameter(5)
  x = f32[6,40] parameter(6)
  h = f32[6,25] parameter(7)
  a = f32[6,7] parameter(8)
  b = f32[6,11] parameter(9)
  c = f32[6,5] parameter(10)
  beta = f32[] parameter(11)
  rate = f32[] parameter(12)
  eps = f32[] constant(0.001)
  g1 = f32[40,25] dot(x, h), lhs_contracting_dims={0}, rhs_contracting_dims={0})",
      AdamUpdate(1, "f32[40,25]"), R"(
  g2 = f32[7,11] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0})",
      AdamUpdate(2, "f32[7,11]"), R"(
  c3 = f32[5,5] dot(c, c), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  zero = f32[] constant(0)
  g3 = f32[5] reduce(c3, zero), dimensions={0}, to_apply=add)",
      AdamUpdate(3, "f32[5]"), R"(
  ROOT t = (f32[40,25], f32[7,11], f32[5], f32[40,25], f32[7,11], f32[5]) tuple(u1, u2, u3, v1, v2, v3)
})");
}

TEST_F(HorizontalFusionDeviceTest, AdamLikeUpdatesMatchTheReferenceInOneDispatch) {
  // Without dot epilogues, which would fold the first two updates into their dots (also 4
  // dispatches; tests/exec/dot_epilogue_test.cc), and without lavapipe's limit on the work each
  // part runs masked in the others' workgroups (1000 + 77 + 5 elements run 2164 invocations
  // masked, over its 2048: the largest update would keep its own dispatch), so that the three
  // parts of one dispatch are what runs here.
  const ScopedEnvironment no_dot_epilogues("VKSPMD_DOT_EPILOGUES", "0");
  const ScopedEnvironment no_masked_work_limit("VKSPMD_MASKED_PART_INVOCATIONS", "0");
  const std::string text = AdamUpdates();
  ExpectMatchesReference(text);
  // Three gradient dots, then every update (with both its outputs, and the third's folded
  // gradient sum) in one dispatch: 3 + 1 where each update had its own kernel (3 + 3).
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 4);
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto executable, exec::Executable::Compile(**module, device(0)));
  ASSERT_EQ(executable->plan().kernels.back().parts.size(), 2u);
  EXPECT_EQ(executable->plan().donations.size(), 3u);
}

TEST_F(HorizontalFusionDeviceTest, AReaderOfADonatedParameterStillSeesItsOldValue) {
  // k reads p reversed before u overwrites p in place; e is independent of both. u and e share a
  // dispatch, k keeps its own before them.
  const std::string text = R"(HloModule hazard, input_output_alias={ {0}: (0, {}, may-alias) }
ENTRY e {
  p = f32[300] parameter(0)
  g = f32[300] parameter(1)
  q = f32[300] parameter(2)
  r = f32[300] reverse(p), dimensions={0}
  k = f32[300] multiply(r, q)
  u = f32[300] subtract(p, g)
  e = f32[300] exponential(q)
  ROOT t = (f32[300], f32[300], f32[300]) tuple(u, k, e)
})";
  ExpectMatchesReference(text);
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 2);
}

TEST_F(HorizontalFusionDeviceTest, ALaterPartComputesWhatAnEarlierPartShared) {
  // io is read twice in a2's part, so that part computes it once into a variable
  // (KernelWriter::ShareValues); qn's part (its column sum of p * io folded in as a held
  // reduction) computes io again in its own function. Reading the first part's variable, which
  // qn's invocations never set, gave zeros (review of 787c76d).
  const std::string text = R"(HloModule shared_then_held
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[4,8] parameter(0)
  q = f32[8] parameter(1)
  w = f32[4,8] parameter(2)
  io = f32[4,8] iota(), iota_dimension=1
  a1 = f32[4,8] multiply(w, io)
  a2 = f32[4,8] add(a1, io)
  m = f32[4,8] multiply(p, io)
  zero = f32[] constant(0)
  r = f32[8] reduce(m, zero), dimensions={0}, to_apply=add
  qn = f32[8] add(q, r)
  ROOT t = (f32[4,8], f32[8]) tuple(a2, qn)
})";
  ExpectMatchesReference(text);
  EXPECT_EQ(DispatchesOfCompiling(device(0), text), 1);
}

}  // namespace
}  // namespace vkspmd::testing
