// Shape of an IR value: element counts, printing and comparison.
// Layouts are always default row-major, so printing one is a pure function of the rank.
#include "src/ir/shape.h"

#include "absl/strings/str_join.h"
#include "fmt/format.h"

namespace vkspmd::ir {

std::string JoinWithIndexComments(const std::vector<std::string>& parts) {
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) text += ", ";
    if (i > 0 && i % 5 == 0) text += fmt::format("/*index={}*/", i);
    text += parts[i];
  }
  return text;
}

Shape Shape::Tuple(std::vector<Shape> elements) {
  Shape shape;
  shape.is_tuple_ = true;
  shape.tuple_elements_ = std::move(elements);
  return shape;
}

int64_t Shape::ElementCount() const {
  int64_t count = 1;
  for (int64_t dimension : dimensions_) count *= dimension;
  return count;
}

std::string Shape::ToString() const {
  if (is_tuple_) {
    std::vector<std::string> parts;
    for (const Shape& element : tuple_elements_) parts.push_back(element.ToString());
    return fmt::format("({})", JoinWithIndexComments(parts));
  }
  return fmt::format("{}[{}]", DTypeName(dtype_), absl::StrJoin(dimensions_, ","));
}

std::string Shape::ToStringWithLayout() const {
  if (is_tuple_) {
    std::vector<std::string> parts;
    for (const Shape& element : tuple_elements_) parts.push_back(element.ToStringWithLayout());
    return fmt::format("({})", JoinWithIndexComments(parts));
  }
  if (dimensions_.empty()) return ToString();
  std::vector<int64_t> minor_to_major;
  for (int64_t i = rank() - 1; i >= 0; --i) minor_to_major.push_back(i);
  return fmt::format("{}{{{}}}", ToString(), absl::StrJoin(minor_to_major, ","));
}

bool Shape::operator==(const Shape& other) const {
  if (is_tuple_ != other.is_tuple_) return false;
  if (is_tuple_) return tuple_elements_ == other.tuple_elements_;
  return dtype_ == other.dtype_ && dimensions_ == other.dimensions_;
}

int64_t Product(absl::Span<const int64_t> values) {
  int64_t product = 1;
  for (int64_t value : values) product *= value;
  return product;
}

std::vector<int64_t> RowMajorStrides(absl::Span<const int64_t> dimensions) {
  std::vector<int64_t> strides(dimensions.size(), 1);
  for (int64_t i = static_cast<int64_t>(dimensions.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dimensions[i + 1];
  }
  return strides;
}

bool NextIndex(absl::Span<const int64_t> dimensions, std::vector<int64_t>& index) {
  for (int64_t i = static_cast<int64_t>(dimensions.size()) - 1; i >= 0; --i) {
    if (++index[i] < dimensions[i]) return true;
    index[i] = 0;
  }
  return false;
}

}  // namespace vkspmd::ir
