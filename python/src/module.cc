// The vkspmd._C extension module: one registration function per part of the public API (see
// bindings.h). The pure-Python package python/vkspmd re-exports it.
#include "python/src/bindings.h"

PYBIND11_MODULE(_C, module) {
  module.doc() = "vkspmd's C++ API (GSPMD-style sharding over Vulkan) as a Python extension.";
  vkspmd::python::BindErrors(module);
  vkspmd::python::BindTensor(module);
  vkspmd::python::BindInterop(module);
  vkspmd::python::BindOps(module);
  vkspmd::python::BindSharding(module);
  vkspmd::python::BindTraining(module);
  vkspmd::python::BindCheckpoint(module);
  vkspmd::python::BindDTensor(module);
  vkspmd::python::BindManual(module);
  vkspmd::python::BindAutoSharding(module);
  vkspmd::python::BindDistributed(module);
}
