#include "src/base/formatting.h"

namespace vkspmd::base {

std::string EscapeControlBytes(std::string_view text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f) {
      escaped += fmt::format("\\x{:02x}", byte);
    } else {
      escaped += c;
    }
  }
  return escaped;
}

}  // namespace vkspmd::base
