// Formatting helpers every folder may use: fmt printing of abseil's string_view, and escaping the
// bytes of hostile input before a message quotes it.
#pragma once

#include <string>
#include <string_view>

#include "absl/strings/string_view.h"
#include "fmt/format.h"

// Debian's abseil has its own string_view type (not std::string_view); let fmt print it.
template <>
struct fmt::formatter<absl::string_view> : fmt::formatter<fmt::string_view> {
  auto format(absl::string_view text, fmt::format_context& context) const {
    return fmt::formatter<fmt::string_view>::format(fmt::string_view(text.data(), text.size()),
                                                    context);
  }
};

namespace vkspmd::base {

// `text` with control bytes, DEL and bytes above 0x7f written as \xNN, so that a message quoting
// hostile input cannot carry raw bytes (NUL, escape sequences) to a terminal or log.
std::string EscapeControlBytes(std::string_view text);

}  // namespace vkspmd::base
