// A while's known trip count and a Sharding custom-call's unspecified dims from backend_config
// (see backend_config.h).
#include "src/ir/backend_config.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"

namespace vkspmd::ir {

absl::StatusOr<std::optional<int64_t>> ReadKnownTripCount(TextReader& reader) {
  const Token start = reader.current();
  VKSPMD_ASSIGN_OR_RETURN(std::vector<Token> tokens, reader.ReadValueTokens());
  if (tokens.size() == 1 && tokens[0].kind == TokenKind::kString) {
    const std::string json = std::move(tokens[0].text);  // the lexer reads it in place
    Lexer lexer(json);
    tokens.clear();
    for (Token token = lexer.Next(); token.kind != TokenKind::kEnd; token = lexer.Next()) {
      tokens.push_back(token);
    }
  }
  auto is = [&](size_t i, TokenKind kind, std::string_view text) {
    return i < tokens.size() && tokens[i].kind == kind && tokens[i].text == text;
  };
  std::optional<int64_t> trip_count;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!is(i, TokenKind::kString, "known_trip_count")) continue;
    // "known_trip_count" : { "n" : "K" }
    const bool shaped = is(i + 1, TokenKind::kPunct, ":") && is(i + 2, TokenKind::kPunct, "{") &&
                        is(i + 3, TokenKind::kString, "n") && is(i + 4, TokenKind::kPunct, ":") &&
                        i + 5 < tokens.size();
    if (!shaped) {
      return reader.ErrorAt(start, "backend_config: known_trip_count must be {\"n\":\"K\"}");
    }
    int64_t n = 0;
    if (!absl::SimpleAtoi(tokens[i + 5].text, &n) || n < 0) {
      return reader.ErrorAt(
          tokens[i + 5],
          fmt::format("backend_config: known_trip_count n must be an integer >= 0, not '{}'",
                      tokens[i + 5].text));
    }
    trip_count = n;
  }
  return trip_count;
}

std::string KnownTripCountConfig(int64_t trip_count) {
  return fmt::format("{{\"known_trip_count\":{{\"n\":\"{}\"}}}}", trip_count);
}

absl::StatusOr<std::vector<int64_t>> ReadUnspecifiedDims(TextReader& reader, int64_t rank) {
  const Token start = reader.current();
  VKSPMD_ASSIGN_OR_RETURN(std::vector<Token> tokens, reader.ReadValueTokens());
  std::vector<int64_t> dims;
  if (tokens.size() != 1 || tokens[0].kind != TokenKind::kString) return dims;
  const std::string& value = tokens[0].text;
  constexpr std::string_view kKey = "unspecified_dims=";
  if (value.compare(0, kKey.size(), kKey) != 0) return dims;
  const auto malformed = [&](std::string_view why) {
    return reader.ErrorAt(start, fmt::format("backend_config \"{}\": {}", value, why));
  };
  const std::string list = value.substr(kKey.size());
  if (list.size() < 2 || list.front() != '[' || list.back() != ']') {
    return malformed("unspecified_dims must be a list [d0,d1,...]");
  }
  for (absl::string_view part : absl::StrSplit(absl::string_view(list).substr(1, list.size() - 2),
                                               ',', absl::SkipWhitespace())) {
    int64_t dim = 0;
    if (!absl::SimpleAtoi(part, &dim) || dim < 0 || dim >= rank) {
      return malformed(
          fmt::format("'{}' is not a dim of a rank-{} value", std::string(part), rank));
    }
    if (std::find(dims.begin(), dims.end(), dim) != dims.end()) {
      return malformed(fmt::format("dim {} is listed twice", dim));
    }
    dims.push_back(dim);
  }
  std::sort(dims.begin(), dims.end());
  return dims;
}

std::string UnspecifiedDimsConfig(const std::vector<int64_t>& dims) {
  return fmt::format("\"unspecified_dims=[{}]\"", absl::StrJoin(dims, ","));
}

}  // namespace vkspmd::ir
