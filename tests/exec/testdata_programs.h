// The HLO programs of tests/testdata, read once for the tests that run all of them.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace vkspmd::testing {

struct TestdataProgram {
  std::filesystem::path path;
  std::string base;  // The path without ".hlo": stored arguments are BASE[.devD].argK.npy.
  std::string text;
};

// Every *.hlo file of `directory`, in name order.
std::vector<TestdataProgram> ReadTestdataPrograms(const std::string& directory);

// The text of `directory`/NAME.hlo (empty if it cannot be read).
std::string ReadTestdataText(const std::string& directory, const std::string& name);

}  // namespace vkspmd::testing
