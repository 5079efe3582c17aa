// The op set of include/vkspmd/ops.h with PyTorch's names, as module functions (vkspmd.exp(t))
// and, where torch.Tensor has them, as methods (t.exp()). Each is one call of the C++ API.
#include "vkspmd/ops.h"

#include <pybind11/stl.h>

#include <string>

#include "python/src/bindings.h"

namespace vkspmd::python {
namespace {

using Unary = Tensor (*)(const Tensor&);

void BindElementwise(py::module_& module, py::class_<Tensor>& cls) {
  const std::pair<const char*, Unary> unary[] = {
      {"neg", &neg},   {"negative", &neg}, {"abs", &abs},   {"exp", &exp},         {"log", &log},
      {"sqrt", &sqrt}, {"rsqrt", &rsqrt},  {"tanh", &tanh}, {"sigmoid", &sigmoid}, {"relu", &relu}};
  for (const auto& [name, op] : unary) {
    module.def(name, op, py::arg("input"));
    cls.def(name, op);
  }
  module.def("gelu", &gelu, py::arg("input"), py::arg("approximate") = "none",
             "approximate: 'none' (the erf form) or 'tanh'.");
  // Tensor-or-number second operands.
  module.def("add", [](const Tensor& a, const Tensor& b) { return a + b; });
  module.def("add", [](const Tensor& a, py::object b) { return a + ToScalar(b); });
  module.def("sub", [](const Tensor& a, const Tensor& b) { return a - b; });
  module.def("sub", [](const Tensor& a, py::object b) { return a - ToScalar(b); });
  module.def("mul", [](const Tensor& a, const Tensor& b) { return a * b; });
  module.def("mul", [](const Tensor& a, py::object b) { return a * ToScalar(b); });
  module.def("div", [](const Tensor& a, const Tensor& b) { return a / b; });
  module.def("div", [](const Tensor& a, py::object b) { return a / ToScalar(b); });
  module.def("pow", [](const Tensor& x, const Tensor& e) { return pow(x, e); });
  module.def("pow", [](const Tensor& x, py::object e) { return pow(x, ToScalar(e)); });
  module.def("maximum", &maximum, py::arg("input"), py::arg("other"));
  module.def("minimum", &minimum, py::arg("input"), py::arg("other"));
  struct Comparison {
    const char* name;
    Tensor (*tensor_op)(const Tensor&, const Tensor&);
    Tensor (*scalar_op)(const Tensor&, Scalar);
  };
  const Comparison compare[] = {{"eq", &eq, &eq}, {"ne", &ne, &ne}, {"lt", &lt, &lt},
                                {"le", &le, &le}, {"gt", &gt, &gt}, {"ge", &ge, &ge}};
  for (const auto& [name, tensor_op, scalar_op] : compare) {
    module.def(name, tensor_op, py::arg("input"), py::arg("other"));
    module.def(
        name, [op = scalar_op](const Tensor& a, py::object b) { return op(a, ToScalar(b)); },
        py::arg("input"), py::arg("other"));
  }
  module.def("where", py::overload_cast<const Tensor&, const Tensor&, const Tensor&>(&where),
             py::arg("condition"), py::arg("input"), py::arg("other"),
             "condition ? input : other, broadcast together.");
  module.def(
      "where",
      [](const Tensor& c, const Tensor& a, py::object b) { return where(c, a, ToScalar(b)); },
      py::arg("condition"), py::arg("input"), py::arg("other"));
  module.def("matmul", &matmul, py::arg("input"), py::arg("other"),
             "torch.matmul's rules: 1-D operands are vectors, batch dims broadcast.");
}

void BindShapeOps(py::module_& module) {
  module.def("reshape", &reshape, py::arg("input"), py::arg("shape"));
  module.def("transpose", &transpose, py::arg("input"), py::arg("dim0"), py::arg("dim1"));
  module.def("permute", &permute, py::arg("input"), py::arg("dims"));
  module.def(
      "squeeze",
      [](const Tensor& x, py::object dim) {
        return dim.is_none() ? squeeze(x) : squeeze(x, dim.cast<int64_t>());
      },
      py::arg("input"), py::arg("dim") = py::none());
  module.def("unsqueeze", &unsqueeze, py::arg("input"), py::arg("dim"));
  module.def("expand", &expand, py::arg("input"), py::arg("size"));
  module.def("slice", &slice, py::arg("input"), py::arg("dim"), py::arg("start"), py::arg("end"),
             py::arg("step") = 1,
             "Elements start, start + step, ... below end of `dim` (torch's input[..., a:b:s]).");
  module.def("narrow", &narrow, py::arg("input"), py::arg("dim"), py::arg("start"),
             py::arg("length"));
  module.def("cat", &cat, py::arg("tensors"), py::arg("dim") = 0);
  module.def("to_dtype", &to_dtype, py::arg("input"), py::arg("dtype"));
}

void BindReductions(py::module_& module) {
  using Reduction = Tensor (*)(const Tensor&, std::vector<int64_t>, bool);
  const std::pair<const char*, Reduction> reductions[] = {
      {"sum", &sum}, {"mean", &mean}, {"amax", &amax}, {"amin", &amin}};
  for (const auto& [name, op] : reductions) {
    module.def(
        name,
        [op = op](const Tensor& x, py::object dim, bool keepdim) {
          return op(x, DimsArgument(dim), keepdim);
        },
        py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false);
  }
  module.def("argmax", &argmax, py::arg("input"), py::arg("dim"), py::arg("keepdim") = false,
             "The int32 index of the first largest element along `dim`.");
  module.def("argmin", &argmin, py::arg("input"), py::arg("dim"), py::arg("keepdim") = false,
             "The int32 index of the first smallest element along `dim`.");
}

void BindNeuralFunctions(py::module_& module) {
  module.def("softmax", &softmax, py::arg("input"), py::arg("dim"));
  module.def("log_softmax", &log_softmax, py::arg("input"), py::arg("dim"));
  module.def(
      "layer_norm",
      [](const Tensor& x, std::vector<int64_t> normalized_shape, py::object weight, py::object bias,
         double eps) {
        const Tensor w = weight.is_none() ? Tensor() : weight.cast<Tensor>();
        const Tensor b = bias.is_none() ? Tensor() : bias.cast<Tensor>();
        return layer_norm(x, std::move(normalized_shape), w, b, eps);
      },
      py::arg("input"), py::arg("normalized_shape"), py::arg("weight") = py::none(),
      py::arg("bias") = py::none(), py::arg("eps") = 1e-5);
  module.def("one_hot", &one_hot, py::arg("tensor"), py::arg("num_classes"));
  module.def("embedding", &embedding, py::arg("input"), py::arg("weight"));
  module.def("cross_entropy", &cross_entropy, py::arg("input"), py::arg("target"),
             py::arg("reduction") = "mean",
             "logits [N, C] (or [C]) against int32 class indices [N]; 'mean', 'sum' or 'none'.");
}

}  // namespace

void BindOps(py::module_& module) {
  py::class_<Tensor> cls = module.attr("Tensor");
  BindElementwise(module, cls);
  BindShapeOps(module);
  BindReductions(module);
  BindNeuralFunctions(module);
}

}  // namespace vkspmd::python
