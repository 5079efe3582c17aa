// main() of every device test: pins the test environment (lavapipe, validation on) unless the
// caller already set it, so a test binary run by hand behaves as under ctest.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/support/device_test.h"

int main(int argc, char** argv) {
  for (const char* assignment : {VKSPMD_TEST_DEFAULT_ENVIRONMENT}) {
    std::string text(assignment);
    size_t equals = text.find('=');
    if (equals == std::string::npos) continue;
    setenv(text.substr(0, equals).c_str(), text.substr(equals + 1).c_str(), /*overwrite=*/0);
  }
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  if (vkspmd::testing::DeviceTest::WorkMayStillRun()) {
    std::fflush(nullptr);
    std::_Exit(result);
  }
  return result;
}
