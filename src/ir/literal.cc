// Literal: storage, type-generic element access and XLA's constant text form.
// Floats print as the shortest text that reads back to the same value.
#include "src/ir/literal.h"

#include <cmath>
#include <cstdlib>
#include <functional>

#include "absl/strings/str_join.h"
#include "fmt/format.h"

namespace vkspmd::ir {

Literal::Literal(const Shape& shape) : shape_(shape) {
  if (shape.IsTuple()) {
    for (const Shape& element : shape.tuple_elements()) tuple_elements_.emplace_back(element);
    return;
  }
  bytes_.assign(shape.ElementCount() * DTypeByteSize(shape.dtype()), 0);
}

Literal Literal::Tuple(std::vector<Literal> elements) {
  std::vector<Shape> shapes;
  for (const Literal& element : elements) shapes.push_back(element.shape());
  Literal literal(Shape::Tuple(std::move(shapes)));
  literal.tuple_elements_ = std::move(elements);
  return literal;
}

double Literal::GetAsDouble(int64_t i) const {
  switch (dtype()) {
    case DType::kF16:
      return HalfBitsToFloat(Get<uint16_t>(i));
    case DType::kBF16:
      return BFloat16BitsToFloat(Get<uint16_t>(i));
    case DType::kF32:
      return Get<float>(i);
    case DType::kF64:
      return Get<double>(i);
    default:
      return IsSignedInteger(dtype()) ? static_cast<double>(GetAsInt64(i))
                                      : static_cast<double>(GetAsUint64(i));
  }
}

int64_t Literal::GetAsInt64(int64_t i) const {
  switch (dtype()) {
    case DType::kS8:
      return Get<int8_t>(i);
    case DType::kS16:
      return Get<int16_t>(i);
    case DType::kS32:
      return Get<int32_t>(i);
    case DType::kS64:
      return Get<int64_t>(i);
    default:
      return IsFloat(dtype()) ? static_cast<int64_t>(GetAsDouble(i))
                              : static_cast<int64_t>(GetAsUint64(i));
  }
}

uint64_t Literal::GetAsUint64(int64_t i) const {
  switch (dtype()) {
    case DType::kPred:
      return Get<uint8_t>(i) != 0 ? 1 : 0;
    case DType::kU8:
      return Get<uint8_t>(i);
    case DType::kU16:
      return Get<uint16_t>(i);
    case DType::kU32:
      return Get<uint32_t>(i);
    case DType::kU64:
      return Get<uint64_t>(i);
    default:
      return IsFloat(dtype()) ? static_cast<uint64_t>(GetAsDouble(i))
                              : static_cast<uint64_t>(GetAsInt64(i));
  }
}

void Literal::SetFromDouble(int64_t i, double value) {
  switch (dtype()) {
    case DType::kF16:
      return Set<uint16_t>(i, FloatToHalfBits(static_cast<float>(value)));
    case DType::kBF16:
      return Set<uint16_t>(i, FloatToBFloat16Bits(static_cast<float>(value)));
    case DType::kF32:
      return Set<float>(i, static_cast<float>(value));
    case DType::kF64:
      return Set<double>(i, value);
    case DType::kPred:
      return Set<uint8_t>(i, value != 0 ? 1 : 0);
    default:
      return SetFromInt64(i, static_cast<int64_t>(value));
  }
}

void Literal::SetFromInt64(int64_t i, int64_t value) {
  SetFromUint64(i, static_cast<uint64_t>(value));
  if (IsFloat(dtype())) SetFromDouble(i, static_cast<double>(value));
}

void Literal::SetFromUint64(int64_t i, uint64_t value) {
  switch (dtype()) {
    case DType::kPred:
      return Set<uint8_t>(i, value != 0 ? 1 : 0);
    case DType::kS8:
    case DType::kU8:
      return Set<uint8_t>(i, static_cast<uint8_t>(value));
    case DType::kS16:
    case DType::kU16:
      return Set<uint16_t>(i, static_cast<uint16_t>(value));
    case DType::kS32:
    case DType::kU32:
      return Set<uint32_t>(i, static_cast<uint32_t>(value));
    case DType::kS64:
    case DType::kU64:
      return Set<uint64_t>(i, value);
    default:
      return SetFromDouble(i, static_cast<double>(value));
  }
}

std::string Literal::ElementToString(int64_t i) const {
  if (dtype() == DType::kPred) return Get<uint8_t>(i) != 0 ? "true" : "false";
  if (IsSignedInteger(dtype())) return fmt::format("{}", GetAsInt64(i));
  if (IsUnsignedInteger(dtype())) return fmt::format("{}", GetAsUint64(i));
  const double value = GetAsDouble(i);
  if (std::isnan(value)) return std::signbit(value) ? "-nan" : "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  if (dtype() == DType::kF64) return fmt::format("{}", value);
  if (dtype() == DType::kF32) return fmt::format("{}", static_cast<float>(value));
  // f16 and bf16: the fewest digits that read back to the same 16 bits, as XLA prints them.
  const uint16_t bits = Get<uint16_t>(i);
  for (int digits = 1; digits < 10; ++digits) {
    const std::string text = fmt::format("{:.{}g}", value, digits);
    const float parsed = std::strtof(text.c_str(), nullptr);
    const uint16_t reparsed =
        dtype() == DType::kF16 ? FloatToHalfBits(parsed) : FloatToBFloat16Bits(parsed);
    if (reparsed == bits) return text;
  }
  return fmt::format("{}", static_cast<float>(value));
}

std::string Literal::ValuesToString() const {
  if (shape_.IsTuple()) {
    std::vector<std::string> parts;
    for (const Literal& element : tuple_elements_) parts.push_back(element.ValuesToString());
    return fmt::format("({})", absl::StrJoin(parts, ", "));
  }
  const int64_t rank = shape_.rank();
  if (rank == 0) return ElementToString(0);
  // Recursive over dims: the innermost dim prints "{a, b}", outer ones "{ x, y }".
  const std::vector<int64_t> strides = RowMajorStrides(shape_.dimensions());
  std::function<std::string(int64_t, int64_t)> print_dim = [&](int64_t dim, int64_t offset) {
    std::vector<std::string> parts;
    for (int64_t k = 0; k < shape_.dimension(dim); ++k) {
      const int64_t position = offset + k * strides[dim];
      parts.push_back(dim + 1 == rank ? ElementToString(position) : print_dim(dim + 1, position));
    }
    if (dim + 1 == rank || parts.empty()) return fmt::format("{{{}}}", absl::StrJoin(parts, ", "));
    return fmt::format("{{ {} }}", absl::StrJoin(parts, ", "));
  };
  return print_dim(0, 0);
}

bool Literal::operator==(const Literal& other) const {
  return shape_ == other.shape_ && bytes_ == other.bytes_ &&
         tuple_elements_ == other.tuple_elements_;
}

}  // namespace vkspmd::ir
