// What the CPU-only codegen tests share: a hand-filled target like lavapipe, testdata text, and
// planning a module given as text.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "src/codegen/planner.h"
#include "src/codegen/target_info.h"
#include "src/ir/parser.h"

namespace vkspmd::codegen {

// Lavapipe as exec describes it: subgroups of 8 with shuffles, byte predicates, 8- and 16-bit
// buffers, 128 MiB binding ranges, 16 buffers per stage.
inline TargetInfo LavapipeTarget() {
  TargetInfo target;
  target.subgroup_size = 8;
  target.subgroup_shuffle = true;
  target.byte_predicates = true;
  target.int8_buffers = target.int16_buffers = true;
  target.max_storage_buffer_range = uint64_t{1} << 27;
  target.max_storage_buffers_per_stage = 16;
  return target;
}

// The text of tests/testdata/<name>.hlo.
inline std::string TestdataProgram(const std::string& name) {
  std::ifstream file(absl::StrCat(VKSPMD_TESTDATA_DIR, "/", name, ".hlo"));
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// Parses and plans `text` for `target` (an empty plan and a test failure if either fails);
// `module` keeps the parsed module, which the plan points into.
inline ProgramPlan PlanText(const std::string& text, const TargetInfo& target,
                            std::unique_ptr<ir::Module>& module) {
  absl::StatusOr<std::unique_ptr<ir::Module>> parsed = ir::ParseAndVerifyModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return {};
  module = std::move(*parsed);
  absl::StatusOr<ProgramPlan> plan = PlanKernels(*module, target);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? std::move(*plan) : ProgramPlan{};
}

}  // namespace vkspmd::codegen
