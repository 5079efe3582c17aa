// A small training step through the new gradient rules on a device (lavapipe in CI): an embedding
// gather (duplicate and out-of-range ids), rows overwritten by a scatter (x.at[i].set(u)), top_k
// as a slice of a sort with an iota and a one-operand sort along the other dim. Three SGD steps of
// the gradient module on the device against the same steps on the f32 CPU reference, whose first
// gradients are checked against central differences of the program in f64.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "src/autodiff/gradients.h"
#include "src/exec/executable.h"
#include "src/interp/evaluator.h"
#include "src/ir/parser.h"
#include "tests/autodiff/gradient_check.h"
#include "tests/exec/literal_compare.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

constexpr char kStep[] = R"(HloModule top_k_train_step

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}

%greater_with_index (a: f32[], b: f32[], i: s32[], j: s32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %i = s32[] parameter(2)
  %j = s32[] parameter(3)
  ROOT %gt = pred[] compare(%a, %b), direction=GT, type=TOTALORDER
}

%less (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %lt = pred[] compare(%a, %b), direction=LT
}

%assign (old: f32[], new: f32[]) -> f32[] {
  %old = f32[] parameter(0)
  ROOT %new = f32[] parameter(1)
}

ENTRY %main (table: f32[10,8], w: f32[8,12], u: f32[3,12]) -> f32[] {
  %table = f32[10,8] parameter(0)
  %w = f32[8,12] parameter(1)
  %u = f32[3,12] parameter(2)
  %ids = s32[6,1] constant({ {3}, {7}, {3}, {12}, {0}, {9} })
  %embedded = f32[6,8] gather(%table, %ids), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,8}
  %h = f32[6,12] dot(%embedded, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %rows = s32[3,1] constant({ {4}, {1}, {4} })
  %set = f32[6,12] scatter(%h, %rows, %u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%assign
  %iota = s32[6,12] iota(), iota_dimension=1
  %sorted = (f32[6,12], s32[6,12]) sort(%set, %iota), dimensions={1}, is_stable=true, to_apply=%greater_with_index
  %values = f32[6,12] get-tuple-element(%sorted), index=0
  %top = f32[6,4] slice(%values), slice={[0:6], [0:4]}
  %t = f32[6,4] tanh(%top)
  %squares = f32[6,4] multiply(%t, %t)
  %zero = f32[] constant(0)
  %top_loss = f32[] reduce(%squares, %zero), dimensions={0,1}, to_apply=%add
  %by_column = f32[6,12] sort(%set), dimensions={0}, to_apply=%less
  %lowest = f32[2,12] slice(%by_column), slice={[0:2], [0:12]}
  %low_sum = f32[] reduce(%lowest, %zero), dimensions={0,1}, to_apply=%add
  %tenth = f32[] constant(0.1)
  %low_loss = f32[] multiply(%low_sum, %tenth)
  ROOT %loss = f32[] add(%top_loss, %low_loss)
}
)";

class SortScatterGradientDeviceTest : public DeviceTest {
 protected:
  void SetUp() override { OpenDevices(1); }
};

std::vector<ir::Literal> InitialParameters(const ir::Module& module) {
  std::mt19937 random(11);
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::vector<ir::Literal> parameters;
  for (const ir::Instruction* parameter : module.entry()->parameters()) {
    ir::Literal literal(parameter->shape());
    for (int64_t i = 0; i < literal.ElementCount(); ++i) literal.SetFromDouble(i, uniform(random));
    parameters.push_back(std::move(literal));
  }
  return parameters;
}

// parameters[k] -= rate * gradients[k + 1] (element 0 is the loss).
void Descend(std::vector<ir::Literal>& parameters, const ir::Literal& step, double rate) {
  for (size_t k = 0; k < parameters.size(); ++k) {
    const ir::Literal& gradient = step.tuple_elements()[k + 1];
    for (int64_t i = 0; i < parameters[k].ElementCount(); ++i) {
      parameters[k].SetFromDouble(i, parameters[k].GetAsDouble(i) - rate * gradient.GetAsDouble(i));
    }
  }
}

std::vector<ir::Literal> InF64(const std::vector<ir::Literal>& parameters) {
  std::vector<ir::Literal> converted;
  for (const ir::Literal& parameter : parameters) {
    ir::Literal literal(ir::Shape(ir::DType::kF64, parameter.shape().dimensions()));
    for (int64_t i = 0; i < literal.ElementCount(); ++i) {
      literal.SetFromDouble(i, parameter.GetAsDouble(i));
    }
    converted.push_back(std::move(literal));
  }
  return converted;
}

// The step's gradients are right: the same program in f64 against central differences.
TEST(SortScatterGradientStepTest, GradientsMatchCentralDifferencesInF64) {
  VKSPMD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<ir::Module> module,
      ir::ParseAndVerifyModule(absl::StrReplaceAll(kStep, {{"f32", "f64"}})));
  EXPECT_EQ(autodiff::testing::GradientsDifferFromDifferences(*module, {0, 1, 2},
                                                              InF64(InitialParameters(*module))),
            "");
}

TEST_F(SortScatterGradientDeviceTest, TopKTrainingStepsMatchTheReference) {
  VKSPMD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Module> module, ir::ParseAndVerifyModule(kStep));
  VKSPMD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Module> gradients,
                              autodiff::Gradients(*module, std::nullopt, {0, 1, 2}));
  VKSPMD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<exec::Executable> executable,
                              exec::Executable::Compile(*gradients, device(0)));
  std::vector<ir::Literal> on_device = InitialParameters(*module);
  std::vector<ir::Literal> on_reference = on_device;
  std::vector<double> losses;
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE(step);
    VKSPMD_ASSERT_OK_AND_ASSIGN(ir::Literal device_step, executable->Run(on_device));
    VKSPMD_ASSERT_OK_AND_ASSIGN(ir::Literal reference_step,
                                interp::Evaluate(*gradients, on_reference));
    ASSERT_EQ(CompareLiterals(device_step, reference_step, 1e-4), "");
    // Every parameter gets a gradient that is not all zero (each rule passes something on).
    for (size_t k = 1; k < reference_step.tuple_elements().size(); ++k) {
      const ir::Literal& gradient = reference_step.tuple_elements()[k];
      double largest = 0;
      for (int64_t i = 0; i < gradient.ElementCount(); ++i) {
        largest = std::max(largest, std::abs(gradient.GetAsDouble(i)));
      }
      EXPECT_GT(largest, 1e-3) << "gradient " << k;
    }
    losses.push_back(device_step.tuple_elements()[0].GetAsDouble(0));
    Descend(on_device, device_step, 0.2);
    Descend(on_reference, reference_step, 0.2);
  }
  for (size_t k = 0; k < on_device.size(); ++k) {
    EXPECT_EQ(CompareLiterals(on_device[k], on_reference[k], 1e-4), "") << "parameter " << k;
  }
  EXPECT_LT(losses.back(), losses.front());
}

}  // namespace
}  // namespace vkspmd::testing
