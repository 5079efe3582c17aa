// What the CPU-only codegen tests share: a hand-filled target like lavapipe, and testdata text.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "src/codegen/target_info.h"

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

}  // namespace vkspmd::codegen
