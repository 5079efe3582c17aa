// Value grammars of HLO text shared by the module parser: numbers, lists, shapes, literals,
// device arrays, replica groups and shardings. Nesting is bounded so hostile text cannot overflow.
#include "src/ir/text_reader.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"

namespace vkspmd::ir {
namespace {

constexpr int kMaxNesting = 64;
constexpr size_t kMaxRank = 64;
constexpr int64_t kMaxDeviceArraySize = int64_t{1} << 20;

// Ends one level of nesting when it goes out of scope.
class NestingGuard {
 public:
  explicit NestingGuard(int& depth) : depth_(depth) {}
  ~NestingGuard() { --depth_; }

 private:
  int& depth_;
};

}  // namespace

absl::Status TextReader::EnterNesting() {
  if (++depth_ > kMaxNesting) return Error("nesting is too deep");
  return absl::OkStatus();
}

bool TextReader::TryConsume(std::string_view punct) {
  if (!IsPunct(punct)) return false;
  Advance();
  return true;
}

absl::Status TextReader::ErrorAt(const Token& token, std::string_view message) const {
  return absl::InvalidArgumentError(fmt::format("{}:{}: {}", token.line, token.column, message));
}

absl::Status TextReader::Expected(std::string_view what) const {
  if (current_.kind == TokenKind::kEnd)
    return Error(fmt::format("expected {}, got end of input", what));
  if (current_.kind == TokenKind::kPunct && current_.text == "\"") {
    return Error("unterminated string");
  }
  if (current_.kind == TokenKind::kPunct && current_.text == "/*") {
    return Error("unterminated comment");
  }
  const std::string shown =
      current_.kind == TokenKind::kString ? "\"" + current_.text + "\"" : current_.text;
  return Error(fmt::format("expected {}, got '{}'", what, shown));
}

absl::Status TextReader::ExpectPunct(std::string_view punct) {
  if (!TryConsume(punct)) return Expected(fmt::format("'{}'", punct));
  return absl::OkStatus();
}

absl::StatusOr<std::string> TextReader::ReadWord(std::string_view what) {
  if (current_.kind != TokenKind::kWord) return Expected(what);
  std::string word = current_.text;
  Advance();
  return word;
}

absl::StatusOr<std::string> TextReader::ReadName() {
  if (current_.kind != TokenKind::kWord) return Expected("a name");
  std::string name = current_.text;
  if (!name.empty() && name[0] == '%') name.erase(0, 1);
  // Names are printed without '%' in signatures, where a leading '-' would not read back.
  if (name.empty() || name[0] == '-') return Expected("a name");
  Advance();
  return name;
}

absl::StatusOr<int64_t> TextReader::ReadInteger() {
  int64_t value = 0;
  if (current_.kind != TokenKind::kWord || !absl::SimpleAtoi(current_.text, &value)) {
    return Expected("an integer");
  }
  Advance();
  return value;
}

absl::StatusOr<bool> TextReader::ReadBool() {
  if (IsWord("true") || IsWord("false")) {
    const bool value = current_.text == "true";
    Advance();
    return value;
  }
  return Expected("true or false");
}

absl::StatusOr<std::vector<int64_t>> TextReader::ReadIntegerList() {
  VKSPMD_RETURN_IF_ERROR(ExpectPunct("{"));
  std::vector<int64_t> values;
  if (TryConsume("}")) return values;
  do {
    VKSPMD_ASSIGN_OR_RETURN(int64_t value, ReadInteger());
    values.push_back(value);
  } while (TryConsume(","));
  VKSPMD_RETURN_IF_ERROR(ExpectPunct("}"));
  return values;
}

absl::StatusOr<std::vector<int64_t>> TextReader::ReadBracketedIntegers() {
  VKSPMD_RETURN_IF_ERROR(ExpectPunct("["));
  std::vector<int64_t> values;
  if (TryConsume("]")) return values;
  do {
    VKSPMD_ASSIGN_OR_RETURN(int64_t value, ReadInteger());
    values.push_back(value);
  } while (TryConsume(","));
  VKSPMD_RETURN_IF_ERROR(ExpectPunct("]"));
  return values;
}

absl::StatusOr<Shape> TextReader::ReadShape(ParsedLayout* layout) {
  VKSPMD_RETURN_IF_ERROR(EnterNesting());
  NestingGuard guard(depth_);
  if (TryConsume("(")) {
    std::vector<Shape> elements;
    if (!TryConsume(")")) {
      do {
        VKSPMD_ASSIGN_OR_RETURN(Shape element, ReadShape());
        elements.push_back(std::move(element));
      } while (TryConsume(","));
      VKSPMD_RETURN_IF_ERROR(ExpectPunct(")"));
    }
    return Shape::Tuple(std::move(elements));
  }
  if (current_.kind != TokenKind::kWord) return Expected("a shape");
  const Token type_token = current_;
  const std::optional<DType> type = DTypeFromName(current_.text);
  if (!type.has_value()) {
    return ErrorAt(type_token, fmt::format("unsupported element type '{}'", current_.text));
  }
  Advance();
  VKSPMD_RETURN_IF_ERROR(ExpectPunct("["));
  std::vector<int64_t> dimensions;
  int64_t element_count = 1;
  if (!TryConsume("]")) {
    do {
      if (IsPunct("<=") || IsPunct("?")) return Error("dynamic dimensions are not supported");
      const Token size_token = current_;
      VKSPMD_ASSIGN_OR_RETURN(int64_t size, ReadInteger());
      if (size < 0) return ErrorAt(size_token, "dimension sizes must be >= 0");
      if (size > 0 && element_count > kMaxParsedElements / size) {
        return ErrorAt(size_token, "shape has too many elements");
      }
      element_count *= size;
      dimensions.push_back(size);
      if (dimensions.size() > kMaxRank) return ErrorAt(size_token, "rank is too large");
    } while (TryConsume(","));
    VKSPMD_RETURN_IF_ERROR(ExpectPunct("]"));
  }
  // A '{' after a computation signature opens the body, not a layout: a layout starts with a
  // dimension number, ':' or '}'.
  Lexer lookahead = lexer_;
  const Token after_brace = lookahead.Next();
  const bool starts_layout = (after_brace.kind == TokenKind::kWord &&
                              std::isdigit(static_cast<unsigned char>(after_brace.text[0]))) ||
                             (after_brace.kind == TokenKind::kPunct &&
                              (after_brace.text == "}" || after_brace.text == ":"));
  std::vector<int64_t> minor_to_major;
  bool tiled = false;
  if (IsPunct("{") && starts_layout) {
    const Token layout_token = current_;
    Advance();
    while (!IsPunct("}") && !IsPunct(":")) {
      VKSPMD_ASSIGN_OR_RETURN(int64_t dimension, ReadInteger());
      minor_to_major.push_back(dimension);
      if (!TryConsume(",")) break;
    }
    if (TryConsume(":")) {
      VKSPMD_ASSIGN_OR_RETURN(tiled, SkipLayoutAnnotations());
    }
    VKSPMD_RETURN_IF_ERROR(ExpectPunct("}"));
    std::vector<bool> seen(dimensions.size(), false);
    bool is_permutation = minor_to_major.size() == dimensions.size();
    for (size_t i = 0; is_permutation && i < minor_to_major.size(); ++i) {
      const int64_t dimension = minor_to_major[i];
      is_permutation =
          dimension >= 0 && dimension < static_cast<int64_t>(dimensions.size()) && !seen[dimension];
      if (is_permutation) seen[dimension] = true;
    }
    if (!is_permutation) {
      return ErrorAt(layout_token,
                     fmt::format("layout {{{}}} is not a permutation of the {} dimensions",
                                 absl::StrJoin(minor_to_major, ","), dimensions.size()));
    }
  } else {
    for (int64_t i = static_cast<int64_t>(dimensions.size()) - 1; i >= 0; --i) {
      minor_to_major.push_back(i);
    }
  }
  if (layout != nullptr) *layout = ParsedLayout{std::move(minor_to_major), tiled};
  return Shape(*type, std::move(dimensions));
}

// After the ':' of a layout: tiles "T(8,128)(2,1)", memory space "S(1)", element size "E(4)",
// index/pointer types "L(s32)" "P(s64)", splits "SC(...)", physical shape "#(...)", dynamic
// metadata "*(...)" and dense dimension kinds "D(D,D)". None changes the logical values; sparse
// dimension kinds would, so they are refused.
absl::StatusOr<bool> TextReader::SkipLayoutAnnotations() {
  bool tiled = false;
  while (!IsPunct("}")) {
    const Token kind_token = current_;
    if (current_.kind == TokenKind::kWord || IsPunct("#") || IsPunct("*")) {
      Advance();
    } else {
      return Expected("a layout annotation like T(8,128) or S(1)");
    }
    if (!IsPunct("(")) {
      return Expected(fmt::format("'(' after layout annotation {}", kind_token.text));
    }
    if (kind_token.text == "T") tiled = true;
    while (IsPunct("(")) {
      int depth = 0;
      do {
        if (AtEnd() || (current_.kind == TokenKind::kPunct &&
                        (current_.text == "\"" || current_.text == "/*"))) {
          return Expected("')'");
        }
        if (IsPunct("(")) ++depth;
        if (IsPunct(")")) --depth;
        if (kind_token.text == "D" && current_.kind == TokenKind::kWord && current_.text != "D") {
          return Error(
              fmt::format("sparse layouts are not supported (dimension kind {})", current_.text));
        }
        Advance();
      } while (depth > 0);
    }
  }
  return tiled;
}

absl::Status TextReader::ReadElement(Literal& literal, int64_t index) {
  if (current_.kind != TokenKind::kWord) return Expected("a constant value");
  const std::string& text = current_.text;
  const DType type = literal.dtype();
  if (type == DType::kPred) {
    if (text == "true" || text == "1") {
      literal.SetFromUint64(index, 1);
    } else if (text == "false" || text == "0") {
      literal.SetFromUint64(index, 0);
    } else {
      return Expected("true or false");
    }
  } else if (IsFloat(type)) {
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) return Expected("a floating-point value");
    literal.SetFromDouble(index, value);
  } else if (IsSignedInteger(type)) {
    int64_t value = 0;
    if (!absl::SimpleAtoi(text, &value)) return Expected("an integer value");
    const int bits = static_cast<int>(DTypeByteSize(type)) * 8;
    if (bits < 64 && (value < -(int64_t{1} << (bits - 1)) || value >= (int64_t{1} << (bits - 1)))) {
      return Error(fmt::format("value {} is out of range for {}", text, DTypeName(type)));
    }
    literal.SetFromInt64(index, value);
  } else {
    uint64_t value = 0;
    if (!absl::SimpleAtoi(text, &value)) return Expected("an unsigned integer value");
    const int bits = static_cast<int>(DTypeByteSize(type)) * 8;
    if (bits < 64 && value >= (uint64_t{1} << bits)) {
      return Error(fmt::format("value {} is out of range for {}", text, DTypeName(type)));
    }
    literal.SetFromUint64(index, value);
  }
  Advance();
  return absl::OkStatus();
}

absl::Status TextReader::ReadLiteralElements(const Shape& shape, size_t dimension, Literal& literal,
                                             int64_t& next_index) {
  VKSPMD_RETURN_IF_ERROR(ExpectPunct("{"));
  const int64_t size = shape.dimension(static_cast<int64_t>(dimension));
  for (int64_t k = 0; k < size; ++k) {
    if (k > 0 && IsPunct("}")) {
      return Error(fmt::format("expected {} elements in dimension {}, got {}", size, dimension, k));
    }
    if (k > 0) VKSPMD_RETURN_IF_ERROR(ExpectPunct(","));
    if (dimension + 1 == static_cast<size_t>(shape.rank())) {
      VKSPMD_RETURN_IF_ERROR(ReadElement(literal, next_index++));
    } else {
      VKSPMD_RETURN_IF_ERROR(ReadLiteralElements(shape, dimension + 1, literal, next_index));
    }
  }
  if (!IsPunct("}")) {
    return Expected(fmt::format("'}}' after {} elements of dimension {}", size, dimension));
  }
  Advance();
  return absl::OkStatus();
}

absl::StatusOr<Literal> TextReader::ReadLiteral(const Shape& shape) {
  VKSPMD_RETURN_IF_ERROR(EnterNesting());
  NestingGuard guard(depth_);
  if (shape.IsTuple()) {
    VKSPMD_RETURN_IF_ERROR(ExpectPunct("("));
    std::vector<Literal> elements;
    for (size_t i = 0; i < shape.tuple_elements().size(); ++i) {
      if (i > 0) VKSPMD_RETURN_IF_ERROR(ExpectPunct(","));
      VKSPMD_ASSIGN_OR_RETURN(Literal element, ReadLiteral(shape.tuple_elements()[i]));
      elements.push_back(std::move(element));
    }
    VKSPMD_RETURN_IF_ERROR(ExpectPunct(")"));
    return Literal::Tuple(std::move(elements));
  }
  if (shape.rank() == 0) {
    Literal literal(shape);
    VKSPMD_RETURN_IF_ERROR(ReadElement(literal, 0));
    return literal;
  }
  if (IsPunct("{")) {
    // XLA elides large constants as "{...}"; the values are then simply not in the text.
    Lexer lookahead = lexer_;
    const Token next = lookahead.Next();
    if (next.kind == TokenKind::kWord && next.text == "...") {
      return Error("constant values were elided ({...}); print the module with large constants");
    }
  }
  // The element count was bounded by ReadShape, but a literal is stored, so bound it harder.
  if (shape.ElementCount() > (int64_t{1} << 28)) return Error("constant is too large");
  Literal literal(shape);
  int64_t next_index = 0;
  VKSPMD_RETURN_IF_ERROR(ReadLiteralElements(shape, 0, literal, next_index));
  return literal;
}

absl::StatusOr<DeviceArray> TextReader::ReadDeviceArray() {
  const Token start = current_;
  DeviceArray array;
  VKSPMD_ASSIGN_OR_RETURN(array.dimensions, ReadBracketedIntegers());
  int64_t count = 1;
  for (int64_t dimension : array.dimensions) {
    if (dimension <= 0 || dimension > kMaxDeviceArraySize ||
        count * dimension > kMaxDeviceArraySize) {
      return ErrorAt(start, "device array dimensions must be in 1..2^20 in all");
    }
    count *= dimension;
  }
  if (TryConsume("<=")) {
    array.is_iota = true;
    VKSPMD_ASSIGN_OR_RETURN(array.iota_reshape_dims, ReadBracketedIntegers());
    if (IsWord("T")) {
      Advance();
      VKSPMD_RETURN_IF_ERROR(ExpectPunct("("));
      do {
        VKSPMD_ASSIGN_OR_RETURN(int64_t axis, ReadInteger());
        array.iota_transpose_perm.push_back(axis);
      } while (TryConsume(","));
      VKSPMD_RETURN_IF_ERROR(ExpectPunct(")"));
    }
  } else {
    for (int64_t i = 0; i < count; ++i) {
      if (i > 0 && !IsPunct(",")) {
        return Error(fmt::format("devices=[{}] needs {} device ids, got {}",
                                 absl::StrJoin(array.dimensions, ","), count, i));
      }
      if (i > 0) Advance();
      VKSPMD_ASSIGN_OR_RETURN(int64_t device, ReadInteger());
      array.device_ids.push_back(device);
    }
  }
  absl::Status valid = array.Validate();
  if (!valid.ok()) return ErrorAt(start, std::string(valid.message()));
  return array;
}

absl::StatusOr<ReplicaGroups> TextReader::ReadReplicaGroups() {
  ReplicaGroups groups;
  if (IsPunct("[")) {
    const Token start = current_;
    VKSPMD_ASSIGN_OR_RETURN(DeviceArray array, ReadDeviceArray());
    if (!array.is_iota || array.dimensions.size() != 2) {
      return ErrorAt(start, "iota replica groups must have the form [groups,size]<=[...]");
    }
    groups.iota = std::move(array);
    return groups;
  }
  VKSPMD_RETURN_IF_ERROR(ExpectPunct("{"));
  if (TryConsume("}")) return groups;
  do {
    VKSPMD_ASSIGN_OR_RETURN(std::vector<int64_t> group, ReadIntegerList());
    groups.groups.push_back(std::move(group));
  } while (TryConsume(","));
  VKSPMD_RETURN_IF_ERROR(ExpectPunct("}"));
  return groups;
}

absl::StatusOr<Sharding> TextReader::ReadSharding() { return ReadShardingBody(0); }

absl::StatusOr<Sharding> TextReader::ReadShardingBody(int depth) {
  if (depth > kMaxNesting) return Error("nesting is too deep");
  VKSPMD_RETURN_IF_ERROR(ExpectPunct("{"));
  if (IsPunct("{") || IsPunct("}")) {
    std::vector<Sharding> elements;
    if (!TryConsume("}")) {
      do {
        VKSPMD_ASSIGN_OR_RETURN(Sharding element, ReadShardingBody(depth + 1));
        elements.push_back(std::move(element));
      } while (TryConsume(","));
      VKSPMD_RETURN_IF_ERROR(ExpectPunct("}"));
    }
    return Sharding::Tuple(std::move(elements));
  }
  Sharding sharding;
  const Token kind_token = current_;
  VKSPMD_ASSIGN_OR_RETURN(std::string kind, ReadWord("a sharding kind"));
  if (kind == "replicated") {
    sharding = Sharding::Replicated();
  } else if (kind == "manual") {
    sharding = Sharding::Manual();
  } else if (kind == "maximal") {
    if (!IsWord("device")) return Expected("'device='");
    Advance();
    VKSPMD_RETURN_IF_ERROR(ExpectPunct("="));
    const Token device_token = current_;
    VKSPMD_ASSIGN_OR_RETURN(int64_t device, ReadInteger());
    if (device < 0) return ErrorAt(device_token, "maximal device must not be negative");
    sharding = Sharding::Maximal(device);
  } else if (kind == "devices") {
    VKSPMD_RETURN_IF_ERROR(ExpectPunct("="));
    VKSPMD_ASSIGN_OR_RETURN(DeviceArray tiles, ReadDeviceArray());
    bool last_tile_dim_replicate = false;
    std::vector<SubgroupType> subgroup_types;
    if (IsWord("last_tile_dim_replicate")) {
      Advance();
      last_tile_dim_replicate = true;
    } else if (IsWord("last_tile_dims")) {
      Advance();
      VKSPMD_RETURN_IF_ERROR(ExpectPunct("="));
      VKSPMD_RETURN_IF_ERROR(ExpectPunct("{"));
      do {
        VKSPMD_ASSIGN_OR_RETURN(std::string type, ReadWord("replicated or manual"));
        if (type == "replicated") {
          subgroup_types.push_back(SubgroupType::kReplicated);
        } else if (type == "manual") {
          subgroup_types.push_back(SubgroupType::kManual);
        } else {
          return Error(fmt::format("unsupported subgroup type '{}'", type));
        }
      } while (TryConsume(","));
      VKSPMD_RETURN_IF_ERROR(ExpectPunct("}"));
    }
    const int64_t trailing =
        (last_tile_dim_replicate ? 1 : 0) + static_cast<int64_t>(subgroup_types.size());
    if (static_cast<int64_t>(tiles.dimensions.size()) < trailing) {
      return ErrorAt(kind_token, "tile assignment has fewer dims than its replication dims");
    }
    sharding =
        Sharding::Tiled(std::move(tiles), last_tile_dim_replicate, std::move(subgroup_types));
  } else {
    return ErrorAt(kind_token, fmt::format("unsupported sharding '{}'", kind));
  }
  // Sharding metadata says where it came from, not what it means.
  while (IsWord("metadata")) {
    Advance();
    VKSPMD_RETURN_IF_ERROR(ExpectPunct("="));
    VKSPMD_RETURN_IF_ERROR(SkipValue());
  }
  VKSPMD_RETURN_IF_ERROR(ExpectPunct("}"));
  return sharding;
}

absl::Status TextReader::SkipValue() { return ReadValueTokens().status(); }

absl::StatusOr<std::vector<Token>> TextReader::ReadValueTokens() {
  std::vector<Token> tokens;
  if (current_.kind == TokenKind::kWord || current_.kind == TokenKind::kString) {
    tokens.push_back(current_);
    Advance();
    return tokens;
  }
  if (!IsPunct("{")) return Expected("an attribute value");
  int depth = 0;
  do {
    if (AtEnd()) return Expected("'}'");
    if (current_.kind == TokenKind::kPunct && (current_.text == "\"" || current_.text == "/*")) {
      return Expected("'}'");
    }
    if (IsPunct("{")) ++depth;
    if (IsPunct("}")) --depth;
    tokens.push_back(current_);
    Advance();
  } while (depth > 0);
  return tokens;
}

}  // namespace vkspmd::ir
