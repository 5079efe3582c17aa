// PartitionSpec text form, resolution against a mesh, and conversion to HLO shardings.
#include "src/spmd/partition_spec.h"

#include <cctype>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "fmt/format.h"

namespace vkspmd::spmd {
namespace {

std::string AxisRefToString(const AxisRef& axis) {
  if (const int64_t* index = std::get_if<int64_t>(&axis)) return fmt::format("{}", *index);
  return fmt::format("'{}'", std::get<std::string>(axis));
}

// A tiny reader for "(a, (b, c), None)".
class SpecReader {
 public:
  explicit SpecReader(std::string_view text) : text_(text) {}

  absl::StatusOr<PartitionSpec> Read() {
    SkipSpaces();
    const bool parenthesized = Consume('(');
    std::vector<std::vector<AxisRef>> dims;
    SkipSpaces();
    while (position_ < text_.size() && text_[position_] != ')') {
      std::vector<AxisRef> entry;
      if (Consume('(')) {
        while (!Consume(')')) {
          absl::StatusOr<std::optional<AxisRef>> axis = ReadAxis();
          if (!axis.ok()) return axis.status();
          if (axis->has_value()) entry.push_back(**axis);
          Consume(',');
          if (position_ >= text_.size()) return Error("unclosed '('");
        }
      } else {
        absl::StatusOr<std::optional<AxisRef>> axis = ReadAxis();
        if (!axis.ok()) return axis.status();
        if (axis->has_value()) entry.push_back(**axis);
      }
      dims.push_back(std::move(entry));
      SkipSpaces();
      if (!Consume(',')) break;
      SkipSpaces();
    }
    if (parenthesized && !Consume(')')) return Error("expected ')'");
    SkipSpaces();
    if (position_ != text_.size()) return Error("unexpected text");
    return PartitionSpec(std::move(dims));
  }

 private:
  void SkipSpaces() {
    while (position_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[position_]))) {
      ++position_;
    }
  }
  bool Consume(char c) {
    SkipSpaces();
    if (position_ < text_.size() && text_[position_] == c) {
      ++position_;
      return true;
    }
    return false;
  }
  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(fmt::format(
        "partition spec '{}': {} at offset {}", std::string(text_), std::string(what), position_));
  }
  // An axis index, a name (quoted or not), or None / _ (nullopt).
  absl::StatusOr<std::optional<AxisRef>> ReadAxis() {
    SkipSpaces();
    const size_t start = position_;
    const bool quoted =
        position_ < text_.size() && (text_[position_] == '\'' || text_[position_] == '"');
    if (quoted) {
      const char quote = text_[position_++];
      const size_t end = text_.find(quote, position_);
      if (end == std::string_view::npos) return Error("unclosed quote");
      std::string name(text_.substr(position_, end - position_));
      position_ = end + 1;
      return std::optional<AxisRef>(AxisRef(name));
    }
    while (position_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[position_])) || text_[position_] == '_' ||
            text_[position_] == '-')) {
      ++position_;
    }
    const std::string word(text_.substr(start, position_ - start));
    if (word.empty()) return Error("expected an axis, None or a tuple");
    if (word == "None" || word == "_") return std::optional<AxisRef>();
    int64_t index = 0;
    if (absl::SimpleAtoi(word, &index)) return std::optional<AxisRef>(AxisRef(index));
    return std::optional<AxisRef>(AxisRef(word));
  }

  std::string_view text_;
  size_t position_ = 0;
};

}  // namespace

absl::StatusOr<PartitionSpec> PartitionSpec::Parse(std::string_view text) {
  return SpecReader(text).Read();
}

std::string PartitionSpec::ToString() const {
  std::vector<std::string> parts;
  for (const std::vector<AxisRef>& entry : dims_) {
    if (entry.empty()) {
      parts.push_back("None");
    } else if (entry.size() == 1) {
      parts.push_back(AxisRefToString(entry[0]));
    } else {
      std::vector<std::string> axes;
      for (const AxisRef& axis : entry) axes.push_back(AxisRefToString(axis));
      parts.push_back(fmt::format("({})", absl::StrJoin(axes, ", ")));
    }
  }
  return fmt::format("({})", absl::StrJoin(parts, ", "));
}

absl::StatusOr<AxisSharding> ResolvePartitionSpec(const PartitionSpec& spec, const Mesh& mesh,
                                                  int64_t rank) {
  if (spec.rank() != rank) {
    return absl::InvalidArgumentError(
        fmt::format("partition spec {} has {} entries but the tensor has rank {}", spec.ToString(),
                    spec.rank(), rank));
  }
  AxisSharding sharding = AxisSharding::Replicated(rank);
  std::vector<bool> used(mesh.axis_count(), false);
  for (int64_t d = 0; d < rank; ++d) {
    for (const AxisRef& reference : spec.dims()[d]) {
      int64_t axis = 0;
      if (const int64_t* index = std::get_if<int64_t>(&reference)) {
        if (*index < 0 || *index >= mesh.axis_count()) {
          return absl::InvalidArgumentError(
              fmt::format("partition spec {}: mesh axis {} does not exist (mesh {} has {} axes)",
                          spec.ToString(), *index, mesh.ToString(), mesh.axis_count()));
        }
        axis = *index;
      } else {
        absl::StatusOr<int64_t> named = mesh.AxisIndex(std::get<std::string>(reference));
        if (!named.ok()) {
          return absl::InvalidArgumentError(fmt::format("partition spec {}: {}", spec.ToString(),
                                                        std::string(named.status().message())));
        }
        axis = *named;
      }
      if (used[axis]) {
        return absl::InvalidArgumentError(fmt::format("partition spec {} uses mesh axis {} twice",
                                                      spec.ToString(), mesh.AxisLabel(axis)));
      }
      used[axis] = true;
      sharding.dims[d].push_back(axis);
    }
  }
  return sharding;
}

absl::StatusOr<ir::Sharding> PartitionSpecToSharding(const PartitionSpec& spec, const Mesh& mesh,
                                                     int64_t rank) {
  absl::StatusOr<AxisSharding> sharding = ResolvePartitionSpec(spec, mesh, rank);
  if (!sharding.ok()) return sharding.status();
  return ToHloSharding(*sharding, mesh);
}

}  // namespace vkspmd::spmd
