// Initialisation distributions and the argument checks shared by the layers.
#include "src/nn/init.h"

#include "absl/strings/str_cat.h"
#include "vkspmd/ops.h"

namespace vkspmd::nn {

Tensor Uniform(std::vector<int64_t> shape, double bound) {
  // -bound + 2 bound u, as PyTorch's uniform_ computes from + (to - from) u.
  return rand(std::move(shape)) * (2 * bound) - bound;
}

void RequirePositive(std::initializer_list<int64_t> sizes, const char* layer) {
  for (int64_t size : sizes) {
    if (size <= 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  absl::StrCat(layer, ": every size must be positive, got ", size));
    }
  }
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) absl::StrAppend(&text, i ? "," : "", shape[i]);
  return text + "]";
}

}  // namespace vkspmd::nn
