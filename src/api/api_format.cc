// Printing tensors as PyTorch does: "tensor([[ 1.5000, -2.0000],\n        [ 0.2500,  3.0000]])",
// with summarised ("...") dims when a tensor has more than 1000 elements.
#include <cmath>
#include <cstdio>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "fmt/format.h"
#include "src/api/api_support.h"
#include "vkspmd/tensor.h"

namespace vkspmd {
namespace {

constexpr int64_t kSummaryThreshold = 1000;
constexpr int64_t kEdgeItems = 3;

// How every element of one tensor is written: the same style and width for all.
class ElementFormat {
 public:
  explicit ElementFormat(const HostTensor& value) : value_(value) {
    if (!is_floating_point(value.dtype)) return;
    bool integral = true;
    double largest = 0, smallest = INFINITY;
    for (int64_t i = 0; i < value.numel(); ++i) {
      const double x = value.at<double>(i);
      if (!std::isfinite(x)) continue;
      integral &= x == std::nearbyint(x);
      largest = std::max(largest, std::fabs(x));
      if (x != 0) smallest = std::min(smallest, std::fabs(x));
    }
    style_ = integral && largest < 1e8 ? kIntegral
             : largest >= 1e8 || (smallest < 1e-4 && smallest > 0) || largest / smallest > 1e3
                 ? kScientific
                 : kFixed;
  }

  std::string Text(int64_t i) const {
    switch (value_.dtype) {
      case DType::kBool:
        return value_.at<bool>(i) ? "True" : "False";
      case DType::kInt32:
        return std::to_string(value_.at<int32_t>(i));
      case DType::kUInt32:
        return std::to_string(value_.at<uint32_t>(i));
      case DType::kFloat32:
      case DType::kFloat16:
      case DType::kBFloat16:
        break;
    }
    const double x = value_.at<double>(i);
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    if (style_ == kIntegral) return fmt::format("{:.0f}.", x);
    if (style_ == kScientific) return fmt::format("{:.4e}", x);
    return fmt::format("{:.4f}", x);
  }

 private:
  enum Style { kFixed, kIntegral, kScientific };
  const HostTensor& value_;
  Style style_ = kFixed;
};

class Printer {
 public:
  explicit Printer(const HostTensor& value)
      : value_(value),
        format_(value),
        summarize_(value.numel() > kSummaryThreshold),
        strides_(value.shape.size(), 1) {
    for (int64_t d = static_cast<int64_t>(value.shape.size()) - 2; d >= 0; --d) {
      strides_[d] = strides_[d + 1] * value.shape[d + 1];
    }
    ForEachShown(0, 0, [&](int64_t i) {
      width_ = std::max(width_, static_cast<int64_t>(format_.Text(i).size()));
    });
  }

  std::string Print() const {
    if (value_.shape.empty()) return absl::StrCat("tensor(", format_.Text(0), ")");
    return absl::StrCat("tensor(", Block(0, 0), ")");
  }

 private:
  // The indices of dim `d` that are shown: all, or the first and last kEdgeItems.
  std::vector<int64_t> Shown(size_t d) const {
    std::vector<int64_t> indices;
    const int64_t size = value_.shape[d];
    for (int64_t i = 0; i < size; ++i) {
      if (summarize_ && size > 2 * kEdgeItems && i == kEdgeItems) {
        indices.push_back(-1);  // "..."
        i = size - kEdgeItems - 1;
        continue;
      }
      indices.push_back(i);
    }
    return indices;
  }

  template <typename F>
  void ForEachShown(size_t d, int64_t offset, const F& visit) const {
    if (d == value_.shape.size()) return visit(offset);
    for (int64_t i : Shown(d)) {
      if (i >= 0) ForEachShown(d + 1, offset + i * strides_[d], visit);
    }
  }

  std::string Block(size_t d, int64_t offset) const {
    std::string text = "[";
    const bool innermost = d + 1 == value_.shape.size();
    const std::string indent(7 + d + 1, ' ');
    const std::string separator =
        innermost ? ", "
                  : absl::StrCat(",", std::string(value_.shape.size() - d - 1, '\n'), indent);
    bool first = true;
    for (int64_t i : Shown(d)) {
      if (!first) text += separator;
      first = false;
      if (i < 0) {
        text += " ...";  // PyTorch writes the ellipsis with a leading space.
        continue;
      }
      if (innermost) {
        const std::string element = format_.Text(offset + i);
        text += std::string(width_ - element.size(), ' ') + element;
      } else {
        text += Block(d + 1, offset + i * strides_[d]);
      }
    }
    return text + "]";
  }

  const HostTensor& value_;
  ElementFormat format_;
  bool summarize_;
  std::vector<int64_t> strides_;
  int64_t width_ = 0;
};

}  // namespace

std::string Tensor::to_string(std::source_location where) const {
  const HostTensor value = to_host(where);
  std::string text = Printer(value).Print();
  // PyTorch names the dtype where it is not the default float one it infers from the digits.
  if (value.dtype == DType::kFloat16 || value.dtype == DType::kBFloat16) {
    text.insert(text.size() - 1, absl::StrCat(", dtype=torch.", dtype_name(value.dtype)));
  }
  return text;
}

std::ostream& operator<<(std::ostream& stream, const Tensor& tensor) {
  return stream << tensor.to_string();
}

void print(const Tensor& tensor, std::source_location where) {
  std::cout << tensor.to_string(where) << "\n";
}

}  // namespace vkspmd
