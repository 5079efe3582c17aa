// tests/testdata/dumps: HLO text as JAX and PyTorch/XLA dump it (pre-optimisation, compiled, SPMD).
// Each program parses and verifies with its fusions, calls and async pairs rewritten into IR
// ops, prints to text that reads back the same, and evaluates on the CPU reference to the
// outputs NumPy computed (generate.py beside the programs).
#include <cmath>
#include <filesystem>

#include "gtest/gtest.h"
#include "src/interp/evaluator.h"
#include "src/io/npy.h"
#include "src/ir/parser.h"
#include "src/ir/printer.h"
#include "tests/exec/testdata_programs.h"

namespace vkspmd::ir {
namespace {

namespace fs = std::filesystem;

const fs::path kDumps = fs::path(VKSPMD_TESTDATA_DIR) / "dumps";

std::vector<vkspmd::testing::TestdataProgram> Programs() {
  return vkspmd::testing::ReadTestdataPrograms(kDumps.string());
}

std::vector<std::string> CaseNames() {
  std::vector<std::string> names;
  for (const vkspmd::testing::TestdataProgram& program : Programs()) {
    names.push_back(program.path.stem().string());
  }
  return names;
}

std::string Text(const std::string& name) {
  for (const vkspmd::testing::TestdataProgram& program : Programs()) {
    if (program.path.stem() == name) return program.text;
  }
  return "";
}

std::vector<Literal> LoadArguments(const std::string& prefix) {
  std::vector<Literal> arguments;
  for (int k = 0;; ++k) {
    const fs::path path = kDumps / (prefix + ".arg" + std::to_string(k) + ".npy");
    if (!fs::exists(path)) break;
    absl::StatusOr<Literal> literal = io::ReadNpyFile(path.string());
    EXPECT_TRUE(literal.ok()) << literal.status();
    if (literal.ok()) arguments.push_back(*literal);
  }
  return arguments;
}

// Float elements within 1e-5 absolute + 1e-5 relative (NaN and Inf must match exactly); other
// types bitwise.
void ExpectClose(const Literal& actual, const Literal& expected, const std::string& what) {
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  for (int64_t i = 0; i < actual.ElementCount(); ++i) {
    if (IsFloat(actual.dtype())) {
      const double a = actual.GetAsDouble(i), e = expected.GetAsDouble(i);
      if (std::isnan(e) || std::isinf(e)) {
        EXPECT_EQ(std::isnan(a), std::isnan(e)) << what << " element " << i;
        if (std::isinf(e)) {
          EXPECT_EQ(a, e) << what << " element " << i;
        }
      } else {
        EXPECT_NEAR(a, e, 1e-5 + 1e-5 * std::fabs(e)) << what << " element " << i;
      }
    } else {
      EXPECT_EQ(actual.GetAsUint64(i), expected.GetAsUint64(i)) << what << " element " << i;
    }
  }
}

void ExpectOutputs(const Literal& actual, const std::string& prefix) {
  if (actual.shape().IsTuple()) {
    for (size_t j = 0; j < actual.tuple_elements().size(); ++j) {
      const std::string file = prefix + ".out." + std::to_string(j) + ".npy";
      absl::StatusOr<Literal> expected = io::ReadNpyFile((kDumps / file).string());
      ASSERT_TRUE(expected.ok()) << expected.status();
      ExpectClose(actual.tuple_elements()[j], *expected, file);
    }
    return;
  }
  absl::StatusOr<Literal> expected = io::ReadNpyFile((kDumps / (prefix + ".out.npy")).string());
  ASSERT_TRUE(expected.ok()) << expected.status();
  ExpectClose(actual, *expected, prefix);
}

class DumpsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DumpsTest, ParsesIntoIrOpsAndPrintsToTextThatReadsBackTheSame) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(Text(GetParam()));
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string printed = PrintModule(**module);
  for (const char* gone : {" fusion(", " call(", "-start(", "-done(", " bitcast(", "calls="}) {
    EXPECT_EQ(printed.find(gone), std::string::npos) << gone << " left in\n" << printed;
  }
  absl::StatusOr<std::unique_ptr<Module>> reparsed = ParseAndVerifyModule(printed);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status() << "\n" << printed;
  EXPECT_EQ(PrintModule(**reparsed), printed);
}

TEST_P(DumpsTest, EvaluatesToTheNumpyResult) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(Text(GetParam()));
  ASSERT_TRUE(module.ok()) << module.status();
  const int64_t devices = (*module)->replica_count() * (*module)->partition_count();
  if (!fs::exists(kDumps / (GetParam() + ".dev0.arg0.npy"))) {
    absl::StatusOr<Literal> result = interp::Evaluate(**module, LoadArguments(GetParam()));
    ASSERT_TRUE(result.ok()) << result.status();
    ExpectOutputs(*result, GetParam());
    return;
  }
  std::vector<std::vector<Literal>> arguments;
  for (int64_t d = 0; d < devices; ++d) {
    arguments.push_back(LoadArguments(GetParam() + ".dev" + std::to_string(d)));
  }
  absl::StatusOr<std::vector<Literal>> results = interp::EvaluateOnDevices(**module, arguments);
  ASSERT_TRUE(results.ok()) << results.status();
  for (int64_t d = 0; d < devices; ++d) {
    ExpectOutputs((*results)[d], GetParam() + ".dev" + std::to_string(d));
  }
}

INSTANTIATE_TEST_SUITE_P(AllDumps, DumpsTest, ::testing::ValuesIn(CaseNames()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

TEST(DumpsTest, HasTheMlpAndTransformerDumps) {
  const std::vector<std::string> names = CaseNames();
  for (const char* name :
       {"jax_mlp_preopt", "jax_mlp_compiled", "torch_xla_mlp", "jax_transformer_block_preopt",
        "jax_embed_block_preopt", "jax_scan_compiled", "jax_cond_compiled", "jax_argsort_compiled",
        "jax_scatter_add_compiled", "torch_xla_embed_block", "torch_xla_embed_block_spmd",
        "torch_xla_while", "torch_xla_cond", "torch_xla_sort_topk", "torch_xla_scatter_add"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
}

// The conds' other branches (JAX's predicate, PyTorch/XLA's x whose sum decides, stored as
// .false.arg0) against NumPy.
TEST(DumpsTest, CondsTakeTheFalseBranch) {
  for (const std::string name : {"jax_cond_compiled", "torch_xla_cond"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(Text(name));
    ASSERT_TRUE(module.ok()) << module.status();
    std::vector<Literal> arguments = LoadArguments(name);
    ASSERT_FALSE(arguments.empty());
    absl::StatusOr<Literal> first = io::ReadNpyFile((kDumps / (name + ".false.arg0.npy")).string());
    ASSERT_TRUE(first.ok()) << first.status();
    arguments[0] = *first;
    absl::StatusOr<Literal> result = interp::Evaluate(**module, arguments);
    ASSERT_TRUE(result.ok()) << result.status();
    ExpectOutputs(*result, name + ".false");
  }
}

// The compiled scan and cond compute what their pre-optimisation dumps (tests/testdata/
// control_flow) compute: those, run on the compiled dumps' inputs, give the same NumPy outputs.
TEST(DumpsTest, PreOptimisationSiblingsGiveTheCompiledDumpsResults) {
  const std::vector<vkspmd::testing::TestdataProgram> siblings =
      vkspmd::testing::ReadTestdataPrograms(VKSPMD_TESTDATA_DIR "/control_flow");
  int compared = 0;
  for (const vkspmd::testing::TestdataProgram& program : siblings) {
    const std::string sibling = program.path.stem().string();
    if (sibling != "scan" && sibling != "cond") continue;
    SCOPED_TRACE(sibling);
    const std::string dump = "jax_" + sibling + "_compiled";
    ++compared;
    absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(program.text);
    ASSERT_TRUE(module.ok()) << module.status();
    absl::StatusOr<Literal> result = interp::Evaluate(**module, LoadArguments(dump));
    ASSERT_TRUE(result.ok()) << result.status();
    ExpectOutputs(*result, dump);
  }
  EXPECT_EQ(compared, 2);
}

}  // namespace
}  // namespace vkspmd::ir
