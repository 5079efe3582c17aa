// Tensor factories (zeros, ones, full, arange, rand, randn, the seed) and the numpy bridge
// (from_numpy, Tensor.numpy, np.asarray(t)). Host values are copied in once and read back once:
// numpy() hands the gathered host copy to numpy without copying it again.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <span>
#include <string>

#include "python/src/bindings.h"
#include "vkspmd/tensor.h"

namespace vkspmd::python {
namespace {

using Release = py::call_guard<py::gil_scoped_release>;

void BindShapeFactories(py::module_& module) {
  const auto dtype = py::arg("dtype") = float32;
  module.def(
      "zeros", [](py::args size, DType d) { return zeros(ShapeArgument(size), d); }, py::kw_only(),
      dtype, "zeros(*size, dtype=vkspmd.float32): a tensor of zeros, e.g. zeros(8, 4).");
  module.def(
      "ones", [](py::args size, DType d) { return ones(ShapeArgument(size), d); }, py::kw_only(),
      dtype, "ones(*size, dtype=vkspmd.float32): a tensor of ones.");
  module.def(
      "rand", [](py::args size, DType d) { return rand(ShapeArgument(size), d); }, py::kw_only(),
      dtype,
      "rand(*size, dtype=vkspmd.float32): uniform in [0, 1) from the seeded counter-based "
      "generator (the same values on any mesh).");
  module.def(
      "randn", [](py::args size, DType d) { return randn(ShapeArgument(size), d); }, py::kw_only(),
      dtype,
      "randn(*size, dtype=vkspmd.float32): standard normal values from the seeded generator.");
  module.def(
      "full",
      [](const std::vector<int64_t>& size, py::object value, DType d) {
        return full(size, ToScalar(value), d);
      },
      py::arg("size"), py::arg("fill_value"), dtype, "Every element `fill_value`.");
  module.def("zeros_like", &zeros_like, py::arg("input"));
  module.def("ones_like", &ones_like, py::arg("input"));
  module.def(
      "scalar", [](py::object value, DType d) { return scalar(ToScalar(value), d); },
      py::arg("value"), dtype, "A 0-d tensor (a learning rate, a step count).");
  module.def(
      "arange",
      [](py::object start, py::object end, py::object step) {
        if (end.is_none()) return arange(ToScalar(start));
        return arange(ToScalar(start), ToScalar(end), ToScalar(step));
      },
      py::arg("start"), py::arg("end") = py::none(), py::arg("step") = 1,
      "arange(end) or arange(start, end, step=1): float32 unless every argument is an int "
      "(then int32).");
  module.def("manual_seed", &manual_seed, py::arg("seed"),
             "Seeds rand/randn and the layers' initialisation.");
  module.def(
      "get_rng_state",
      [] {
        RngState state = get_rng_state();
        return py::make_tuple(state.seed, state.offset);
      },
      "The generator's (seed, offset).");
  module.def(
      "set_rng_state",
      [](uint64_t seed, uint64_t offset) {
        set_rng_state(RngState{seed, offset});
      },
      py::arg("seed"), py::arg("offset"));
}

void BindNumpy(py::module_& module) {
  module.def(
      "from_numpy", [](py::handle array) { return from_host(HostTensorFromNumpy(array)); },
      py::arg("array"),
      "A tensor with a copy of a numpy array's values (float32, float16, int32, uint32 or bool; "
      "a non-contiguous array is copied the same way). Other dtypes raise TypeError.");
  module.def(
      "_from_float32",
      [](py::array_t<float, py::array::c_style | py::array::forcecast> values, DType dtype) {
        std::vector<int64_t> shape(values.shape(), values.shape() + values.ndim());
        return tensor(std::span<const float>(values.data(), static_cast<size_t>(values.size())),
                      shape, dtype);
      },
      py::arg("values"), py::arg("dtype"),
      "float32 values rounded to a floating dtype (the C++ tensor(values, shape, dtype)).");
  module.def("from_npy", &from_npy, py::arg("path"), "A tensor read from a NumPy .npy file.");
  py::class_<Tensor> cls = module.attr("Tensor");
  cls.def(
      "numpy", [](const Tensor& t) { return NumpyFromHostTensor(ReadInterruptibly(t)); },
      "The value as a numpy array (waits for the devices, which Ctrl-C interrupts, and gathers "
      "the shards; the array owns the gathered copy). bfloat16 raises TypeError: numpy has no "
      "such dtype.");
  cls.def(
      "__array__",
      [](const Tensor& t, py::object dtype) {
        py::object array = NumpyFromHostTensor(ReadInterruptibly(t));
        return dtype.is_none() ? array : array.attr("astype")(dtype);
      },
      py::arg("dtype") = py::none(), "np.asarray(t): the same as t.numpy().");
}

}  // namespace

void BindInterop(py::module_& module) {
  BindShapeFactories(module);
  BindNumpy(module);
  BindDLPack(module);
}

}  // namespace vkspmd::python
