// Sharded checkpoints from Python: CheckpointState (named tensors, a module's parameters, an
// optimizer's state and step counts), save/restore, the step's description and checks, and the
// CheckpointManager (when to save, background saves, which steps to keep, preemption).
#include "vkspmd/checkpoint.h"

#include <pybind11/stl.h>

#include <string>

#include "python/src/bindings.h"

namespace vkspmd::python {
namespace {

using Release = py::call_guard<py::gil_scoped_release>;

void BindState(py::module_& module) {
  py::class_<CheckpointState>(module, "CheckpointState",
                              "What a checkpoint holds: named tensors (held by reference, so a "
                              "restore changes them in place), integers, the data position, the "
                              "generator's state and metadata.")
      .def(py::init<>())
      .def("add", &CheckpointState::add, py::arg("name"), py::arg("tensor"),
           py::return_value_policy::reference_internal)
      .def("add_module", &CheckpointState::add_module, py::arg("module"),
           py::arg("prefix") = "model.", py::return_value_policy::reference_internal,
           "Every parameter of `module` as prefix + its dotted name.")
      // The state calls the optimizer at save and restore: it keeps the optimizer alive.
      .def("add_optimizer", &CheckpointState::add_optimizer, py::arg("optimizer"),
           py::arg("prefix") = "optimizer.", py::return_value_policy::reference_internal,
           py::keep_alive<1, 2>(),
           "The optimizer's state tensors and its per-parameter step counts.")
      .def_readonly("tensors", &CheckpointState::tensors)
      .def_readwrite("data_position", &CheckpointState::data_position)
      .def_readwrite("metadata", &CheckpointState::metadata)
      .def_readwrite("rng", &CheckpointState::rng);
  module.def("save_checkpoint", &save_checkpoint, py::arg("directory"), py::arg("step"),
             py::arg("state"), Release(),
             "Saves `state` as step `step` of `directory`, shard by shard (raises when the step "
             "exists).");
  module.def("restore_checkpoint", &restore_checkpoint, py::arg("step_path"), py::arg("state"),
             Release(),
             "Restores every tensor of `state` onto its current mesh and sharding (any mesh).");
}

void BindInfo(py::module_& module) {
  py::class_<CheckpointTensorInfo>(module, "CheckpointTensorInfo")
      .def_readonly("name", &CheckpointTensorInfo::name)
      .def_readonly("dtype", &CheckpointTensorInfo::dtype)
      .def_readonly("shape", &CheckpointTensorInfo::shape)
      .def_readonly("mesh", &CheckpointTensorInfo::mesh)
      .def_readonly("sharding", &CheckpointTensorInfo::sharding)
      .def_readonly("sharding_axes", &CheckpointTensorInfo::sharding_axes)
      .def_readonly("shard_count", &CheckpointTensorInfo::shard_count)
      .def_readonly("bytes", &CheckpointTensorInfo::bytes);
  py::class_<CheckpointInfo>(module, "CheckpointInfo")
      .def_readonly("step", &CheckpointInfo::step)
      .def_readonly("path", &CheckpointInfo::path)
      .def_readonly("created", &CheckpointInfo::created)
      .def_readonly("library_version", &CheckpointInfo::library_version)
      .def_readonly("bytes", &CheckpointInfo::bytes)
      .def_readonly("tensors", &CheckpointInfo::tensors)
      .def_readonly("metadata", &CheckpointInfo::metadata);
  module.def("checkpoint_info", &checkpoint_info, py::arg("step_path"), Release());
  module.def("verify_checkpoint", &verify_checkpoint, py::arg("step_path"), Release(),
             "Reads every shard and checks its checksum; the problems found (empty: sound).");
  module.def("export_safetensors", &export_safetensors, py::arg("step_path"),
             py::arg("output_path"), Release(),
             "Writes every tensor of the step, whole, as a safetensors file.");
}

void BindManager(py::module_& module) {
  py::class_<CheckpointManager>(module, "CheckpointManager",
                                "When to save, background saves, which steps to keep, and a save "
                                "on preemption (SIGTERM), as Orbax's CheckpointManager.")
      .def(py::init([](const std::string& directory, int64_t save_interval, int64_t max_to_keep,
                       int64_t keep_period, bool read_only, bool save_on_preemption) {
             return std::make_unique<CheckpointManager>(
                 directory, CheckpointOptions{save_interval, max_to_keep, keep_period, read_only,
                                              save_on_preemption});
           }),
           py::arg("directory"), py::kw_only(), py::arg("save_interval") = 1,
           py::arg("max_to_keep") = 0, py::arg("keep_period") = 0, py::arg("read_only") = false,
           py::arg("save_on_preemption") = false)
      .def("should_save", &CheckpointManager::should_save, py::arg("step"))
      .def("save", &CheckpointManager::save, py::arg("step"), py::arg("state"),
           py::arg("force") = false, Release())
      .def("save_async", &CheckpointManager::save_async, py::arg("step"), py::arg("state"),
           py::arg("force") = false, Release())
      .def("wait_until_finished", &CheckpointManager::wait_until_finished, Release())
      .def("all_steps", &CheckpointManager::all_steps)
      .def("latest_step", &CheckpointManager::latest_step)
      .def("restore", &CheckpointManager::restore, py::arg("step"), py::arg("state"), Release())
      .def("step_path", &CheckpointManager::step_path, py::arg("step"))
      .def_property_readonly("directory", &CheckpointManager::directory)
      .def_static("preemption_requested", &CheckpointManager::preemption_requested);
  module.attr("EXIT_PREEMPTED") = kExitPreempted;
}

}  // namespace

void BindCheckpoint(py::module_& module) {
  BindState(module);
  BindInfo(module);
  BindManager(module);
}

}  // namespace vkspmd::python
