// An environment variable set for one scope: tests that compile under a VKSPMD_* switch set it
// here, and the variable's previous value (or its absence) comes back when the scope ends, even
// when an assertion returns early.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace vkspmd::testing {

class ScopedEnvironment {
 public:
  ScopedEnvironment(std::string name, const std::string& value) : name_(std::move(name)) {
    if (const char* previous = std::getenv(name_.c_str())) previous_ = previous;
    setenv(name_.c_str(), value.c_str(), 1);
  }
  ~ScopedEnvironment() {
    if (previous_) {
      setenv(name_.c_str(), previous_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  std::string name_;
  std::optional<std::string> previous_;
};

}  // namespace vkspmd::testing
