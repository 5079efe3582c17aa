// Tokenizer for HLO text: words (names, numbers, keywords, "0_1x2_0"), strings and punctuation,
// each with its line:column, skipping whitespace and /* */ and // comments.
#pragma once

#include <string>
#include <string_view>

namespace vkspmd::ir {

enum class TokenKind {
  kWord,    // f32, %add.3, add.3, 12, -1.5e-3, inf, get-tuple-element, 0_1x2_0
  kString,  // "text" (value without quotes, escapes resolved)
  kPunct,   // = , : ( ) { } [ ] -> <= and any other single character
  kEnd,
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;
  int line = 1;
  int column = 1;
};

class Lexer {
 public:
  explicit Lexer(std::string_view input) : input_(input) {}
  // Returns the next token; an unterminated string or comment comes back as a kPunct token whose
  // text starts with the quote or "/*", so the parser reports it where it starts.
  Token Next();

 private:
  void SkipSpaceAndComments();
  char Peek(size_t ahead = 0) const {
    return position_ + ahead < input_.size() ? input_[position_ + ahead] : '\0';
  }
  void Advance();

  std::string_view input_;
  size_t position_ = 0;
  int line_ = 1;
  int column_ = 1;
};

}  // namespace vkspmd::ir
