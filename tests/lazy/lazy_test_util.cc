// Reference values and the validation check of the Tensor API tests.
#include "tests/lazy/lazy_test_util.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "src/api/api_support.h"
#include "src/interp/evaluator.h"
#include "src/lazy/engine.h"
#include "src/lazy/lowering.h"

namespace vkspmd::testing {
namespace {

// Checks at the end of the test program that the devices were used without validation messages.
class ValidationEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { EXPECT_EQ(CloseDevicesAndCountValidationMessages(), 0); }
};

[[maybe_unused]] ::testing::Environment* const environment =
    ::testing::AddGlobalTestEnvironment(new ValidationEnvironment());

}  // namespace

namespace {

ir::Literal ReferenceOn(const Tensor& tensor, lazy::PlacementPtr placement) {
  lazy::NodePtr node = lazy::NodeOf(tensor);
  if (node->host_value.has_value()) return *node->host_value;
  if (node->is_leaf()) return lazy::ReadValue(tensor, std::source_location::current());
  absl::StatusOr<lazy::LoweredGraph> graph = lazy::Lower({node}, std::move(placement));
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return ir::Literal();
  std::vector<ir::Literal> arguments;
  for (const lazy::NodePtr& parameter : graph->parameters) {
    arguments.push_back(ReferenceValue(
        Tensor(std::make_shared<lazy::TensorState>(lazy::TensorState{parameter, std::nullopt}))));
  }
  // One device: the custom-calls of sharding constraints mean nothing and the lowering drops
  // them. A mesh: the evaluator runs one emulated device per partition (device 0's value).
  absl::StatusOr<ir::Literal> value = interp::Evaluate(*graph->module, arguments);
  EXPECT_TRUE(value.ok()) << value.status();
  return value.ok() ? std::move(*value) : ir::Literal();
}

}  // namespace

ir::Literal ReferenceValue(const Tensor& tensor) {
  return ReferenceOn(tensor, lazy::SingleDevicePlacement());
}

ir::Literal MeshReferenceValue(const Tensor& tensor) {
  lazy::NodePtr node = lazy::NodeOf(tensor);
  return ReferenceOn(tensor, node->placement ? node->placement : lazy::SingleDevicePlacement());
}

std::string CompareWithReference(const HostTensor& actual, const ir::Literal& reference,
                                 double relative) {
  if (actual.shape != reference.shape().dimensions()) {
    return absl::StrCat("shape differs from the reference ", reference.shape().ToString());
  }
  if (lazy::ToIrType(actual.dtype) != reference.dtype()) {
    return absl::StrCat("type differs from the reference ", reference.shape().ToString());
  }
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const double a = actual.at<double>(i), b = reference.GetAsDouble(i);
    if (a == b || (std::isnan(a) && std::isnan(b))) continue;
    if (is_floating_point(actual.dtype) && std::isfinite(a) && std::isfinite(b) &&
        std::fabs(a - b) <= relative * std::max(1.0, std::fabs(b))) {
      continue;
    }
    return absl::StrCat("element ", i, ": ", a, ", reference ", b);
  }
  return "";
}

std::string CompareWithExpected(const HostTensor& actual, const HostTensor& expected,
                                double relative, double absolute) {
  if (actual.shape != expected.shape) {
    return absl::StrCat("shape [", absl::StrJoin(actual.shape, ","),
                        "] differs from the expected [", absl::StrJoin(expected.shape, ","), "]");
  }
  if (actual.dtype != expected.dtype) {
    return absl::StrCat("dtype ", dtype_name(actual.dtype), " differs from the expected ",
                        dtype_name(expected.dtype));
  }
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const double a = actual.at<double>(i), b = expected.at<double>(i);
    if (a == b || (std::isnan(a) && std::isnan(b))) continue;
    if (is_floating_point(actual.dtype) && std::isfinite(a) && std::isfinite(b) &&
        std::fabs(a - b) <= absolute + relative * std::fabs(b)) {
      continue;
    }
    return fmt::format("element {}: {:.9g}, expected {:.9g}", i, a, b);
  }
  return "";
}

std::string ThrownMessage(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

int64_t CloseDevicesAndCountValidationMessages() { return lazy::Engine::Get().CloseDevices(); }

}  // namespace vkspmd::testing
