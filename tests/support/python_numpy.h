// Whether an interpreter can import numpy: the safetensors checks read files with numpy alone.
// tools/setup.sh installs Debian's python3-numpy, so in CI this holds; a machine given only the
// build (a lent GPU with another Python) skips those checks instead of failing them.
#pragma once

#include <cstdlib>
#include <string>

namespace vkspmd::testing {

inline bool PythonHasNumpy(const std::string& python) {
  return std::system((python + " -c 'import numpy' > /dev/null 2>&1").c_str()) == 0;
}

}  // namespace vkspmd::testing
