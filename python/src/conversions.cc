// Python arguments as C++ API values: scalars, shapes and dims given PyTorch's ways, and numpy
// arrays as HostTensors and back.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <string>

#include "python/src/bindings.h"

namespace vkspmd::python {

std::optional<Scalar> AsScalar(py::handle value) {
  if (PyBool_Check(value.ptr())) return Scalar(value.cast<bool>());
  if (PyLong_Check(value.ptr())) return Scalar(value.cast<int64_t>());
  if (PyFloat_Check(value.ptr())) return Scalar(value.cast<double>());
  // numpy's scalars: np.int32(2) has __index__, np.float32(2) is a numpy.floating.
  const py::module_ numpy = py::module_::import("numpy");
  if (py::isinstance(value, numpy.attr("bool_"))) return Scalar(value.cast<bool>());
  if (py::isinstance(value, numpy.attr("integer"))) return Scalar(value.cast<int64_t>());
  if (py::isinstance(value, numpy.attr("floating"))) return Scalar(value.cast<double>());
  return std::nullopt;
}

Scalar ToScalar(py::handle value) {
  std::optional<Scalar> scalar = AsScalar(value);
  if (!scalar.has_value()) {
    throw py::type_error("expected a Tensor or a number, got " +
                         py::str(py::type::of(value)).cast<std::string>());
  }
  return *scalar;
}

std::vector<int64_t> ShapeArgument(const py::args& args) {
  if (args.size() == 1 && !PyLong_Check(args[0].ptr()) && py::isinstance<py::sequence>(args[0])) {
    return args[0].cast<std::vector<int64_t>>();
  }
  return args.cast<std::vector<int64_t>>();
}

std::vector<int64_t> DimsArgument(const py::handle& dim) {
  if (dim.is_none()) return {};
  if (py::isinstance<py::sequence>(dim)) return dim.cast<std::vector<int64_t>>();
  return {dim.cast<int64_t>()};
}

py::dtype NumpyDType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return py::dtype("float32");
    case DType::kInt32:
      return py::dtype("int32");
    case DType::kUInt32:
      return py::dtype("uint32");
    case DType::kBool:
      return py::dtype("bool");
    case DType::kFloat16:
      return py::dtype("float16");
    case DType::kBFloat16:
      break;
  }
  throw py::type_error(
      "numpy has no bfloat16: convert first (t.to(vkspmd.float32).numpy()) or read it with "
      "torch.from_dlpack(t)");
}

namespace {

// The vkspmd dtype of a numpy dtype; TypeError for the ones vkspmd lacks.
DType FromNumpyDType(const py::dtype& dtype) {
  const char kind = dtype.kind();
  const ssize_t size = dtype.itemsize();
  if (kind == 'f' && size == 4) return DType::kFloat32;
  if (kind == 'f' && size == 2) return DType::kFloat16;
  if (kind == 'i' && size == 4) return DType::kInt32;
  if (kind == 'u' && size == 4) return DType::kUInt32;
  if (kind == 'b' && size == 1) return DType::kBool;
  throw py::type_error("vkspmd has no dtype for numpy " + py::repr(dtype).cast<std::string>() +
                       " (it has float32, float16, int32, uint32 and bool): convert the array "
                       "first, e.g. a.astype(np.float32)");
}

}  // namespace

HostTensor HostTensorFromNumpy(const py::handle& object) {
  if (!py::isinstance<py::array>(object)) {
    throw py::type_error("expected a numpy.ndarray, got " +
                         py::str(py::type::of(object)).cast<std::string>());
  }
  auto array = py::reinterpret_borrow<py::array>(object);
  HostTensor value;
  value.dtype = FromNumpyDType(array.dtype());
  if (array.dtype().attr("byteorder").cast<std::string>() == ">") {
    throw py::type_error("from_numpy: the array is big-endian; convert it with a.astype('<f4')");
  }
  // A strided view (a[:, ::2], a.T) is copied into row-major order like any other array.
  // (Not np.ascontiguousarray: it makes a 0-d array 1-d.)
  py::array contiguous = array;
  if (!(array.flags() & py::array::c_style)) contiguous = array.attr("copy")("C").cast<py::array>();
  value.shape.assign(contiguous.shape(), contiguous.shape() + contiguous.ndim());
  value.bytes.resize(static_cast<size_t>(contiguous.nbytes()));
  if (!value.bytes.empty()) std::memcpy(value.bytes.data(), contiguous.data(), value.bytes.size());
  return value;
}

py::object NumpyFromHostTensor(HostTensor value) {
  const py::dtype dtype = NumpyDType(value.dtype);
  std::vector<ssize_t> shape(value.shape.begin(), value.shape.end());
  std::vector<ssize_t> strides(shape.size());
  ssize_t stride = element_size(value.dtype);
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  auto* owned = new HostTensor(std::move(value));
  py::capsule base(owned, [](void* pointer) { delete static_cast<HostTensor*>(pointer); });
  return py::array(dtype, shape, strides, owned->bytes.data(), base);
}

}  // namespace vkspmd::python
