// Auto-sharding from Python (vkspmd/auto_sharding.h): vkspmd.auto_shard and the plan it returns.
#include "vkspmd/auto_sharding.h"

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "python/src/bindings.h"

namespace vkspmd::python {

void BindAutoSharding(py::module_& module) {
  py::class_<AutoShardPlan>(module, "AutoShardPlan",
                            "What auto_shard's ILP chose for a training step.")
      .def_readonly("state", &AutoShardPlan::state,
                    "The state tensors: auto_shard's `state` as given, or those it found when "
                    "called without it (in the order the tensors were made).")
      .def_readonly("shardings", &AutoShardPlan::shardings,
                    "Per state tensor (plan.state's order): its sharding as HLO text over the "
                    "mesh's device ids, e.g. '{devices=[2,1]<=[2]}' or '{replicated}'.")
      .def_readonly("axes", &AutoShardPlan::axes,
                    "Per state tensor: per dim the mesh axes splitting it, e.g. '[{x}, {}]'.")
      .def_readonly("compute_seconds", &AutoShardPlan::compute_seconds)
      .def_readonly("communication_seconds", &AutoShardPlan::communication_seconds)
      .def_readonly("resharding_seconds", &AutoShardPlan::resharding_seconds)
      .def_property_readonly("modelled_seconds", &AutoShardPlan::modelled_seconds,
                             "The modelled step time: compute + communication + resharding.")
      .def_readonly("peak_memory_bytes", &AutoShardPlan::peak_memory_bytes)
      .def_readonly("instructions", &AutoShardPlan::instructions)
      .def_readonly("variables", &AutoShardPlan::variables)
      .def_readonly("solve_seconds", &AutoShardPlan::solve_seconds)
      .def_readonly("optimal", &AutoShardPlan::optimal)
      .def_readonly("stopped_at_time_limit", &AutoShardPlan::stopped_at_time_limit,
                    "Whether the time limit ended the search at this plan (the cheapest found).")
      .def_readonly("report", &AutoShardPlan::report,
                    "Every instruction's sharding and the modelled costs, as `vkspmd partition "
                    "--auto` prints them.")
      .def_readonly("cost_model", &AutoShardPlan::cost_model,
                    "Where the costs came from: 'defaults', 'file PATH' or 'measured ...' (timed "
                    "now or read from the cache).")
      .def("__repr__", [](const AutoShardPlan& plan) {
        return fmt::format(
            "AutoShardPlan(modelled_seconds={:.6g}, peak_memory_bytes={}, instructions={}, "
            "optimal={}, shardings=[{}])",
            plan.modelled_seconds(), plan.peak_memory_bytes, plan.instructions,
            plan.optimal ? "True" : "False", fmt::join(plan.shardings, ", "));
      });
  module.def(
      "auto_shard",
      [](const std::function<void()>& step, const Mesh& mesh,
         const std::optional<std::vector<Tensor>>& state, std::optional<int64_t> memory_limit,
         double time_limit, std::optional<std::string> cost_model) {
        AutoShardOptions options;
        options.memory_limit_bytes = memory_limit;
        options.time_limit_seconds = time_limit;
        // As `vkspmd train --cost-model`: "defaults", "measured" or a file.
        if (cost_model == "measured") {
          options.measure_cost_model = true;
        } else if (cost_model.has_value() && *cost_model != "defaults") {
          options.cost_model_file = *cost_model;
        }
        return state.has_value() ? auto_shard(step, mesh, *state, options)
                                 : auto_shard(step, mesh, options);
      },
      py::arg("step"), py::arg("mesh"), py::arg("state") = py::none(), py::kw_only(),
      py::arg("memory_limit") = py::none(), py::arg("time_limit") = 30.0,
      py::arg("cost_model") = py::none(),
      "Auto-shards a training step over `mesh` (JAX's / PyTorch/XLA's auto-sharding): every "
      "instruction's sharding is chosen by an integer linear program instead of mark_sharding. "
      "`step` is a function of no arguments that traces one step (forward, grad, optimizer "
      "step; no value reads); `state` is a sequence of the Tensors that persist across steps "
      "(model.parameters() and the optimizer's state_tensors() values), whose shardings the ILP "
      "chooses; None (or left out): the state is found, every tensor alive at the call that "
      "step() assigns a new value computed from its old one (plan.state lists them; a tensor "
      "step() only reads is not placed). auto_shard runs what is pending, calls step() once and "
      "mark_step() (that step "
      "is the first training step, not a rehearsal), and marks each state tensor where the plan "
      "put it; later graphs on `mesh` are auto-sharded too. memory_limit: bytes per device the "
      "step may hold (None: no limit); time_limit: seconds for the whole solve (the cheapest plan "
      "found by then is taken); cost_model: 'defaults' "
      "(or None), 'measured' (timed on the mesh's devices, cached on disk) or a cost model file "
      "path. Returns an AutoShardPlan. A memory limit no plan meets is "
      "a vkspmd.Error naming it, and the state keeps its values and shardings.");
}

}  // namespace vkspmd::python
