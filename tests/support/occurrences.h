// How many times a string occurs in generated text (GLSL, plans): tests pin how often a kernel
// calls, declares or loads something.
#pragma once

#include <string>

namespace vkspmd::testing {

// Occurrences of `needle` in `text`, overlapping ones included.
inline int Occurrences(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

}  // namespace vkspmd::testing
