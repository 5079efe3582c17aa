// Plain C++ references of the layers, on row-major float vectors, for checking what the Tensor
// API computes (the reference evaluator cannot catch a wrong formula: it runs the same graph).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {

using Values = std::vector<float>;

// x [rows, in] W^T + b with W [out, in] (b may be empty).
Values LinearReference(const Values& x, int64_t rows, int64_t in, const Values& weight,
                       const Values& bias, int64_t out);
// Normalises each row of `dim` values, then weight and bias.
Values LayerNormReference(const Values& x, int64_t dim, const Values& weight, const Values& bias,
                          double eps = 1e-5);
Values GeluReference(const Values& x);
// Causal attention over x [batch, length, d_model] with the projections of `attention`.
Values AttentionReference(const Values& x, int64_t batch, int64_t length,
                          const nn::CausalSelfAttention& attention, int64_t d_model);
// The mean of -log softmax(logits[n])[target[n]] over n.
double CrossEntropyReference(const Values& logits, const std::vector<int32_t>& targets,
                             int64_t classes);

// A parameter's value by dotted name.
Values Parameter(const nn::Module& module, const std::string& name);

// "" when every element is within `relative` of the expected one (relative to max(1, |e|)),
// else the first difference.
std::string CompareValues(const Values& actual, const Values& expected, double relative = 1e-5);

}  // namespace vkspmd::testing
