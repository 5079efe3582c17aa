// Tensor: a lazy tensor. Ops record a graph instead of computing; sync()/mark_step() or reading a
// value compiles the pending graph (or finds it in the cache) and runs it on the mesh devices,
// where the result stays until it is read. Errors throw vkspmd::Error.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <source_location>
#include <span>
#include <string>
#include <vector>

#include "vkspmd/dtype.h"
#include "vkspmd/error.h"
#include "vkspmd/host_tensor.h"
#include "vkspmd/scalar.h"

namespace vkspmd {

namespace lazy {
struct TensorState;
}  // namespace lazy

class Tensor {
 public:
  // An undefined tensor (no value); most calls on it throw.
  Tensor() = default;
  explicit Tensor(std::shared_ptr<lazy::TensorState> state) : state_(std::move(state)) {}

  bool defined() const { return state_ != nullptr; }
  const std::vector<int64_t>& shape() const;
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }
  // Size of dim `d` (negative counts from the end).
  int64_t size(int64_t d) const;
  int64_t numel() const;
  DType dtype() const;

  // Reading waits for pending device work and gathers the value to the host. The source
  // location is what VKSPMD_DEBUG reports as the cause of the execution.
  HostTensor to_host(std::source_location where = std::source_location::current()) const;
  template <typename T>
  std::vector<T> to_vector(std::source_location where = std::source_location::current()) const {
    return to_host(where).template values<T>();
  }
  // The value of a one-element tensor.
  double item(std::source_location where = std::source_location::current()) const;
  void to_npy(const std::string& path,
              std::source_location where = std::source_location::current()) const;
  // PyTorch's printed form: "tensor([[1., 2.],\n        [3., 4.]])".
  std::string to_string(std::source_location where = std::source_location::current()) const;

  // In-place update: this tensor takes `value`'s value (same shape and dtype), keeping its
  // identity and its sharding. Other tensors computed from the old value keep the old value.
  // When no other tensor holds the old value, the next mark_step/sync writes the new value into
  // the old value's device buffers (donation: no second copy).
  Tensor& assign(const Tensor& value);
  Tensor& copy_(const Tensor& value) { return assign(value); }
  Tensor& operator+=(const Tensor& other);
  Tensor& operator-=(const Tensor& other);
  Tensor& operator*=(const Tensor& other);
  Tensor& operator/=(const Tensor& other);
  Tensor& operator+=(Scalar other);
  Tensor& operator-=(Scalar other);
  Tensor& operator*=(Scalar other);
  Tensor& operator/=(Scalar other);

  // Shape and reduction ops as methods (the free functions in ops.h do the same).
  Tensor reshape(std::vector<int64_t> shape) const;
  Tensor view(std::vector<int64_t> shape) const { return reshape(std::move(shape)); }
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor permute(std::vector<int64_t> dims) const;
  Tensor t() const { return transpose(0, 1); }
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor expand(std::vector<int64_t> shape) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor sum() const;
  Tensor sum(std::vector<int64_t> dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(std::vector<int64_t> dims, bool keepdim = false) const;
  Tensor max() const;
  Tensor max(int64_t dim, bool keepdim = false) const;
  Tensor min() const;
  Tensor min(int64_t dim, bool keepdim = false) const;
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  Tensor argmin(int64_t dim, bool keepdim = false) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;
  Tensor matmul(const Tensor& other) const;
  Tensor to(DType dtype) const;

  // Autodiff (vkspmd/autograd.h): backward(loss) sets grad() of the tensors flagged here.
  // Only floating-point tensors can require gradients. grad() is undefined until a backward
  // reaches the tensor; each backward replaces it (no accumulation).
  Tensor& requires_grad_(bool requires_grad = true);
  bool requires_grad() const;
  Tensor grad() const;

  // Whether both name the same tensor (not: equal values).
  bool is_same(const Tensor& other) const { return state_ == other.state_; }
  const std::shared_ptr<lazy::TensorState>& state() const { return state_; }

 private:
  std::shared_ptr<lazy::TensorState> state_;
};

std::ostream& operator<<(std::ostream& stream, const Tensor& tensor);

// Prints tensor.to_string() and a newline to stdout.
void print(const Tensor& tensor, std::source_location where = std::source_location::current());

// Factories. Shapes are dims, e.g. {8, 4}; {} is a scalar.
Tensor zeros(std::vector<int64_t> shape, DType dtype = float32);
Tensor ones(std::vector<int64_t> shape, DType dtype = float32);
// Every element `value` (a graph parameter, like every scalar).
Tensor full(std::vector<int64_t> shape, Scalar value, DType dtype = float32);
Tensor zeros_like(const Tensor& tensor);
Tensor ones_like(const Tensor& tensor);
// A 0-d tensor holding `value`: use it for a learning rate or a step count.
Tensor scalar(Scalar value, DType dtype = float32);
// start, start + step, ... below end (float32 unless every argument is an integer).
Tensor arange(Scalar end);
Tensor arange(Scalar start, Scalar end, Scalar step = 1);
// Uniform in [0, 1) and standard normal values from a counter-based generator (Philox4x32-10)
// seeded by manual_seed: the values depend on the seed and the order of calls, never on the
// mesh or the sharding. A float16 or bfloat16 dtype rounds the float32 values drawn.
Tensor rand(std::vector<int64_t> shape, DType dtype = float32);
Tensor randn(std::vector<int64_t> shape, DType dtype = float32);
void manual_seed(uint64_t seed);
// The generator's state: the seed and how many Philox blocks were drawn since (what a checkpoint
// saves so a resumed run draws the same numbers next).
struct RngState {
  uint64_t seed = 0;
  uint64_t offset = 0;
  bool operator==(const RngState&) const = default;
};
RngState get_rng_state();
void set_rng_state(const RngState& state);
// Host data (row-major) of the given shape (default: 1-D of the data's length; scalar() makes
// a 0-d tensor). Float values may be stored as float16 or bfloat16 (rounded to nearest even);
// from_host takes their raw 16 bits, as to_host gives them.
Tensor tensor(std::span<const float> values, std::vector<int64_t> shape = {},
              DType dtype = float32);
Tensor tensor(std::span<const int32_t> values, std::vector<int64_t> shape = {});
Tensor tensor(std::span<const uint32_t> values, std::vector<int64_t> shape = {});
Tensor tensor(const std::vector<bool>& values, std::vector<int64_t> shape = {});
Tensor from_host(const HostTensor& value);
// A NumPy .npy file (float32, float16, int32, uint32 or bool).
Tensor from_npy(const std::string& path);

}  // namespace vkspmd
