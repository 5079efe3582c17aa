// Literal: a host tensor (shape + row-major bytes, or a tuple of literals). Constants of the IR
// hold one, and the reference evaluator computes on them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "src/base/half_float.h"
#include "src/ir/shape.h"

namespace vkspmd::ir {

class Literal {
 public:
  // An f32 scalar zero.
  Literal() : Literal(Shape::Scalar(DType::kF32)) {}
  // Zero-filled (every tuple element too).
  explicit Literal(const Shape& shape);
  static Literal Tuple(std::vector<Literal> elements);

  // Typed constructors for code and tests; T must be the storage type of `type`
  // (pred: uint8_t, f16/bf16: uint16_t bits).
  template <typename T>
  static Literal Create(DType type, std::vector<int64_t> dimensions, const std::vector<T>& values) {
    Literal literal(Shape(type, std::move(dimensions)));
    const size_t size = std::min(literal.bytes_.size(), values.size() * sizeof(T));
    if (size > 0) std::memcpy(literal.bytes_.data(), values.data(), size);
    return literal;
  }

  const Shape& shape() const { return shape_; }
  DType dtype() const { return shape_.dtype(); }
  int64_t ElementCount() const { return shape_.ElementCount(); }
  const std::vector<Literal>& tuple_elements() const { return tuple_elements_; }
  std::vector<Literal>& tuple_elements() { return tuple_elements_; }

  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes_.data());
  }
  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(bytes_.data());
  }
  template <typename T>
  T Get(int64_t linear_index) const {
    T value;
    std::memcpy(&value, bytes_.data() + linear_index * sizeof(T), sizeof(T));
    return value;
  }
  template <typename T>
  void Set(int64_t linear_index, T value) {
    std::memcpy(bytes_.data() + linear_index * sizeof(T), &value, sizeof(T));
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  std::vector<uint8_t>& bytes() { return bytes_; }

  // Type-generic element access: floats (f16/bf16 rounded to nearest even), integers (wrapped to
  // the element type), pred (nonzero is true).
  double GetAsDouble(int64_t linear_index) const;
  int64_t GetAsInt64(int64_t linear_index) const;
  uint64_t GetAsUint64(int64_t linear_index) const;
  void SetFromDouble(int64_t linear_index, double value);
  void SetFromInt64(int64_t linear_index, int64_t value);
  void SetFromUint64(int64_t linear_index, uint64_t value);

  // One element as XLA prints it: "1", "0.5", "-inf", "nan", "true".
  std::string ElementToString(int64_t linear_index) const;
  // The body of a constant: "1" for rank 0, "{1, 2}", "{ {1, 2}, {3, 4} }", "(1, {2})" for tuples.
  std::string ValuesToString() const;

  // Same shape and the same bytes (so NaNs with equal bits compare equal).
  bool operator==(const Literal& other) const;
  bool operator!=(const Literal& other) const { return !(*this == other); }

 private:
  Shape shape_;
  std::vector<uint8_t> bytes_;
  std::vector<Literal> tuple_elements_;
};

// IEEE half and bfloat16 conversions with round-to-nearest-even.
using base::BFloat16BitsToFloat;
using base::FloatToBFloat16Bits;
using base::FloatToHalfBits;
using base::HalfBitsToFloat;

}  // namespace vkspmd::ir
