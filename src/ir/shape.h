// Shape of an IR value: an array (element type + dimensions, rank 0 allowed, zero-size dims
// allowed, always default row-major layout) or a tuple of shapes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "src/ir/dtype.h"

namespace vkspmd::ir {

class Shape {
 public:
  // An f32 scalar, so a default Shape is a valid value.
  Shape() = default;
  Shape(DType type, std::vector<int64_t> dimensions)
      : dtype_(type), dimensions_(std::move(dimensions)) {}
  static Shape Tuple(std::vector<Shape> elements);
  static Shape Scalar(DType type) { return Shape(type, {}); }

  bool IsTuple() const { return is_tuple_; }
  bool IsArray() const { return !is_tuple_; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dimensions() const { return dimensions_; }
  int64_t dimension(int64_t index) const { return dimensions_[index]; }
  int64_t rank() const { return static_cast<int64_t>(dimensions_.size()); }
  const std::vector<Shape>& tuple_elements() const { return tuple_elements_; }
  // Number of elements of an array shape (1 for rank 0, 0 when any dimension is 0).
  int64_t ElementCount() const;

  // "f32[8,16]" (no layout), "(f32[2], s32[])" for tuples.
  std::string ToString() const;
  // "f32[8,16]{1,0}": XLA's printed form with the default layout; scalars have none.
  std::string ToStringWithLayout() const;

  bool operator==(const Shape& other) const;
  bool operator!=(const Shape& other) const { return !(*this == other); }

 private:
  DType dtype_ = DType::kF32;
  std::vector<int64_t> dimensions_;
  bool is_tuple_ = false;
  std::vector<Shape> tuple_elements_;
};

// "a, b, c, d, e, /*index=5*/f": how XLA joins tuple elements and operand lists, marking every
// fifth position.
std::string JoinWithIndexComments(const std::vector<std::string>& parts);

// The product of `values` (1 for none): an element count from dimensions.
int64_t Product(absl::Span<const int64_t> values);

// Row-major strides in elements of the given dimensions.
std::vector<int64_t> RowMajorStrides(absl::Span<const int64_t> dimensions);

// Advances a row-major multi-index over `dimensions`; returns false after the last index.
bool NextIndex(absl::Span<const int64_t> dimensions, std::vector<int64_t>& index);

}  // namespace vkspmd::ir
