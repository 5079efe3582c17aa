// Tokenizer for HLO text. Words are maximal runs of name characters so that HLO's compound
// tokens (names with dots and dashes, padding specs, numbers with exponents) stay whole.
#include "src/ir/lexer.h"

#include <cctype>

#include "absl/strings/escaping.h"

namespace vkspmd::ir {
namespace {

bool IsWordStart(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '%' || c == '.';
}

bool IsWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}

}  // namespace

void Lexer::Advance() {
  if (input_[position_] == '\n') {
    ++line_;
    column_ = 1;
  } else {
    ++column_;
  }
  ++position_;
}

void Lexer::SkipSpaceAndComments() {
  while (position_ < input_.size()) {
    const char c = Peek();
    if (std::isspace(static_cast<unsigned char>(c))) {
      Advance();
    } else if (c == '/' && Peek(1) == '/') {
      while (position_ < input_.size() && Peek() != '\n') Advance();
    } else if (c == '/' && Peek(1) == '*') {
      const size_t end = input_.find("*/", position_ + 2);
      if (end == std::string_view::npos) return;  // Next() reports the unterminated comment
      while (position_ < end + 2) Advance();
    } else {
      return;
    }
  }
}

Token Lexer::Next() {
  SkipSpaceAndComments();
  Token token;
  token.line = line_;
  token.column = column_;
  if (position_ >= input_.size()) return token;
  const char c = Peek();
  token.kind = TokenKind::kPunct;
  if (c == '/' && Peek(1) == '*') {
    token.text = "/*";
    position_ = input_.size();
    return token;
  }
  if (c == '"') {
    Advance();
    const size_t start = position_;
    while (position_ < input_.size() && Peek() != '"' && Peek() != '\n') {
      if (Peek() == '\\' && position_ + 1 < input_.size() && Peek(1) != '\n') Advance();
      Advance();
    }
    std::string value;
    // C escapes, as the printer writes them; an invalid escape counts as unterminated.
    if (Peek() != '"' ||
        !absl::CUnescape(absl::string_view(input_.data() + start, position_ - start), &value)) {
      token.text = "\"";
      return token;
    }
    Advance();
    token.kind = TokenKind::kString;
    token.text = std::move(value);
    return token;
  }
  if ((c == '-' && Peek(1) == '>') || (c == '<' && Peek(1) == '=')) {
    token.text = std::string(input_.substr(position_, 2));
    Advance();
    Advance();
    return token;
  }
  const bool negative_number = c == '-' && (std::isdigit(static_cast<unsigned char>(Peek(1))) ||
                                            Peek(1) == 'i' || Peek(1) == 'n' || Peek(1) == '.');
  if (IsWordStart(c) || negative_number) {
    const size_t start = position_;
    Advance();
    while (position_ < input_.size()) {
      const char next = Peek();
      // A '+' continues a word only as an exponent sign ("1e+10").
      const bool exponent_sign =
          next == '+' && (input_[position_ - 1] == 'e' || input_[position_ - 1] == 'E');
      if (!IsWordChar(next) && !exponent_sign) break;
      if (next == '-' && Peek(1) == '>') break;
      Advance();
    }
    token.kind = TokenKind::kWord;
    token.text = std::string(input_.substr(start, position_ - start));
    return token;
  }
  token.text = std::string(1, c);
  Advance();
  return token;
}

}  // namespace vkspmd::ir
