// What the binding files of the vkspmd._C extension share: the registration function of each
// (one file per part of the public API) and the Python-to-C++ argument conversions.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vkspmd/dtype.h"
#include "vkspmd/host_tensor.h"
#include "vkspmd/scalar.h"
#include "vkspmd/sharding.h"
#include "vkspmd/tensor.h"

namespace vkspmd {
// vkspmd/dtensor.h (not included: its DTensor overloads of matmul etc. would make &matmul
// ambiguous in the binding files).
enum class ReduceOp;
}  // namespace vkspmd

namespace vkspmd::python {

namespace py = pybind11;

void BindErrors(py::module_& module);
void BindTensor(py::module_& module);
void BindInterop(py::module_& module);
void BindDLPack(py::module_& module);
void BindOps(py::module_& module);
void BindSharding(py::module_& module);
void BindTraining(py::module_& module);
void BindCheckpoint(py::module_& module);
void BindDTensor(py::module_& module);
void BindManual(py::module_& module);
void BindAutoSharding(py::module_& module);
void BindDistributed(py::module_& module);

// Waits for every launched graph in 50 ms slices with the GIL released, checking for signals
// between slices: Ctrl-C (Python runs its handler only between calls) raises KeyboardInterrupt
// (py::error_already_set) and the graphs run on. Called with the GIL held, before reads.
void WaitDeviceOpsInterruptibly();
// Launches the graph computing `t` if it is pending (sync({t}), as a read would; compiling is
// not interruptible), then that wait. What every read does first.
void LaunchAndWaitInterruptibly(const Tensor& t);
// t.to_host() after that, with the GIL released: what numpy(), np.asarray and DLPack read.
HostTensor ReadInterruptibly(const Tensor& t);

// A Python (or numpy) bool, int or float as a vkspmd scalar (an int stays an integer scalar);
// nullopt for anything else.
std::optional<Scalar> AsScalar(py::handle value);
// The same, raising TypeError for anything else.
Scalar ToScalar(py::handle value);
// A `dim` argument: None (every dim), an int or a sequence of ints.
std::vector<int64_t> DimsArgument(const py::handle& dim);
// A shape given PyTorch's ways: f(2, 3), f((2, 3)), f([2, 3]) or f() (a scalar).
std::vector<int64_t> ShapeArgument(const py::args& args);
// A partition spec given as mark_sharding takes it: (0, None, ("dp", "tp")).
PartitionSpec ToPartitionSpec(const py::handle& spec);
// "sum", "avg", "max" or "min" as a ReduceOp; ValueError naming `what` for anything else.
ReduceOp ToReduceOp(const std::string& name, const std::string& what);
// The numpy dtype of a vkspmd dtype; bfloat16, which numpy lacks, raises TypeError.
py::dtype NumpyDType(DType dtype);
// A numpy array's values as a HostTensor (copied: vkspmd tensors never share host memory).
// Dtypes vkspmd lacks (float64, int64, ...) raise TypeError naming the dtype.
HostTensor HostTensorFromNumpy(const py::handle& array);
// The host value as a numpy array that owns it (no further copy).
py::object NumpyFromHostTensor(HostTensor value);

}  // namespace vkspmd::python
