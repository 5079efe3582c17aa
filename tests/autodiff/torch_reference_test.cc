// Gradients against torch autograd: every case in tests/testdata/autodiff (written by
// torch_reference.py: MLP, softmax cross-entropy, layer norm, an attention block, each
// elementwise op torch has, select, clamp, convert, the shape ops, batched dots and reduce-max)
// must match to 1e-5 relative in f64 and 1e-4 in f32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "src/autodiff/gradients.h"
#include "src/io/npy.h"
#include "src/ir/parser.h"
#include "src/ir/printer.h"
#include "tests/autodiff/gradient_check.h"

namespace vkspmd::autodiff {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> CaseNames() {
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(VKSPMD_AUTODIFF_TESTDATA)) {
    if (entry.path().extension() == ".hlo") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Largest |actual - expected| relative to the largest |expected| of the tensor (at least 1e-3,
// so an all-but-zero gradient is not judged by rounding noise).
double RelativeError(const ir::Literal& actual, const ir::Literal& expected) {
  double scale = 1e-3;
  for (int64_t i = 0; i < expected.ElementCount(); ++i) {
    scale = std::max(scale, std::fabs(expected.GetAsDouble(i)));
  }
  double worst = 0;
  for (int64_t i = 0; i < expected.ElementCount(); ++i) {
    worst = std::max(worst, std::fabs(actual.GetAsDouble(i) - expected.GetAsDouble(i)) / scale);
  }
  return worst;
}

class TorchReferenceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchReferenceTest, GradientsMatchTorchAutograd) {
  const std::string base = absl::StrCat(VKSPMD_AUTODIFF_TESTDATA, "/", GetParam());
  std::ifstream file(base + ".hlo");
  std::stringstream text;
  text << file.rdbuf();
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text.str());
  ASSERT_TRUE(module.ok()) << module.status();
  const int64_t count = (*module)->entry()->parameter_count();
  std::vector<ir::Literal> arguments;
  std::vector<int64_t> wrt;
  for (int64_t i = 0; i < count; ++i) {
    absl::StatusOr<ir::Literal> argument = io::ReadNpyFile(absl::StrCat(base, ".arg", i, ".npy"));
    ASSERT_TRUE(argument.ok()) << argument.status();
    arguments.push_back(std::move(*argument));
    wrt.push_back(i);
  }
  absl::StatusOr<std::unique_ptr<ir::Module>> gradients = Gradients(**module, std::nullopt, wrt);
  ASSERT_TRUE(gradients.ok()) << gradients.status();
  absl::StatusOr<std::vector<ir::Literal>> results =
      testing::EvaluateGradients(**gradients, arguments);
  ASSERT_TRUE(results.ok()) << results.status();

  const bool f64 = GetParam().find(".f64") != std::string::npos;
  const double tolerance = f64 ? 1e-5 : 1e-4;
  absl::StatusOr<ir::Literal> loss = io::ReadNpyFile(base + ".loss.npy");
  ASSERT_TRUE(loss.ok()) << loss.status();
  EXPECT_LE(RelativeError((*results)[0], *loss), tolerance) << "loss";
  for (int64_t i = 0; i < count; ++i) {
    absl::StatusOr<ir::Literal> expected = io::ReadNpyFile(absl::StrCat(base, ".grad", i, ".npy"));
    ASSERT_TRUE(expected.ok()) << expected.status();
    EXPECT_LE(RelativeError((*results)[i + 1], *expected), tolerance)
        << "d loss / d parameter " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Torch, TorchReferenceTest, ::testing::ValuesIn(CaseNames()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string name = param.param;
                           std::replace(name.begin(), name.end(), '.', '_');
                           return name;
                         });

}  // namespace
}  // namespace vkspmd::autodiff
