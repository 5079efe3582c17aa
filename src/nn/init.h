// What the layers share: PyTorch's initialisation distributions drawn from the seeded generator,
// argument checks, and shapes as text for messages.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "vkspmd/tensor.h"

namespace vkspmd::nn {

// U(-bound, bound) of `shape` from vkspmd::rand (PyTorch's uniform_(-bound, bound)).
Tensor Uniform(std::vector<int64_t> shape, double bound);

// Throws vkspmd::Error naming `layer` unless every size is positive.
void RequirePositive(std::initializer_list<int64_t> sizes, const char* layer);

// "[2,3,5]".
std::string ShapeText(const std::vector<int64_t>& shape);

}  // namespace vkspmd::nn
