// jax.distributed over the C++ one (vkspmd/distributed.h), in the submodule vkspmd._C.distributed:
// joining a job of several processes and the queries of where this process stands in it.
#include "vkspmd/distributed.h"

#include <pybind11/stl.h>

#include "python/src/bindings.h"

namespace vkspmd::python {

void BindDistributed(py::module_& module) {
  py::module_ distributed = module.def_submodule(
      "distributed", "jax.distributed's calls (vkspmd.distributed re-exports them).");
  // The rendezvous waits for every process (VKSPMD_RENDEZVOUS_TIMEOUT_S): other Python threads
  // run meanwhile.
  distributed.def("initialize", &distributed::initialize, py::call_guard<py::gil_scoped_release>(),
                  "Joins the job that `vkspmd launch`, torchrun or mpirun describe in the "
                  "environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, "
                  "VKSPMD_RENDEZVOUS_DIR, ...; none: a job of this process alone) and waits until "
                  "every process has arrived. Call it before the first tensor is computed and "
                  "before making a mesh larger than this process's devices; afterwards mesh device "
                  "ids are the job's. Idempotent once it succeeded; a failure may be retried. "
                  "Raises InvalidArgumentError (a ValueError) for inconsistent variables, "
                  "DeadlineExceededError (a TimeoutError) naming the processes that never "
                  "arrived, vkspmd.Error (FAILED_PRECONDITION) after tensors were computed.");
  distributed.def("is_initialized", &distributed::is_initialized,
                  "Whether initialize() succeeded.");
  distributed.def("process_index", &distributed::process_index,
                  "This process's index in the job (0 without initialize()).");
  distributed.def("process_count", &distributed::process_count,
                  "The number of processes of the job (1 without initialize()).");
  distributed.def("device_count", &distributed::device_count,
                  "The mesh devices of the whole job: every process's devices, in process order "
                  "(this process's alone without initialize()).");
  distributed.def("addressable_devices", &distributed::addressable_devices,
                  "The global mesh device ids this process drives, ascending: process p's follow "
                  "those of processes 0 .. p-1.");
}

}  // namespace vkspmd::python
