// Every tests/testdata/*.hlo: parse, verify, print, re-parse to the same text (fixed point), then
// evaluate and compare with the NumPy-computed outputs that generate.py wrote beside it.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "src/interp/evaluator.h"
#include "src/io/npy.h"
#include "src/ir/parser.h"
#include "src/ir/printer.h"
#include "src/ir/structural_hash.h"
#include "src/ir/verifier.h"

namespace vkspmd::interp {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream file(path);
  std::stringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

std::vector<std::string> CaseNames() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(VKSPMD_TESTDATA_DIR)) {
    if (entry.path().extension() == ".hlo") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Arguments of `prefix` (NAME or NAME.devD): PREFIX.arg0.npy, PREFIX.arg1.npy, ...
std::vector<ir::Literal> LoadArguments(const std::string& prefix) {
  std::vector<ir::Literal> arguments;
  for (int k = 0;; ++k) {
    const fs::path path =
        fs::path(VKSPMD_TESTDATA_DIR) / (prefix + ".arg" + std::to_string(k) + ".npy");
    if (!fs::exists(path)) break;
    absl::StatusOr<ir::Literal> literal = io::ReadNpyFile(path.string());
    EXPECT_TRUE(literal.ok()) << literal.status();
    arguments.push_back(*literal);
  }
  return arguments;
}

void ExpectClose(const ir::Literal& actual, const ir::Literal& expected, const std::string& what) {
  ASSERT_EQ(actual.shape(), expected.shape())
      << what << ": " << actual.shape().ToString() << " vs " << expected.shape().ToString();
  for (int64_t i = 0; i < actual.ElementCount(); ++i) {
    if (ir::IsFloat(actual.dtype())) {
      const double a = actual.GetAsDouble(i), e = expected.GetAsDouble(i);
      if (std::isnan(e)) {
        EXPECT_TRUE(std::isnan(a)) << what << " element " << i;
      } else if (std::isinf(e)) {
        EXPECT_EQ(a, e) << what << " element " << i;
      } else {
        EXPECT_NEAR(a, e, 2e-5 + 2e-5 * std::fabs(e)) << what << " element " << i;
      }
    } else {
      EXPECT_EQ(actual.GetAsUint64(i), expected.GetAsUint64(i)) << what << " element " << i;
    }
  }
}

void ExpectOutputs(const ir::Literal& actual, const std::string& prefix) {
  const fs::path dir(VKSPMD_TESTDATA_DIR);
  if (actual.shape().IsTuple()) {
    for (size_t j = 0; j < actual.tuple_elements().size(); ++j) {
      const std::string file = prefix + ".out." + std::to_string(j) + ".npy";
      absl::StatusOr<ir::Literal> expected = io::ReadNpyFile((dir / file).string());
      ASSERT_TRUE(expected.ok()) << expected.status();
      ExpectClose(actual.tuple_elements()[j], *expected, file);
    }
    return;
  }
  absl::StatusOr<ir::Literal> expected = io::ReadNpyFile((dir / (prefix + ".out.npy")).string());
  ASSERT_TRUE(expected.ok()) << expected.status();
  ExpectClose(actual, *expected, prefix);
}

class TestdataTest : public testing::TestWithParam<std::string> {};

TEST_P(TestdataTest, PrintsToAFixedPointThatReparsesEqual) {
  const std::string text = ReadFile(fs::path(VKSPMD_TESTDATA_DIR) / (GetParam() + ".hlo"));
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string printed = ir::PrintModule(**module);
  absl::StatusOr<std::unique_ptr<ir::Module>> reparsed = ir::ParseAndVerifyModule(printed);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status() << "\n" << printed;
  EXPECT_EQ(ir::PrintModule(**reparsed), printed);
  EXPECT_EQ(ir::StructuralHash(**reparsed), ir::StructuralHash(**module));
}

TEST_P(TestdataTest, EvaluatesToTheNumpyResult) {
  const std::string text = ReadFile(fs::path(VKSPMD_TESTDATA_DIR) / (GetParam() + ".hlo"));
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  const int64_t devices = (*module)->replica_count() * (*module)->partition_count();
  const bool per_device =
      fs::exists(fs::path(VKSPMD_TESTDATA_DIR) / (GetParam() + ".dev0.out.npy"));
  if (!per_device) {
    absl::StatusOr<ir::Literal> result = Evaluate(**module, LoadArguments(GetParam()));
    ASSERT_TRUE(result.ok()) << result.status();
    ExpectOutputs(*result, GetParam());
    return;
  }
  std::vector<std::vector<ir::Literal>> arguments;
  for (int64_t d = 0; d < devices; ++d) {
    arguments.push_back(LoadArguments(GetParam() + ".dev" + std::to_string(d)));
  }
  absl::StatusOr<std::vector<ir::Literal>> results = EvaluateOnDevices(**module, arguments);
  ASSERT_TRUE(results.ok()) << results.status();
  for (int64_t d = 0; d < devices; ++d) {
    ExpectOutputs((*results)[d], GetParam() + ".dev" + std::to_string(d));
  }
}

INSTANTIATE_TEST_SUITE_P(AllFiles, TestdataTest, testing::ValuesIn(CaseNames()),
                         [](const testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

TEST(TestdataTest, HasAtLeastThirtyPrograms) { EXPECT_GE(CaseNames().size(), 30u); }

}  // namespace
}  // namespace vkspmd::interp
