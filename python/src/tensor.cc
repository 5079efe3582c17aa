// vkspmd.Tensor: the lazy tensor's queries, Python operators, in-place updates, shape and
// reduction methods, autograd flags and printing. Each method is one call of the C++ Tensor API;
// calls that may wait for the devices release the GIL.
#include "vkspmd/tensor.h"

#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include <functional>
#include <optional>
#include <string>

#include "python/src/bindings.h"
#include "vkspmd/autograd.h"
#include "vkspmd/ops.h"

namespace vkspmd::python {
namespace {

py::tuple ShapeTuple(const Tensor& tensor) { return py::cast(tensor.shape()); }

py::object NotImplemented() { return py::reinterpret_borrow<py::object>(Py_NotImplemented); }

// A Tensor-or-scalar binary operator: Python's `a + b`, `a + 2` and, kReflected, `2 + a`. An
// operand that is neither a Tensor nor a number gives NotImplemented, so Python tries the other.
template <bool kReflected, typename Op>
void BindBinary(py::class_<Tensor>& cls, const char* name, const char* reflected, Op op) {
  cls.def(
      name, [op](const Tensor& a, const Tensor& b) { return op(a, b); }, py::is_operator());
  cls.def(
      name,
      [op](const Tensor& a, py::object b) -> py::object {
        std::optional<Scalar> scalar = AsScalar(b);
        return scalar.has_value() ? py::cast(op(a, *scalar)) : NotImplemented();
      },
      py::is_operator());
  if constexpr (kReflected) {
    cls.def(
        reflected,
        [op](const Tensor& b, py::object a) -> py::object {
          std::optional<Scalar> scalar = AsScalar(a);
          return scalar.has_value() ? py::cast(op(*scalar, b)) : NotImplemented();
        },
        py::is_operator());
  }
}

template <typename Op>
void BindInPlace(py::class_<Tensor>& cls, const char* name, Op op) {
  cls.def(name, [op](Tensor& a, const Tensor& b) -> Tensor& { return op(a, b); });
  cls.def(name, [op](Tensor& a, py::object b) -> Tensor& { return op(a, ToScalar(b)); });
}

void BindOperators(py::class_<Tensor>& cls) {
  BindBinary<true>(cls, "__add__", "__radd__", [](auto a, auto b) { return a + b; });
  BindBinary<true>(cls, "__sub__", "__rsub__", [](auto a, auto b) { return a - b; });
  BindBinary<true>(cls, "__mul__", "__rmul__", [](auto a, auto b) { return a * b; });
  BindBinary<true>(cls, "__truediv__", "__rtruediv__", [](auto a, auto b) { return a / b; });
  BindBinary<false>(cls, "__lt__", nullptr, [](const Tensor& a, auto b) { return lt(a, b); });
  BindBinary<false>(cls, "__le__", nullptr, [](const Tensor& a, auto b) { return le(a, b); });
  BindBinary<false>(cls, "__gt__", nullptr, [](const Tensor& a, auto b) { return gt(a, b); });
  BindBinary<false>(cls, "__ge__", nullptr, [](const Tensor& a, auto b) { return ge(a, b); });
  BindBinary<false>(cls, "__eq__", nullptr, [](const Tensor& a, auto b) { return eq(a, b); });
  BindBinary<false>(cls, "__ne__", nullptr, [](const Tensor& a, auto b) { return ne(a, b); });
  BindBinary<false>(cls, "__pow__", nullptr, [](const Tensor& a, auto b) { return pow(a, b); });
  cls.def(
      "__matmul__", [](const Tensor& a, const Tensor& b) { return matmul(a, b); },
      py::is_operator());
  cls.def("__neg__", [](const Tensor& a) { return -a; });
  BindInPlace(cls, "__iadd__", [](Tensor& a, auto b) -> Tensor& { return a += b; });
  BindInPlace(cls, "__isub__", [](Tensor& a, auto b) -> Tensor& { return a -= b; });
  BindInPlace(cls, "__imul__", [](Tensor& a, auto b) -> Tensor& { return a *= b; });
  BindInPlace(cls, "__itruediv__", [](Tensor& a, auto b) -> Tensor& { return a /= b; });
  // Elementwise __eq__ makes a class unhashable; tensors hash by identity, as torch.Tensor.
  cls.def("__hash__", [](const Tensor& t) { return std::hash<const void*>()(t.state().get()); });
  // numpy's operators defer to ours (np.float32(2) * t gives a Tensor, not an object array).
  cls.attr("__array_priority__") = 1000;
}

void BindQueries(py::class_<Tensor>& cls) {
  cls.def_property_readonly("shape", &ShapeTuple, "The dims, as a tuple (torch.Size).");
  cls.def(
      "size",
      [](const Tensor& t, py::object dim) -> py::object {
        if (dim.is_none()) return ShapeTuple(t);
        return py::int_(t.size(dim.cast<int64_t>()));
      },
      py::arg("dim") = py::none(), "The shape, or the size of dim `dim` (negative from the end).");
  cls.def("dim", &Tensor::dim, "The number of dims.");
  cls.def_property_readonly("ndim", &Tensor::dim);
  cls.def("numel", &Tensor::numel, "The number of elements.");
  cls.def_property_readonly("dtype", &Tensor::dtype);
  cls.def("__len__", [](const Tensor& t) { return t.size(0); });
  // The wait comes first, in slices, so that Ctrl-C interrupts it (LaunchAndWaitInterruptibly).
  const auto item = [](const Tensor& t) {
    LaunchAndWaitInterruptibly(t);
    py::gil_scoped_release release;
    return t.item();
  };
  cls.def("item", item,
          "The value of a one-element tensor as a Python float (waits for the devices; Ctrl-C "
          "interrupts the wait).");
  cls.def("__float__", item);
  cls.def("__bool__", [item](const Tensor& t) { return item(t) != 0; });
  // Reads that wait first in slices, as item() (Ctrl-C interrupts the wait).
  cls.def("__repr__", [](const Tensor& t) {
    LaunchAndWaitInterruptibly(t);
    py::gil_scoped_release release;
    return t.to_string();
  });
  cls.def(
      "to_npy",
      [](const Tensor& t, const std::string& path) {
        LaunchAndWaitInterruptibly(t);
        py::gil_scoped_release release;
        t.to_npy(path);
      },
      py::arg("path"), "Writes the value as a NumPy .npy file (Ctrl-C interrupts the wait).");
  cls.def("is_same", &Tensor::is_same, py::arg("other"),
          "Whether both name the same tensor (not: equal values).");
}

void BindUpdates(py::class_<Tensor>& cls) {
  const char* doc =
      "In-place update: this tensor takes `value`'s value (same shape and dtype), keeping its "
      "identity and sharding.";
  cls.def("assign", &Tensor::assign, py::arg("value"), doc);
  cls.def("copy_", &Tensor::copy_, py::arg("value"), doc);
  cls.def("requires_grad_", &Tensor::requires_grad_, py::arg("requires_grad") = true,
          "Flags the tensor for backward() (floating-point tensors only); returns it.");
  cls.def_property("requires_grad", &Tensor::requires_grad,
                   [](Tensor& t, bool requires_grad) { t.requires_grad_(requires_grad); });
  cls.def_property_readonly(
      "grad",
      [](const Tensor& t) -> py::object {
        Tensor grad = t.grad();
        return grad.defined() ? py::cast(grad) : py::none();
      },
      "d loss / d self after backward(loss), or None. Each backward replaces it.");
  cls.def(
      "backward", [](const Tensor& loss) { backward(loss); },
      "Sets .grad of every requires_grad tensor this scalar loss reaches (replacing, not "
      "accumulating: no zero_grad is needed).");
}

void BindShapeMethods(py::class_<Tensor>& cls) {
  cls.def(
      "reshape", [](const Tensor& t, py::args shape) { return t.reshape(ShapeArgument(shape)); },
      "The same elements in a new shape (one dim may be -1).");
  cls.def("view", [](const Tensor& t, py::args shape) { return t.view(ShapeArgument(shape)); });
  cls.def("transpose", &Tensor::transpose, py::arg("dim0"), py::arg("dim1"));
  cls.def("permute", [](const Tensor& t, py::args dims) { return t.permute(ShapeArgument(dims)); });
  cls.def("t", &Tensor::t);
  cls.def_property_readonly("T", &Tensor::t, "The transpose of a 2-d tensor.");
  cls.def(
      "squeeze",
      [](const Tensor& t, py::object dim) {
        return dim.is_none() ? t.squeeze() : t.squeeze(dim.cast<int64_t>());
      },
      py::arg("dim") = py::none());
  cls.def("unsqueeze", &Tensor::unsqueeze, py::arg("dim"));
  cls.def("expand", [](const Tensor& t, py::args shape) { return t.expand(ShapeArgument(shape)); });
  cls.def("narrow", &Tensor::narrow, py::arg("dim"), py::arg("start"), py::arg("length"));
  cls.def("matmul", &Tensor::matmul, py::arg("other"));
  cls.def("to", &Tensor::to, py::arg("dtype"), "The values converted to `dtype`.");
  cls.def("float", [](const Tensor& t) { return t.to(float32); });
  cls.def("int", [](const Tensor& t) { return t.to(int32); });
}

// One entry of x[key] as the C++ index() takes it.
TensorIndex ToTensorIndex(py::handle entry) {
  if (entry.is_none()) return NewAxis;
  if (entry.ptr() == Py_Ellipsis) return Ellipsis;
  if (PySlice_Check(entry.ptr())) {
    auto field = [&](const char* name) -> std::optional<int64_t> {
      py::object value = entry.attr(name);
      if (value.is_none()) return std::nullopt;
      return value.cast<int64_t>();
    };
    return Slice{field("start"), field("stop"), field("step").value_or(1)};
  }
  if (py::isinstance<Tensor>(entry)) return entry.cast<Tensor>();
  // Before ints: a numpy array has __index__ too (for one element).
  // A list or numpy array of ints or bools, as torch takes them: Python's and numpy's default
  // int64 becomes int32 (vkspmd's index type) when the values fit.
  if (py::isinstance<py::list>(entry) || py::isinstance<py::array>(entry)) {
    py::array array = py::module_::import("numpy").attr("asarray")(entry);
    if (array.dtype().kind() == 'i' && array.itemsize() == 8) {
      py::object int32 = py::dtype("int32");
      py::array narrowed = array.attr("astype")(int32);
      if (!py::bool_(narrowed.attr("__eq__")(array).attr("all")())) {
        throw py::index_error("index: the index values do not fit int32");
      }
      array = narrowed;
    }
    return from_host(HostTensorFromNumpy(array));
  }
  if (PyIndex_Check(entry.ptr()) && !PyBool_Check(entry.ptr())) return entry.cast<int64_t>();
  throw py::type_error(
      "vkspmd tensors take ints, slices, None, ..., and one int32/bool tensor (or list or "
      "numpy array) as indices; got " +
      py::repr(entry).cast<std::string>());
}

void BindIndexing(py::class_<Tensor>& cls) {
  cls.def(
      "__getitem__",
      [](const Tensor& t, py::handle key) {
        std::vector<TensorIndex> indices;
        if (py::isinstance<py::tuple>(key)) {
          for (py::handle entry : key) indices.push_back(ToTensorIndex(entry));
        } else {
          indices.push_back(ToTensorIndex(key));
        }
        return index(t, indices);
      },
      "Indexing as torch: ints, slices with a positive step, None and ... (t[1, :, 2:5]), and "
      "at most one integer tensor (t[idx]: the dim becomes idx's shape, one gather) or bool "
      "mask (t[mask]: the elements where it is true; the mask is read, since the result's "
      "shape depends on it).");
}

// A torch.return_types-style named tuple (values, indices), registered in `return_types`.
py::object NamedPair(py::module_& return_types, const char* name) {
  py::object type = py::module_::import("collections")
                        .attr("namedtuple")(name, py::make_tuple("values", "indices"));
  type.attr("__module__") = return_types.attr("__name__");
  return_types.attr(name) = type;
  return type;
}

// t.max() / t.min(): the value; t.max(dim): (values, indices) as in torch, the indices int32
// (the first of ties) from argmax / argmin.
template <typename Values, typename Indices>
void BindExtreme(py::class_<Tensor>& cls, py::module_& return_types, const char* name,
                 Values values, Indices indices, const char* doc) {
  py::object pair = NamedPair(return_types, name);
  cls.def(
      name,
      [pair, name, values, indices](const Tensor& t, py::object dim, bool keepdim) -> py::object {
        if (dim.is_none()) return py::cast(values(t, {}, keepdim));
        if (!PyIndex_Check(dim.ptr()) || PyBool_Check(dim.ptr())) {
          throw py::type_error(std::string(name) + ": dim must be one int, not " +
                               py::repr(dim).cast<std::string>() + " (amax/amin take several)");
        }
        const int64_t d = dim.cast<int64_t>();
        return pair(values(t, {d}, keepdim), indices(t, d, keepdim));
      },
      py::arg("dim") = py::none(), py::arg("keepdim") = false, doc);
}

void BindReductionMethods(py::class_<Tensor>& cls, py::module_& module) {
  const auto dim = py::arg("dim") = py::none();
  const auto keepdim = py::arg("keepdim") = false;
  cls.def(
      "sum", [](const Tensor& t, py::object d, bool k) { return sum(t, DimsArgument(d), k); }, dim,
      keepdim);
  cls.def(
      "mean", [](const Tensor& t, py::object d, bool k) { return mean(t, DimsArgument(d), k); },
      dim, keepdim);
  cls.def(
      "amax", [](const Tensor& t, py::object d, bool k) { return amax(t, DimsArgument(d), k); },
      dim, keepdim);
  cls.def(
      "amin", [](const Tensor& t, py::object d, bool k) { return amin(t, DimsArgument(d), k); },
      dim, keepdim);
  py::module_ return_types = module.def_submodule(
      "return_types", "Named tuples of (values, indices), as torch.return_types.");
  BindExtreme(
      cls, return_types, "max",
      [](const Tensor& t, std::vector<int64_t> d, bool k) { return amax(t, std::move(d), k); },
      [](const Tensor& t, int64_t d, bool k) { return argmax(t, d, k); },
      "t.max(): the largest value; t.max(dim): (values, indices) along `dim`, a "
      "vkspmd.return_types.max named tuple as torch's (indices int32, the first of ties).");
  BindExtreme(
      cls, return_types, "min",
      [](const Tensor& t, std::vector<int64_t> d, bool k) { return amin(t, std::move(d), k); },
      [](const Tensor& t, int64_t d, bool k) { return argmin(t, d, k); },
      "t.min(): the smallest value; t.min(dim): (values, indices) along `dim`, a "
      "vkspmd.return_types.min named tuple as torch's (indices int32, the first of ties).");
  cls.def("argmax", &Tensor::argmax, py::arg("dim"), keepdim);
  cls.def("argmin", &Tensor::argmin, py::arg("dim"), keepdim);
  cls.def("softmax", &Tensor::softmax, py::arg("dim"));
  cls.def("log_softmax", &Tensor::log_softmax, py::arg("dim"));
}

}  // namespace

void BindTensor(py::module_& module) {
  py::enum_<DType> dtype(module, "dtype", "A tensor element type (vkspmd.float32, ...).");
  dtype.value("float32", DType::kFloat32)
      .value("int32", DType::kInt32)
      .value("uint32", DType::kUInt32)
      .value("bool", DType::kBool)
      .value("float16", DType::kFloat16)
      .value("bfloat16", DType::kBFloat16);
  // Printed as torch prints its dtypes ("torch.float32"), replacing the enum's own names.
  const py::cpp_function name([](DType d) { return "vkspmd." + dtype_name(d); },
                              py::is_method(dtype));
  dtype.attr("__repr__") = name;
  dtype.attr("__str__") = name;
  dtype.def_property_readonly("is_floating_point", [](DType d) { return is_floating_point(d); });
  dtype.def_property_readonly("itemsize", [](DType d) { return element_size(d); });
  for (DType d : {DType::kFloat32, DType::kInt32, DType::kUInt32, DType::kBool, DType::kFloat16,
                  DType::kBFloat16}) {
    module.attr(dtype_name(d).c_str()) = d;
  }
  module.attr("half") = DType::kFloat16;

  py::class_<Tensor> cls(module, "Tensor",
                         "A lazy tensor: ops record a graph; mark_step() or reading a value runs "
                         "it on the mesh devices, where the result stays until it is read.");
  cls.def(py::init<const Tensor&>(), py::arg("data"),
          "Tensor(t): another handle to the same tensor t (not a copy), as vkspmd.nn.Parameter "
          "uses it; make new tensors with vkspmd.tensor / from_numpy.");
  BindQueries(cls);
  BindOperators(cls);
  BindUpdates(cls);
  BindShapeMethods(cls);
  BindReductionMethods(cls, module);
  BindIndexing(cls);
}

}  // namespace vkspmd::python
