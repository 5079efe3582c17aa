// Sharding as PyTorch/XLA spells it: Mesh(device_ids, mesh_shape, axis_names), get_1d_mesh,
// mark_sharding with a partition spec of ints, names, tuples and None, the ShardedTensor's
// sharding_spec / sharding_type / local_shards, clear_sharding, the sharding pictures, and the
// step calls (mark_step, wait_device_ops, metrics). Calls that may wait release the GIL.
#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include <string>

#include "python/src/bindings.h"
#include "vkspmd/lazy.h"
#include "vkspmd/mesh.h"
#include "vkspmd/sharded_tensor.h"

namespace vkspmd::python {

void WaitDeviceOpsInterruptibly() {
  while (true) {
    bool finished = false;
    {
      py::gil_scoped_release release;
      finished = wait_device_ops_for(0.05);
    }
    if (finished) return;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
}

void LaunchAndWaitInterruptibly(const Tensor& t) {
  {
    // Compiling is not interruptible (the worker compiles a new graph before Launch returns).
    py::gil_scoped_release release;
    sync(std::vector<Tensor>{t});
  }
  WaitDeviceOpsInterruptibly();
}

HostTensor ReadInterruptibly(const Tensor& t) {
  LaunchAndWaitInterruptibly(t);
  py::gil_scoped_release release;
  return t.to_host();
}

namespace {

AxisName ToAxis(py::handle axis) {
  if (py::isinstance<py::str>(axis)) return AxisName(axis.cast<std::string>());
  if (PyIndex_Check(axis.ptr()) && !PyBool_Check(axis.ptr())) {
    return AxisName(axis.cast<int64_t>());
  }
  throw py::type_error(
      "mark_sharding: a partition spec entry is a mesh axis (int or name), a "
      "tuple of them, or None; got " +
      py::repr(axis).cast<std::string>());
}

}  // namespace

PartitionSpec ToPartitionSpec(const py::handle& spec) {
  if (!py::isinstance<py::sequence>(spec) || py::isinstance<py::str>(spec)) {
    throw py::type_error("mark_sharding: partition_spec is a tuple with one entry per dim");
  }
  PartitionSpec result;
  for (py::handle entry : spec) {
    if (entry.is_none()) {
      result.emplace_back(None);
    } else if (py::isinstance<py::tuple>(entry) || py::isinstance<py::list>(entry)) {
      Axes axes{};
      for (py::handle axis : entry) axes.axes.push_back(ToAxis(axis));
      result.emplace_back(std::move(axes));
    } else {
      result.emplace_back(ToAxis(entry));
    }
  }
  return result;
}

namespace {

using Release = py::call_guard<py::gil_scoped_release>;

std::vector<int64_t> IntList(const py::handle& values) {
  std::vector<int64_t> result;
  for (py::handle value : py::iter(values)) result.push_back(value.cast<int64_t>());
  return result;
}

void BindMesh(py::module_& module) {
  py::class_<Mesh> mesh(module, "Mesh",
                        "A logical N-d array of mesh devices with optional axis names.");
  mesh.def(py::init([](py::handle device_ids, py::handle mesh_shape, py::object axis_names) {
             std::vector<std::string> names;
             if (!axis_names.is_none()) names = axis_names.cast<std::vector<std::string>>();
             return Mesh(IntList(mesh_shape), IntList(device_ids), names);
           }),
           py::arg("device_ids"), py::arg("mesh_shape"), py::arg("axis_names") = py::none(),
           "Mesh(device_ids, mesh_shape, axis_names=None), as PyTorch/XLA: device_ids in "
           "row-major mesh order (a list or a numpy array), e.g. Mesh(np.arange(8), (2, 4), "
           "('data', 'model')).");
  mesh.def_property_readonly("mesh_shape",
                             [](const Mesh& m) { return py::tuple(py::cast(m.shape())); });
  mesh.def_property_readonly("device_ids", [](const Mesh& m) { return m.device_ids(); });
  mesh.def_property_readonly("axis_names",
                             [](const Mesh& m) { return py::tuple(py::cast(m.axis_names())); });
  mesh.def("size", &Mesh::size, "The number of devices.");
  mesh.def("get_axis_index", &Mesh::axis_index, py::arg("name"));
  mesh.def("__repr__", &Mesh::to_string);
  mesh.def(py::self == py::self);
  module.def("get_1d_mesh", &get_1d_mesh, py::arg("axis_name") = "",
             "A 1-D mesh over every device of device_count().");
  module.def("device_count", &device_count,
             "The number of mesh devices (VKSPMD_DEVICES, else one per usable GPU).");
  module.def("set_global_mesh", &set_global_mesh, py::arg("mesh"));
  module.def("get_global_mesh", &get_global_mesh);
}

void BindShardedTensor(py::module_& module) {
  py::enum_<ShardingType>(module, "ShardingType")
      .value("REPLICATED", ShardingType::kReplicated)
      .value("MAXIMAL", ShardingType::kMaximal)
      .value("TILED", ShardingType::kTiled)
      .value("PARTIAL", ShardingType::kPartial)
      .value("MANUAL", ShardingType::kManual);
  py::class_<LocalShard>(module, "Shard", "One device's shard of a ShardedTensor.")
      .def_readonly("device", &LocalShard::device, "The mesh device index.")
      .def_property_readonly(
          "indices",
          [](const LocalShard& shard) {
            py::list slices;
            for (const IndexRange& range : shard.indices) {
              slices.append(py::slice(range.start, range.stop, 1));
            }
            return py::tuple(slices);
          },
          "The global index of the shard as slices: t.numpy()[shard.indices].")
      .def_property_readonly(
          "data", [](const LocalShard& shard) { return NumpyFromHostTensor(shard.data); },
          "The shard as stored (padded to the common shard shape with zeros), as numpy.")
      .def_property_readonly("unpadded_data", [](const LocalShard& shard) {
        return NumpyFromHostTensor(shard.unpadded_data);
      });
  py::class_<ShardedTensor, Tensor>(module, "ShardedTensor",
                                    "A Tensor marked with a sharding (mark_sharding's result).")
      .def_property_readonly("global_tensor", &ShardedTensor::global_tensor)
      .def_property_readonly(
          "local_shards",
          [](const ShardedTensor& t) {
            LaunchAndWaitInterruptibly(t);
            py::gil_scoped_release release;
            return t.local_shards();
          },
          "Per mesh device its Shard (runs what is pending and reads the shards; Ctrl-C "
          "interrupts the wait for the devices).")
      .def_property_readonly("sharding_spec", &ShardedTensor::sharding_spec, Release(),
                             "The HLO sharding text, e.g. '{devices=[2,4]<=[8]}'.")
      .def_property_readonly("sharding_type", &ShardedTensor::sharding_type, Release())
      .def_property_readonly("mesh", &ShardedTensor::mesh);
}

void BindMarking(py::module_& module) {
  module.def(
      "mark_sharding",
      [](const Tensor& t, py::object mesh, py::handle spec) {
        PartitionSpec partition = ToPartitionSpec(spec);
        return mesh.is_none() ? mark_sharding(t, partition)
                              : mark_sharding(t, mesh.cast<const Mesh&>(), partition);
      },
      py::arg("t"), py::arg("mesh"), py::arg("partition_spec"),
      "Shards `t` over `mesh` (None: the global mesh) by `partition_spec`, one entry per dim: a "
      "mesh axis index (0) or name ('data'), a tuple of axes splitting the dim over their "
      "product (major first), or None (unsplit). Marks `t` itself, as PyTorch/XLA does, and "
      "returns it as a ShardedTensor. Raises ValueError for a spec whose length differs from the "
      "rank or an unknown axis, vkspmd.Error for a tensor already sharded otherwise.");
  module.def("mark_sharding_like", &mark_sharding_like, py::arg("t"), py::arg("reference"),
             "Shards `t` exactly as `reference` was marked.");
  module.def("clear_sharding", &clear_sharding, py::arg("t"),
             "Removes the sharding annotation; the data stays where it is until marked again.");
  module.def("sharding_spec", py::overload_cast<const Tensor&>(&sharding_spec), py::arg("t"),
             Release(), "The HLO sharding text of any tensor ('' without a mesh).");
  module.def("_visualize_tensor_sharding", &visualize_tensor_sharding, py::arg("t"),
             py::arg("use_color") = false, Release());
  module.def("_sharding_svg", &sharding_svg, py::arg("t"), Release());
}

void BindSteps(py::module_& module) {
  module.def(
      "sync", [] { sync(); }, Release(),
      "Compiles (or finds cached) and launches everything pending; returns without waiting.");
  module.def(
      "mark_step", [] { mark_step(); }, Release(),
      "The end of a training step: launches the pending graph (PyTorch/XLA's xm.mark_step).");
  module.def("wait_device_ops", &WaitDeviceOpsInterruptibly,
             "Blocks until every launched graph has finished; Ctrl-C interrupts the wait "
             "(KeyboardInterrupt) without stopping the graphs.");
  module.def("wait_device_ops_for", &wait_device_ops_for, py::arg("seconds"), Release(),
             "Waits at most `seconds`; whether every launched graph has finished.");
  module.def("shutdown", &shutdown, Release(),
             "Frees every tensor's device value and closes the devices (exit does the same).");
  module.def("metrics_report", &metrics_report, Release(), "The runtime's counters as a table.");
  module.def("reset_metrics", &reset_metrics);
  module.def(
      "metrics",
      [] {
        Metrics m;
        {
          py::gil_scoped_release release;
          m = metrics();
        }
        const std::pair<const char*, int64_t Metrics::*> counts[] = {
            {"compile_count", &Metrics::compile_count},
            {"execute_count", &Metrics::execute_count},
            {"cache_hits", &Metrics::cache_hits},
            {"host_to_device_bytes", &Metrics::host_to_device_bytes},
            {"device_to_host_bytes", &Metrics::device_to_host_bytes},
            {"collective_bytes", &Metrics::collective_bytes},
            {"donated_count", &Metrics::donated_count},
            {"donated_bytes", &Metrics::donated_bytes},
            {"compile_cache_hits", &Metrics::compile_cache_hits},
            {"compile_cache_misses", &Metrics::compile_cache_misses},
            {"kernel_dispatches", &Metrics::kernel_dispatches},
            {"collective_runs", &Metrics::collective_runs}};
        const std::pair<const char*, double Metrics::*> seconds[] = {
            {"compile_seconds", &Metrics::compile_seconds},
            {"execute_seconds", &Metrics::execute_seconds},
            {"collective_seconds", &Metrics::collective_seconds}};
        py::dict result;
        for (const auto& [name, field] : counts) result[name] = m.*field;
        for (const auto& [name, field] : seconds) result[name] = m.*field;
        return result;
      },
      "The counters so far as a dict (waits for launched work first).");
}

}  // namespace

void BindSharding(py::module_& module) {
  BindMesh(module);
  BindShardedTensor(module);
  BindMarking(module);
  BindSteps(module);
}

}  // namespace vkspmd::python
