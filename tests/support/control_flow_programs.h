// The while/conditional programs of tests/testdata/control_flow (written as JAX dumps them), read
// and verified for the tests of the CPU reference, the lowering, the partitioner and the devices.
#pragma once

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "src/ir/literal.h"
#include "src/ir/parser.h"

namespace vkspmd::testing {

// The text of tests/testdata/control_flow/NAME.hlo (VKSPMD_TESTDATA_DIR is the testdata folder).
inline std::string ControlFlowProgramText(const std::string& name) {
  std::ifstream file(std::filesystem::path(VKSPMD_TESTDATA_DIR) / "control_flow" / (name + ".hlo"));
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// `text` parsed and verified; nullptr (and a test failure) when it is not.
inline std::unique_ptr<ir::Module> ParseVerified(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  EXPECT_TRUE(module.ok()) << module.status() << "\n" << text;
  return module.ok() ? std::move(*module) : nullptr;
}

inline ir::Literal IntegerScalar(ir::DType type, int64_t value) {
  ir::Literal literal(ir::Shape::Scalar(type));
  literal.SetFromInt64(0, value);
  return literal;
}

}  // namespace vkspmd::testing
