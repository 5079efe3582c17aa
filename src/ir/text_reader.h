// Token stream over HLO text with the value grammars the parser shares: integers, integer lists,
// shapes with layouts, literals, device arrays, replica groups and shardings. Errors carry
// line:col.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/ir/instruction.h"
#include "src/ir/lexer.h"

namespace vkspmd::ir {

// The layout written after an array shape: the minor-to-major order (the default one when none
// is written) and whether tiles were given.
struct ParsedLayout {
  std::vector<int64_t> minor_to_major;
  bool tiled = false;
};

class TextReader {
 public:
  explicit TextReader(std::string_view text) : lexer_(text) { Advance(); }

  const Token& current() const { return current_; }
  void Advance() { current_ = lexer_.Next(); }
  bool AtEnd() const { return current_.kind == TokenKind::kEnd; }
  bool IsPunct(std::string_view text) const {
    return current_.kind == TokenKind::kPunct && current_.text == text;
  }
  bool IsWord(std::string_view text) const {
    return current_.kind == TokenKind::kWord && current_.text == text;
  }
  // Consumes the punctuation if it is next.
  bool TryConsume(std::string_view punct);

  // "L:C: message" at the current token (or at `token`).
  absl::Status Error(std::string_view message) const { return ErrorAt(current_, message); }
  absl::Status ErrorAt(const Token& token, std::string_view message) const;
  // "L:C: expected WHAT, got 'TOKEN'".
  absl::Status Expected(std::string_view what) const;
  absl::Status ExpectPunct(std::string_view punct);
  absl::StatusOr<std::string> ReadWord(std::string_view what);
  // A name, with or without its leading '%'.
  absl::StatusOr<std::string> ReadName();
  absl::StatusOr<int64_t> ReadInteger();
  absl::StatusOr<bool> ReadBool();
  // "{1,2,3}" (possibly empty).
  absl::StatusOr<std::vector<int64_t>> ReadIntegerList();
  // "[1,2,3]" (possibly empty).
  absl::StatusOr<std::vector<int64_t>> ReadBracketedIntegers();

  // "f32[8,16]{1,0}", "s32[]", "(f32[2], pred[])", "f32[8,128]{1,0:T(8,128)S(1)}". Values do not
  // depend on layouts, so any permutation is accepted; when `layout` is given it receives the
  // minor-to-major order of an array shape (the default one when none is written), for the few
  // ops whose meaning depends on it (bitcast).
  absl::StatusOr<Shape> ReadShape(ParsedLayout* layout = nullptr);
  // Constant body for `shape`: "1", "{1, 2}", "{ {1}, {2} }", "(1, {2})".
  absl::StatusOr<Literal> ReadLiteral(const Shape& shape);
  // "[2,2]0,1,2,3" or "[2,2]<=[4]" or "[2,2]<=[2,2]T(1,0)".
  absl::StatusOr<DeviceArray> ReadDeviceArray();
  // "{{0,1},{2,3}}" or the iota form "[2,2]<=[4]".
  absl::StatusOr<ReplicaGroups> ReadReplicaGroups();
  // "{replicated}", "{devices=[2,1]0,1}", "{{replicated}, {manual}}", ...
  absl::StatusOr<Sharding> ReadSharding();
  // Skips one attribute value whose meaning is ignored: a braced group, a string or a word.
  absl::Status SkipValue();
  // The tokens of the value SkipValue would skip (a word, a string, or a {...} group).
  absl::StatusOr<std::vector<Token>> ReadValueTokens();

 private:
  absl::Status ReadLiteralElements(const Shape& shape, size_t dimension, Literal& literal,
                                   int64_t& next_index);
  absl::Status ReadElement(Literal& literal, int64_t index);
  absl::StatusOr<Sharding> ReadShardingBody(int depth);
  absl::Status EnterNesting();
  // Returns whether tiles (T(...)) were among the annotations.
  absl::StatusOr<bool> SkipLayoutAnnotations();

  Lexer lexer_;
  Token current_;
  int depth_ = 0;
};

// Largest element count a parsed shape may have, so that malformed text cannot ask for absurd
// allocations.
inline constexpr int64_t kMaxParsedElements = int64_t{1} << 40;

}  // namespace vkspmd::ir
