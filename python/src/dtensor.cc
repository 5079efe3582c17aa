// PyTorch's DTensor API (torch.distributed.tensor) over the C++ one (vkspmd/dtensor.h,
// vkspmd/dtensor_parallel.h), in the submodule vkspmd._C.dtensor: DeviceMesh, the placements
// Shard / Replicate / Partial, DTensor, distribute_tensor, and parallelize_module with its styles.
#include "vkspmd/dtensor.h"

#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "python/src/bindings.h"
#include "vkspmd/dtensor_parallel.h"

namespace vkspmd::python {
namespace {

constexpr std::pair<const char*, ReduceOp> kReduceOps[] = {{"sum", ReduceOp::kSum},
                                                           {"avg", ReduceOp::kAvg},
                                                           {"max", ReduceOp::kMax},
                                                           {"min", ReduceOp::kMin}};

}  // namespace

ReduceOp ToReduceOp(const std::string& name, const std::string& what) {
  for (const auto& [text, op] : kReduceOps) {
    if (name == text) return op;
  }
  throw py::value_error(what + ": reduce_op must be \"sum\", \"avg\", \"max\" or \"min\", not \"" +
                        name + "\"");
}

namespace {

std::string ReduceOpName(ReduceOp op) {
  for (const auto& [text, value] : kReduceOps) {
    if (op == value) return text;
  }
  return "?";
}

// A sequence of Shard / Replicate / Partial objects as C++ Placements.
Placements ToPlacements(const py::handle& placements) {
  if (!py::isinstance<py::sequence>(placements) || py::isinstance<py::str>(placements)) {
    throw py::type_error(
        "placements: a sequence with one Shard, Replicate or Partial per mesh dim");
  }
  Placements result;
  for (py::handle entry : placements) {
    if (py::isinstance<Shard>(entry)) {
      result.emplace_back(entry.cast<Shard>());
    } else if (py::isinstance<Replicate>(entry)) {
      result.emplace_back(entry.cast<Replicate>());
    } else if (py::isinstance<Partial>(entry)) {
      result.emplace_back(entry.cast<Partial>());
    } else {
      throw py::type_error("placements: expected Shard, Replicate or Partial, got " +
                           py::repr(entry).cast<std::string>());
    }
  }
  return result;
}

// The C++ placements as a tuple of the Python placement objects (PyTorch's DTensor.placements).
py::tuple FromPlacements(const Placements& placements) {
  py::list result;
  for (const Placement& placement : placements) {
    if (placement.is_shard()) {
      result.append(Shard{placement.dim()});
    } else if (placement.is_partial()) {
      result.append(Partial{placement.reduce_op()});
    } else {
      result.append(Replicate{});
    }
  }
  return py::tuple(result);
}

// The first non-empty entry of a device-id array's nesting as its shape: [[0, 1], [2, 3]] or a
// numpy array (PyTorch's DeviceMesh(device_type, mesh) takes either).
std::pair<std::vector<int64_t>, std::vector<int64_t>> IdsAndShape(const py::handle& mesh) {
  py::array_t<int64_t, py::array::c_style | py::array::forcecast> ids =
      py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(mesh);
  if (!ids) throw py::type_error("DeviceMesh: mesh is an array (nested lists) of device ids");
  std::vector<int64_t> shape(ids.shape(), ids.shape() + ids.ndim());
  return {std::vector<int64_t>(ids.data(), ids.data() + ids.size()), shape};
}

// mesh_dim_names: None (no names) or a sequence of strings.
std::vector<std::string> Names(const py::object& names) {
  return names.is_none() ? std::vector<std::string>{} : names.cast<std::vector<std::string>>();
}

void BindDeviceMesh(py::module_& module) {
  py::class_<DeviceMesh> mesh(module, "DeviceMesh",
                              "torch.distributed.device_mesh.DeviceMesh: mesh devices laid out "
                              "row-major in an N-d array, one name per dim or none.");
  mesh.def(py::init([](const std::string& device_type, py::handle ids, py::object names) {
             (void)device_type;  // Every vkspmd mesh device is a Vulkan device.
             auto [device_ids, shape] = IdsAndShape(ids);
             return DeviceMesh(device_ids, shape, Names(names));
           }),
           py::arg("device_type"), py::arg("mesh"), py::kw_only(),
           py::arg("mesh_dim_names") = py::none(),
           "DeviceMesh(device_type, mesh, *, mesh_dim_names=None), as PyTorch: `mesh` is an "
           "array (nested lists or numpy) of mesh device ids in any order, e.g. "
           "DeviceMesh('vulkan', [[3, 1], [0, 2]], mesh_dim_names=('dp', 'tp')). device_type is "
           "accepted for PyTorch's spelling and not used: the devices are vkspmd's mesh devices "
           "(VKSPMD_DEVICES). A device given twice or one that does not exist raises ValueError.");
  mesh.def(py::init<Mesh>(), py::arg("mesh"), "The DeviceMesh of a vkspmd.Mesh.");
  mesh.def_property_readonly(
      "mesh",
      [](const DeviceMesh& m) {
        py::array_t<int64_t> ids(m.shape());
        std::copy(m.device_ids().begin(), m.device_ids().end(), ids.mutable_data());
        return ids;
      },
      "The device ids as a numpy array of the mesh's shape.");
  mesh.def_property_readonly("shape",
                             [](const DeviceMesh& m) { return py::tuple(py::cast(m.shape())); });
  mesh.def_property_readonly("ndim", &DeviceMesh::ndim);
  mesh.def_property_readonly("mesh_dim_names", [](const DeviceMesh& m) -> py::object {
    if (m.axis_names().empty()) return py::none();
    return py::tuple(py::cast(m.axis_names()));
  });
  mesh.def_property_readonly("device_ids", &DeviceMesh::device_ids);
  mesh.def(
      "size",
      [](const DeviceMesh& m, py::object mesh_dim) -> int64_t {
        if (mesh_dim.is_none()) return m.size();
        if (py::isinstance<py::str>(mesh_dim)) return m.size(mesh_dim.cast<std::string>());
        return m.size(mesh_dim.cast<int64_t>());
      },
      py::arg("mesh_dim") = py::none(),
      "The number of devices, or of mesh dim `mesh_dim` (an index or a name).");
  mesh.def("to_mesh", &DeviceMesh::mesh, "The same devices as a vkspmd.Mesh (for mark_sharding).");
  mesh.def("__repr__", &DeviceMesh::to_string);
  mesh.def(py::self == py::self);
}

void BindPlacements(py::module_& module) {
  py::class_<Shard>(module, "Shard",
                    "Shard(dim): tensor dim `dim` split over the mesh dim as torch.chunk splits "
                    "it (chunks of ceil(size / n), the last ones shorter or empty).")
      .def(py::init<int64_t>(), py::arg("dim"))
      .def_readonly("dim", &Shard::dim)
      .def(
          "is_shard",
          [](const Shard& s, py::object dim) {
            return dim.is_none() || dim.cast<int64_t>() == s.dim;
          },
          py::arg("dim") = py::none())
      .def("is_replicate", [](const Shard&) { return false; })
      .def("is_partial", [](const Shard&) { return false; })
      .def("__repr__", [](const Shard& s) { return Placement(s).to_string(); })
      .def(py::self == py::self)
      .def("__hash__", [](const Shard& s) { return std::hash<int64_t>()(s.dim); });
  py::class_<Replicate>(module, "Replicate",
                        "Replicate(): the whole tensor on every device of "
                        "the mesh dim.")
      .def(py::init<>())
      .def(
          "is_shard", [](const Replicate&, py::object) { return false; },
          py::arg("dim") = py::none())
      .def("is_replicate", [](const Replicate&) { return true; })
      .def("is_partial", [](const Replicate&) { return false; })
      .def("__repr__", [](const Replicate& r) { return Placement(r).to_string(); })
      .def(py::self == py::self)
      .def("__hash__", [](const Replicate&) { return 1; });
  py::class_<Partial>(module, "Partial",
                      "Partial(reduce_op='sum'): every device of the mesh dim holds a tensor of "
                      "the full shape; the value is their reduction ('sum', 'avg', 'max' or "
                      "'min'), done by the next redistribute, full_tensor or op.")
      .def(py::init([](const std::string& op) { return Partial{ToReduceOp(op, "Partial")}; }),
           py::arg("reduce_op") = "sum")
      .def_property_readonly("reduce_op", [](const Partial& p) { return ReduceOpName(p.op); })
      .def(
          "is_shard", [](const Partial&, py::object) { return false; }, py::arg("dim") = py::none())
      .def("is_replicate", [](const Partial&) { return false; })
      .def("is_partial", [](const Partial&) { return true; })
      .def("__repr__", [](const Partial& p) { return Placement(p).to_string(); })
      .def(py::self == py::self)
      .def("__hash__", [](const Partial& p) { return 2 + static_cast<int>(p.op); });
}

// redistribute's arguments, defaulted as PyTorch does: None keeps the DTensor's own mesh or
// placements.
std::pair<DeviceMesh, Placements> Target(const DTensor& t, const py::object& mesh,
                                         const py::object& placements) {
  return {mesh.is_none() ? t.device_mesh() : mesh.cast<const DeviceMesh&>(),
          placements.is_none() ? t.placements() : ToPlacements(placements)};
}

void BindDTensorClass(py::module_& module) {
  py::class_<DTensor> cls(module, "DTensor",
                          "torch.distributed.tensor.DTensor: a tensor laid out over a "
                          "DeviceMesh by one placement per mesh dim. Lazy like Tensor.");
  cls.def_static(
      "from_local",
      [](const std::vector<Tensor>& locals, const DeviceMesh& mesh, py::handle placements) {
        return from_local(locals, mesh, ToPlacements(placements));
      },
      py::arg("local_tensors"), py::arg("device_mesh"), py::arg("placements"),
      "A DTensor from every mesh device's local tensor, in the mesh's row-major order (PyTorch "
      "takes the calling rank's one; a vkspmd process drives every device): Shard dims "
      "concatenate their locals (any chunk sizes), Replicate dims take the first coordinate's, "
      "Partial dims keep each local as an addend.");
  cls.def(
      "to_local",
      [](const DTensor& t) {
        std::vector<Tensor> locals;
        {
          py::gil_scoped_release release;
          locals = t.to_local();
        }
        // The devices of other processes (after vkspmd.distributed.initialize()) have none here.
        py::list result;
        for (const Tensor& local : locals) {
          result.append(local.defined() ? py::cast(local) : py::none());
        }
        return result;
      },
      "Every mesh device's local tensor, in the mesh's row-major order: its chunk for Shard "
      "dims, its own addend for Partial dims; None for a device of another process. Runs what "
      "is pending.");
  cls.def(
      "redistribute",
      [](const DTensor& t, py::object mesh, py::object placements) {
        const auto [target, layout] = Target(t, mesh, placements);
        return t.redistribute(target, layout);
      },
      py::arg("device_mesh") = py::none(), py::arg("placements") = py::none(),
      "The same value under new placements (on `device_mesh`, else this one): the SPMD "
      "partitioner picks the collectives (all-gather, all-to-all, all-reduce, a local slice).");
  cls.def(
      "redistribute_collectives",
      [](const DTensor& t, py::object mesh, py::object placements) {
        const auto [target, layout] = Target(t, mesh, placements);
        return t.redistribute_collectives(target, layout);
      },
      py::arg("device_mesh") = py::none(), py::arg("placements") = py::none(),
      "What redistribute would run, without running it: the collectives in order, e.g. "
      "['all-gather along tp'] (PyTorch's CommDebugMode counts).");
  cls.def("full_tensor", &DTensor::full_tensor,
          "The global value as a lazy Tensor replicated over the mesh (Partial dims reduced).");
  cls.def_property_readonly("placements",
                            [](const DTensor& t) { return FromPlacements(t.placements()); });
  cls.def_property_readonly("device_mesh", &DTensor::device_mesh);
  cls.def_property_readonly(
      "shape", [](const DTensor& t) { return py::tuple(py::cast(t.shape())); },
      "The global shape.");
  cls.def_property_readonly("dtype", &DTensor::dtype);
  cls.def("__repr__", &DTensor::to_string);
  cls.def(py::self + py::self);
  cls.def(py::self - py::self);
  cls.def(py::self * py::self);
  cls.def(
      "__matmul__", [](const DTensor& a, const DTensor& b) { return matmul(a, b); },
      py::is_operator());
  cls.def(
      "__neg__", [](const DTensor& t) { return -t; }, py::is_operator());
  cls.def(
      "neg", [](const DTensor& t) { return neg(t); },
      "-self, with PyTorch's rule: a Partial('sum'/'avg') stays pending, Partial('max') becomes "
      "Partial('min') and the reverse.");
  cls.def(
      "relu", [](const DTensor& t) { return relu(t); },
      "max(self, 0), with PyTorch's rule: Partial('max'/'min') stays pending, a Partial('sum'/"
      "'avg') is reduced first (Replicate).");
  cls.def(
      "sum",
      [](const DTensor& t, const py::object& dim, bool keepdim) {
        std::vector<int64_t> dims;
        if (py::isinstance<py::int_>(dim)) {
          dims.push_back(dim.cast<int64_t>());
        } else if (!dim.is_none()) {
          dims = dim.cast<std::vector<int64_t>>();
        }
        return sum(t, dims, keepdim);
      },
      py::arg("dim") = py::none(), py::arg("keepdim") = false,
      "The sum over `dim` (an int, a sequence, or None for all), with PyTorch's rule: a dim split "
      "by Shard becomes a pending Partial('sum') over those mesh dims (each device sums its "
      "chunk), a Partial('sum') stays pending, another Partial is reduced first.");
  module.def(
      "distribute_tensor",
      [](const Tensor& tensor, const DeviceMesh& mesh, py::handle placements) {
        return distribute_tensor(tensor, mesh, ToPlacements(placements));
      },
      py::arg("tensor"), py::arg("device_mesh"), py::arg("placements"),
      "The global `tensor` laid out over `device_mesh` by `placements` (one Shard, Replicate or "
      "Partial per mesh dim). A Partial placement is PyTorch's Replicate -> Partial: "
      "Partial('sum') stores value / mesh-dim size on every device, avg/max/min the value.");
}

// A style's input_layouts / output_layouts: None, a placement, or a 1-tuple of one (PyTorch takes
// a tuple per module input; vkspmd's layers have one).
std::optional<Placement> LayoutOption(const py::object& value, const char* option) {
  if (value.is_none()) return std::nullopt;
  py::object entry = value;
  if (py::isinstance<py::tuple>(value)) {
    if (py::len(value) != 1) {
      throw py::value_error(std::string(option) +
                            ": one placement (a vkspmd layer has one input and one output)");
    }
    entry = value[py::int_(0)];
  }
  return ToPlacements(py::make_tuple(entry)).at(0);
}

// PyTorch's use_local_output=False returns DTensors; a vkspmd module returns its global Tensor.
void RequireLocalOutput(bool use_local_output) {
  if (!use_local_output) {
    throw py::value_error(
        "use_local_output=False: a vkspmd module returns the global (lazy) Tensor laid out as "
        "output_layouts says, never a DTensor or a local shard (docs/dtensor.md)");
  }
}

template <typename Style>
void BindLayoutStyle(py::module_& module, const char* name, const char* doc) {
  py::class_<Style>(module, name, doc)
      .def(py::init([](const py::object& input_layouts, const py::object& output_layouts,
                       bool use_local_output) {
             RequireLocalOutput(use_local_output);
             return Style{LayoutOption(input_layouts, "input_layouts"),
                          LayoutOption(output_layouts, "output_layouts")};
           }),
           py::kw_only(), py::arg("input_layouts") = py::none(),
           py::arg("output_layouts") = py::none(), py::arg("use_local_output") = true);
}

// A DeviceMesh factory of the C++ API as a Python function of a shape (named
// `shape_argument`) and the keyword mesh_dim_names.
void DefMeshFactory(py::module_& module, const char* name,
                    DeviceMesh (*factory)(const std::vector<int64_t>&, std::vector<std::string>),
                    const char* shape_argument, const char* doc) {
  module.def(
      name,
      [factory](const std::vector<int64_t>& shape, const py::object& names) {
        return factory(shape, Names(names));
      },
      py::arg(shape_argument), py::kw_only(), py::arg("mesh_dim_names") = py::none(), doc);
}

void BindParallelize(py::module_& module) {
  BindLayoutStyle<ColwiseParallel>(
      module, "ColwiseParallel",
      "Linear: weight Shard(0), bias Shard(0); Embedding: Shard(1). ColwiseParallel(*, "
      "input_layouts=None, output_layouts=None, use_local_output=True): a layout (Shard(d) or "
      "Replicate()) constrains the module's input / output over the tensor-parallel dim; None "
      "leaves it to sharding propagation.");
  BindLayoutStyle<RowwiseParallel>(
      module, "RowwiseParallel",
      "Linear: weight Shard(1), bias Replicate(); Embedding: Shard(0). Layout options as "
      "ColwiseParallel's (output_layouts=Shard(1): Megatron's reduce-scatter into the sequence).");
  py::class_<SequenceParallel>(module, "SequenceParallel",
                               "PyTorch's SequenceParallel; docs/dtensor.md says which "
                               "module types parallelize_module takes it for.")
      .def(py::init<>());
  py::class_<FullyShard>(module, "FullyShard",
                         "PyTorch's fully_shard (FSDP) as a style for any module: every "
                         "parameter of the module and of its submodules split on one dim over "
                         "parallelize_module's data_axis (required). FullyShard(dim=None): None "
                         "splits each parameter's largest dim (PyTorch/XLA FSDPv2's "
                         "shard_maximal, what nn.fsdp_v2 does); an int that dim (negative from "
                         "the end; PyTorch's default is Shard(0)). With a tensor-parallel style "
                         "on the same parameter both apply.")
      .def(py::init([](std::optional<int64_t> dim) { return FullyShard{dim}; }),
           py::arg("dim") = py::none())
      .def_property_readonly("dim", [](const FullyShard& style) { return style.dim; })
      .def("__repr__", [](const FullyShard& style) {
        return style.dim.has_value() ? "FullyShard(dim=" + std::to_string(*style.dim) + ")"
                                     : std::string("FullyShard(dim=None)");
      });
  module.def(
      "parallelize_module",
      [](nn::Module& model, const DeviceMesh& mesh, py::dict plan, const std::string& axis,
         const std::string& data_axis) {
        ParallelizePlan entries;
        for (const auto& [name, style] : plan) {
          ParallelStyle value = SequenceParallel{};
          if (py::isinstance<ColwiseParallel>(style)) {
            value = style.cast<ColwiseParallel>();
          } else if (py::isinstance<RowwiseParallel>(style)) {
            value = style.cast<RowwiseParallel>();
          } else if (py::isinstance<FullyShard>(style)) {
            value = style.cast<FullyShard>();
          } else if (!py::isinstance<SequenceParallel>(style)) {
            throw py::type_error("parallelize_module: the style of \"" +
                                 py::str(name).cast<std::string>() +
                                 "\" is not ColwiseParallel, RowwiseParallel, SequenceParallel "
                                 "or FullyShard");
          }
          entries.emplace_back(name.cast<std::string>(), value);
        }
        parallelize_module(model, mesh, entries, axis, data_axis);
        return &model;
      },
      py::arg("module"), py::arg("device_mesh"), py::arg("parallelize_plan"), py::arg("axis") = "",
      py::arg("data_axis") = "", py::return_value_policy::reference,
      "torch.distributed.tensor.parallel.parallelize_module: marks the parameters of each module "
      "named in `parallelize_plan` ({'fc1': ColwiseParallel(), 'fc2': RowwiseParallel()}, dotted "
      "names as named_modules gives them) with its style's placements over mesh dim `axis` (the "
      "only one of a 1-D mesh when ''; not needed for an empty plan); every other parameter is "
      "replicated. With `data_axis`, the model's inputs (shard_input) are split on their batch "
      "dim over that mesh dim, as data parallelism places them; FullyShard() splits its "
      "module's parameters over it too ({'': FullyShard()} with data_axis='fsdp' is the fsdp "
      "strategy). Returns `module`.");
  module.def(
      "tensor_parallel_plan",
      [](const nn::Module& model) {
        py::dict plan;
        for (const auto& [name, style] : tensor_parallel_plan(model)) {
          plan[py::str(name)] = std::holds_alternative<ColwiseParallel>(style)
                                    ? py::cast(ColwiseParallel{})
                                    : py::cast(RowwiseParallel{});
        }
        return plan;
      },
      py::arg("module"),
      "Megatron's plan for a vkspmd.nn model, the one nn.tensor_parallel applies, as a dict for "
      "parallelize_module: {'mlp.fc1': ColwiseParallel(), 'mlp.fc2': RowwiseParallel(), ...}.");
  DefMeshFactory(
      module, "init_device_mesh", &init_device_mesh, "mesh_shape",
      "A DeviceMesh of `mesh_shape` over the job's mesh devices 0 .. prod(mesh_shape) - 1 in "
      "row-major order (after vkspmd.distributed.initialize() process p's devices follow those "
      "of processes 0 .. p-1, so a leading dim of process_count() spans the processes). A job "
      "with fewer devices raises InvalidArgumentError (a ValueError).");
  DefMeshFactory(
      module, "hybrid_device_mesh", &hybrid_device_mesh, "inner_shape",
      "A hybrid DeviceMesh: a first dim over the processes of the job (size 1 in one process, "
      "process_count() after vkspmd.distributed.initialize()), then `inner_shape` over each "
      "process's own devices, so collectives along the inner dims stay inside a process (HSDP's "
      "('dp_replicate', 'dp_shard')). Every process must drive prod(inner_shape) devices, else "
      "InvalidArgumentError naming the counts.");
}

}  // namespace

void BindDTensor(py::module_& module) {
  py::module_ dtensor = module.def_submodule(
      "dtensor", "PyTorch's DTensor API (vkspmd.distributed.tensor re-exports it).");
  BindDeviceMesh(dtensor);
  BindPlacements(dtensor);
  BindDTensorClass(dtensor);
  BindParallelize(dtensor);
}

}  // namespace vkspmd::python
