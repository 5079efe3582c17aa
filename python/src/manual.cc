// Manual sharding from Python (vkspmd/manual.h): PyTorch/XLA's enable_manual_sharding /
// disable_manual_sharding and JAX's shard_map in vkspmd._C, the collectives in
// vkspmd._C.collectives.
#include "vkspmd/manual.h"

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "python/src/bindings.h"
#include "vkspmd/mesh.h"

namespace vkspmd::python {
namespace {

// PyTorch/XLA's mesh=None: the global mesh.
const Mesh& MeshArgument(const py::object& mesh) {
  return mesh.is_none() ? get_global_mesh() : mesh.cast<const Mesh&>();
}

// JAX's axis_name: one name or a sequence of them.
std::vector<std::string> AxesArgument(const py::handle& axes) {
  if (py::isinstance<py::str>(axes)) return {axes.cast<std::string>()};
  return axes.cast<std::vector<std::string>>();
}

// JAX's auto=: a set (or any iterable) of mesh axis names kept automatic, or one name. Passed on
// in the mesh's axis order (a set's iteration order varies between runs; the C++ errors name
// the axes in the order given), names the mesh lacks last, for the C++ call to refuse.
std::vector<std::string> AutoAxes(const py::handle& names, const Mesh& mesh) {
  if (names.is_none()) return {};
  std::vector<std::string> result;
  if (py::isinstance<py::str>(names)) {
    result.push_back(names.cast<std::string>());
  } else {
    if (!py::isinstance<py::iterable>(names)) {
      throw py::type_error("auto: a set of mesh axis names, not " +
                           py::repr(names).cast<std::string>());
    }
    for (py::handle name : names) {
      if (!py::isinstance<py::str>(name)) {
        throw py::type_error("auto: mesh axis names are strings, not " +
                             py::repr(name).cast<std::string>());
      }
      result.push_back(name.cast<std::string>());
    }
  }
  const std::vector<std::string>& order = mesh.axis_names();
  auto position = [&order](const std::string& name) {
    return std::find(order.begin(), order.end(), name) - order.begin();
  };
  std::stable_sort(result.begin(), result.end(), [&](const std::string& a, const std::string& b) {
    return position(a) < position(b);
  });
  return result;
}

std::vector<PartitionSpec> SpecList(const py::handle& specs, const char* what) {
  if (!py::isinstance<py::sequence>(specs) || py::isinstance<py::str>(specs)) {
    throw py::type_error(std::string("shard_map: ") + what +
                         " is a sequence with one partition spec per tensor");
  }
  std::vector<PartitionSpec> result;
  for (py::handle spec : specs) result.push_back(ToPartitionSpec(spec));
  return result;
}

// `fn` returns a Tensor or a sequence of them; `single` records which, so that the mapped
// function returns the same kind.
std::vector<Tensor> Outputs(const py::object& value, bool& single) {
  single = py::isinstance<Tensor>(value);
  if (single) return {value.cast<Tensor>()};
  if (!py::isinstance<py::sequence>(value)) {
    throw py::type_error("shard_map: the function returns a Tensor or a sequence of Tensors, not " +
                         py::repr(value).cast<std::string>());
  }
  return value.cast<std::vector<Tensor>>();
}

void BindRegions(py::module_& module) {
  module.def(
      "enable_manual_sharding",
      [](const Tensor& t, py::handle partition_spec, py::object mesh, py::handle auto_axes) {
        const Mesh& region_mesh = MeshArgument(mesh);
        return enable_manual_sharding(t, region_mesh, ToPartitionSpec(partition_spec),
                                      AutoAxes(auto_axes, region_mesh));
      },
      py::arg("t"), py::arg("partition_spec"), py::kw_only(), py::arg("mesh") = py::none(),
      py::arg("auto") = py::frozenset(py::tuple()),
      "torch_xla.distributed.spmd.enable_manual_sharding: enters a manual region. `t` (the "
      "global value) is laid out over `mesh` (None: the global mesh) by `partition_spec` as "
      "mark_sharding does, and the result is one device's shard: every op on it runs per device "
      "on that device's shard, and the collectives of vkspmd.collectives combine the devices. "
      "Each split dim must divide evenly (ValueError naming the dim and the axes otherwise). "
      "`auto` (as shard_map's) keeps those mesh axes automatic: the region is manual over the "
      "others only, `partition_spec` may name only those, and mark_sharding inside splits the "
      "shard over the auto axes.");
  module.def(
      "disable_manual_sharding",
      [](const Tensor& t, py::handle partition_spec, const std::vector<int64_t>& full_shape,
         py::object mesh) {
        return disable_manual_sharding(t, MeshArgument(mesh), ToPartitionSpec(partition_spec),
                                       full_shape);
      },
      py::arg("t"), py::arg("partition_spec"), py::arg("full_shape"), py::kw_only(),
      py::arg("mesh") = py::none(),
      "torch_xla.distributed.spmd.disable_manual_sharding: leaves a manual region. The "
      "per-device values of `t` are the shards of a tensor of `full_shape` laid out by "
      "`partition_spec` over `mesh` (None: the global mesh); an axis the spec leaves out says the "
      "values are equal along it. ValueError when `t` is not manual or not the shard shape.");
  module.def(
      "shard_map",
      [](py::function fn, const Mesh& mesh, py::handle in_specs, py::handle out_specs,
         py::handle auto_axes) {
        auto single = std::make_shared<bool>(false);
        ShardMapFunction mapped = shard_map(
            [fn, single](const std::vector<Tensor>& shards) {
              py::gil_scoped_acquire acquire;
              return Outputs(fn(*py::cast(shards)), *single);
            },
            mesh, SpecList(in_specs, "in_specs"), SpecList(out_specs, "out_specs"),
            AutoAxes(auto_axes, mesh));
        return py::cpp_function([mapped, single](const py::args& args) -> py::object {
          std::vector<Tensor> outputs = mapped(args.cast<std::vector<Tensor>>());
          if (*single) return py::cast(outputs[0]);
          return py::tuple(py::cast(outputs));
        });
      },
      py::arg("f"), py::arg("mesh"), py::arg("in_specs"), py::arg("out_specs"), py::kw_only(),
      py::arg("auto") = py::frozenset(py::tuple()),
      "jax.shard_map: f(*tensors) over per-device shards. Returns a function of global tensors "
      "that enters a manual region with each input's spec in `in_specs` (one partition spec per "
      "input), calls `f` on the shards, and leaves the region with f's per-device results by "
      "`out_specs` (one spec per output; an output's global shape is its shard shape times the "
      "sizes of the axes its spec names). `f` returns a Tensor (the mapped function then returns "
      "a Tensor) or a sequence (a tuple). ValueError when the counts differ from the specs'. "
      "`auto` (a set of mesh axis names, JAX's auto=) makes the region manual over the other "
      "axes only: the specs and the collectives name only manual axes, each group of devices "
      "along the auto axes holds one value, and mark_sharding inside (a spec over the auto "
      "axes) lets the partitioner split it there. ValueError for an axis the mesh lacks, a spec "
      "or collective naming an auto axis, or auto axes covering the mesh.");
}

void BindCollectives(py::module_& module) {
  module.def(
      "all_reduce",
      [](const Tensor& t, py::handle axis_name, const std::string& reduce_op) {
        return all_reduce(t, AxesArgument(axis_name), ToReduceOp(reduce_op, "all_reduce"));
      },
      py::arg("t"), py::arg("axis_name"), py::arg("reduce_op") = "sum",
      "Inside a manual region: every member of each device group along `axis_name` (a mesh "
      "axis name or a sequence of them, first major) gets the group's reduction, `reduce_op` "
      "\"sum\" (jax.lax.psum), \"avg\" (the sum over the group size), \"max\" or \"min\".");
  module.def(
      "all_gather",
      [](const Tensor& t, py::handle axis_name, int64_t dim) {
        return all_gather(t, AxesArgument(axis_name), dim);
      },
      py::arg("t"), py::arg("axis_name"), py::arg("dim"),
      "Inside a manual region: the group's values along `axis_name` concatenated along `dim` in "
      "group order (jax.lax.all_gather with tiled=True).");
  module.def(
      "reduce_scatter",
      [](const Tensor& t, py::handle axis_name, int64_t dim) {
        return reduce_scatter(t, AxesArgument(axis_name), dim);
      },
      py::arg("t"), py::arg("axis_name"), py::arg("dim"),
      "Inside a manual region: the sum of the group's values along `axis_name`; member k keeps "
      "the k-th of the equal pieces along `dim` (jax.lax.psum_scatter with tiled=True).");
  module.def(
      "all_to_all",
      [](const Tensor& t, py::handle axis_name, int64_t split_dim, int64_t concat_dim) {
        return all_to_all(t, AxesArgument(axis_name), split_dim, concat_dim);
      },
      py::arg("t"), py::arg("axis_name"), py::arg("split_dim"), py::arg("concat_dim"),
      "Inside a manual region: `split_dim` cut into one piece per member of the group along "
      "`axis_name`, piece k sent to member k, the received pieces concatenated along "
      "`concat_dim` in sender order (jax.lax.all_to_all with tiled=True).");
  module.def(
      "axis_index",
      [](const Tensor& t, py::handle axis_name) { return axis_index(t, AxesArgument(axis_name)); },
      py::arg("t"), py::arg("axis_name"),
      "jax.lax.axis_index inside a manual region: each device's index along mesh axis "
      "`axis_name` (a sequence of axes: the linear index over them, first major) as an int32 "
      "scalar with one value per device. `t` is any tensor of the region: it names the mesh, "
      "which JAX's shard_map binds implicitly. The index is the device's mesh coordinate, so a "
      "mesh listing its devices in any order gives 0..size-1 along the axis. In a region with "
      "auto axes (shard_map's auto=) it is the coordinate along manual axes; an auto axis "
      "raises ValueError, as in JAX. ValueError also for an axis the mesh lacks; vkspmd.Error "
      "outside a region.");
  module.def("ppermute", &ppermute, py::arg("t"), py::arg("axis_name"), py::arg("perm"),
             "jax.lax.ppermute inside a manual region: each (source, target) pair of positions "
             "along mesh axis `axis_name` sends source's value to target, in every group along "
             "the axis; a position no pair targets receives zeros.");
}

}  // namespace

void BindManual(py::module_& module) {
  BindRegions(module);
  py::module_ collectives = module.def_submodule(
      "collectives",
      "Collectives over named mesh axes inside manual regions (vkspmd.collectives).");
  BindCollectives(collectives);
}

}  // namespace vkspmd::python
