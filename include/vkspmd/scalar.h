// Scalar: a host number given to a tensor op (x * 0.5, x + step). Scalars become graph
// parameters, never constants, so a value that changes every step (a learning rate) does not make
// the step compile again.
#pragma once

#include <concepts>

namespace vkspmd {

class Scalar {
 public:
  template <typename T>
  requires std::integral<T> || std::floating_point<T> Scalar(
      T value)  // NOLINT(google-explicit-constructor): 2.0 and 3 read as scalars.
      : value_(static_cast<double>(value)),
        is_floating_(std::floating_point<T>),
        is_bool_(std::same_as<T, bool>) {}

  double value() const { return value_; }
  // A floating scalar with an integer tensor gives a float32 result, as in PyTorch.
  bool is_floating() const { return is_floating_; }
  bool is_bool() const { return is_bool_; }

 private:
  double value_;
  bool is_floating_;
  bool is_bool_;
};

}  // namespace vkspmd
