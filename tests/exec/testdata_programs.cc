// Reading the testdata programs.
#include "tests/exec/testdata_programs.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace vkspmd::testing {

std::vector<TestdataProgram> ReadTestdataPrograms(const std::string& directory) {
  std::vector<TestdataProgram> programs;
  for (const std::filesystem::directory_entry& entry :
       std::filesystem::directory_iterator(directory)) {
    if (entry.path().extension() != ".hlo") continue;
    std::ifstream file(entry.path());
    std::stringstream text;
    text << file.rdbuf();
    programs.push_back(
        {entry.path(), (entry.path().parent_path() / entry.path().stem()).string(), text.str()});
  }
  std::sort(programs.begin(), programs.end(),
            [](const TestdataProgram& a, const TestdataProgram& b) { return a.path < b.path; });
  return programs;
}

std::string ReadTestdataText(const std::string& directory, const std::string& name) {
  std::ifstream file(directory + "/" + name + ".hlo");
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace vkspmd::testing
