// The plain C++ layer references of the nn tests.
#include "tests/nn/reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace vkspmd::testing {

Values LinearReference(const Values& x, int64_t rows, int64_t in, const Values& weight,
                       const Values& bias, int64_t out) {
  Values y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double total = bias.empty() ? 0.0 : bias[o];
      for (int64_t i = 0; i < in; ++i) total += double{x[r * in + i]} * weight[o * in + i];
      y[r * out + o] = static_cast<float>(total);
    }
  }
  return y;
}

Values LayerNormReference(const Values& x, int64_t dim, const Values& weight, const Values& bias,
                          double eps) {
  Values y(x.size());
  for (size_t row = 0; row < x.size() / dim; ++row) {
    double mean = 0, variance = 0;
    for (int64_t i = 0; i < dim; ++i) mean += x[row * dim + i];
    mean /= dim;
    for (int64_t i = 0; i < dim; ++i) variance += std::pow(x[row * dim + i] - mean, 2);
    variance /= dim;
    for (int64_t i = 0; i < dim; ++i) {
      y[row * dim + i] = static_cast<float>(
          (x[row * dim + i] - mean) / std::sqrt(variance + eps) * weight[i] + bias[i]);
    }
  }
  return y;
}

Values GeluReference(const Values& x) {
  Values y;
  for (float v : x) y.push_back(static_cast<float>(0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))));
  return y;
}

Values AttentionReference(const Values& x, int64_t batch, int64_t length,
                          const nn::CausalSelfAttention& attention, int64_t d_model) {
  const int64_t rows = batch * length, heads = attention.heads(), head_dim = d_model / heads;
  auto project = [&](const std::string& name) {
    return LinearReference(x, rows, d_model, Parameter(attention, name + ".weight"),
                           Parameter(attention, name + ".bias"), d_model);
  };
  const Values q = project("query"), k = project("key"), v = project("value");
  Values merged(static_cast<size_t>(rows * d_model));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t t = 0; t < length; ++t) {
        // Feature f of head h at position s of batch b.
        auto at = [&](const Values& m, int64_t s, int64_t f) {
          return double{m[(b * length + s) * d_model + h * head_dim + f]};
        };
        std::vector<double> scores;
        for (int64_t s = 0; s <= t; ++s) {
          double dot = 0;
          for (int64_t f = 0; f < head_dim; ++f) dot += at(q, t, f) * at(k, s, f);
          scores.push_back(dot / std::sqrt(static_cast<double>(head_dim)));
        }
        const double peak = *std::max_element(scores.begin(), scores.end());
        double total = 0;
        for (double& score : scores) total += (score = std::exp(score - peak));
        for (int64_t f = 0; f < head_dim; ++f) {
          double sum = 0;
          for (int64_t s = 0; s <= t; ++s) sum += scores[s] / total * at(v, s, f);
          merged[(b * length + t) * d_model + h * head_dim + f] = static_cast<float>(sum);
        }
      }
    }
  }
  return LinearReference(merged, rows, d_model, Parameter(attention, "output.weight"),
                         Parameter(attention, "output.bias"), d_model);
}

double CrossEntropyReference(const Values& logits, const std::vector<int32_t>& targets,
                             int64_t classes) {
  double total = 0;
  for (size_t n = 0; n < targets.size(); ++n) {
    const float* row = logits.data() + n * classes;
    const double peak = *std::max_element(row, row + classes);
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(row[c] - peak);
    total -= row[targets[n]] - peak - std::log(sum);
  }
  return total / static_cast<double>(targets.size());
}

Values Parameter(const nn::Module& module, const std::string& name) {
  for (const auto& [parameter_name, tensor] : module.named_parameters()) {
    if (parameter_name == name) return tensor.to_vector<float>();
  }
  ADD_FAILURE() << "no parameter " << name;
  return {};
}

std::string CompareValues(const Values& actual, const Values& expected, double relative) {
  if (actual.size() != expected.size()) {
    return absl::StrCat(actual.size(), " values, expected ", expected.size());
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::fabs(actual[i] - expected[i]) <= relative * std::max(1.0f, std::fabs(expected[i]))) {
      continue;
    }
    return absl::StrCat("element ", i, ": ", actual[i], ", expected ", expected[i]);
  }
  return "";
}

}  // namespace vkspmd::testing
