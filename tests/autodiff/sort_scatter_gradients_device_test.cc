// A small training step through the new gradient rules on a device (lavapipe in CI): an embedding
// gather (duplicate and out-of-range ids), rows overwritten by a scatter (x.at[i].set(u)), top_k
// as a slice of a sort with an iota and a one-operand sort along the other dim. Three SGD steps of
// the gradient module on the device against the same steps on the f32 CPU reference, whose first
// gradients are checked against central differences of the program in f64.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
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

// tests/autodiff/top_k_step.hlo (not in tests/testdata/autodiff, whose every program the torch
// reference test reads), which the CLI test runs too.
std::string StepText() {
  std::ifstream file(VKSPMD_TOP_K_STEP);
  EXPECT_TRUE(file.good());
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

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
      ir::ParseAndVerifyModule(absl::StrReplaceAll(StepText(), {{"f32", "f64"}})));
  EXPECT_EQ(autodiff::testing::GradientsDifferFromDifferences(*module, {0, 1, 2},
                                                              InF64(InitialParameters(*module))),
            "");
}

TEST_F(SortScatterGradientDeviceTest, TopKTrainingStepsMatchTheReference) {
  VKSPMD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ir::Module> module,
                              ir::ParseAndVerifyModule(StepText()));
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
