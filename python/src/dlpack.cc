// DLPack (CPU) both ways: Tensor.__dlpack__ / __dlpack_device__ hand the gathered host copy to
// np.from_dlpack or torch.from_dlpack without another copy, and vkspmd.from_dlpack copies what
// any producer's capsule holds (any strides) into a new tensor. A capsule is read once: reading
// renames it "used_dltensor", as the DLPack protocol asks, and a second read raises ValueError.
#include <Python.h>

#include <cstring>
#include <string>

#include "python/src/bindings.h"
#include "vkspmd/tensor.h"

namespace vkspmd::python {
namespace {

// The DLPack 0.8 ABI (dlpack/dlpack.h, which Debian does not package): the structs are fixed by
// the protocol, so they are declared here as the header declares them.
struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};
constexpr int32_t kDLCPU = 1;
enum DLTypeCode : uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6 };
constexpr const char* kCapsuleName = "dltensor";
constexpr const char* kUsedCapsuleName = "used_dltensor";

DLDataType ToDLDataType(DType dtype) {
  const auto bits = static_cast<uint8_t>(8 * element_size(dtype));
  switch (dtype) {
    case DType::kFloat32:
    case DType::kFloat16:
      return {kDLFloat, bits, 1};
    case DType::kBFloat16:
      return {kDLBfloat, bits, 1};
    case DType::kInt32:
      return {kDLInt, bits, 1};
    case DType::kUInt32:
      return {kDLUInt, bits, 1};
    case DType::kBool:
      return {kDLBool, bits, 1};
  }
  return {kDLFloat, bits, 1};
}

DType FromDLDataType(DLDataType type) {
  const int bits = type.bits;
  if (type.lanes == 1) {
    if (type.code == kDLFloat && bits == 32) return DType::kFloat32;
    if (type.code == kDLFloat && bits == 16) return DType::kFloat16;
    if (type.code == kDLBfloat && bits == 16) return DType::kBFloat16;
    if (type.code == kDLInt && bits == 32) return DType::kInt32;
    if (type.code == kDLUInt && bits == 32) return DType::kUInt32;
    if (type.code == kDLBool && bits == 8) return DType::kBool;
  }
  throw py::type_error("from_dlpack: vkspmd has no dtype for DLPack type code " +
                       std::to_string(type.code) + " with " + std::to_string(bits) + " bits and " +
                       std::to_string(type.lanes) + " lanes");
}

// A gathered host value and the DLPack view of it, freed together by the consumer's deleter.
struct Export {
  HostTensor value;
  std::vector<int64_t> strides;
  DLManagedTensor managed{};
};

void CapsuleDestructor(PyObject* capsule) {
  // A consumer renamed a capsule it read (and owns the tensor now); an unread one is ours.
  if (!PyCapsule_IsValid(capsule, kCapsuleName)) return;
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
}

py::capsule ToDLPack(const Tensor& tensor) {
  auto owned = std::make_unique<Export>();
  owned->value = ReadInterruptibly(tensor);
  Export& exported = *owned;
  const size_t rank = exported.value.shape.size();
  exported.strides.assign(rank, 1);
  for (size_t d = rank; d-- > 1;) {
    exported.strides[d - 1] = exported.strides[d] * exported.value.shape[d];
  }
  DLTensor& view = exported.managed.dl_tensor;
  view.data = exported.value.bytes.data();
  view.device = {kDLCPU, 0};
  view.ndim = static_cast<int32_t>(rank);
  view.dtype = ToDLDataType(exported.value.dtype);
  view.shape = exported.value.shape.data();
  view.strides = exported.strides.data();
  view.byte_offset = 0;
  exported.managed.manager_ctx = owned.get();
  exported.managed.deleter = [](DLManagedTensor* self) {
    delete static_cast<Export*>(self->manager_ctx);
  };
  PyObject* capsule = PyCapsule_New(&exported.managed, kCapsuleName, CapsuleDestructor);
  if (capsule == nullptr) throw py::error_already_set();
  owned.release();  // The capsule (or its consumer) owns it now.
  return py::reinterpret_steal<py::capsule>(capsule);
}

// The capsule's elements in row-major order (the producer's strides may be anything).
HostTensor CopyOut(const DLTensor& view) {
  HostTensor value;
  value.dtype = FromDLDataType(view.dtype);
  value.shape.assign(view.shape, view.shape + view.ndim);
  const int64_t element = element_size(value.dtype);
  value.bytes.resize(static_cast<size_t>(value.numel() * element));
  if (value.numel() == 0) return value;
  const auto* base = static_cast<const std::byte*>(view.data) + view.byte_offset;
  std::vector<int64_t> index(value.shape.size(), 0);
  for (int64_t out = 0; out < value.numel(); ++out) {
    int64_t offset = 0;  // In elements; null strides mean row-major.
    int64_t row_major = 1;
    for (size_t d = index.size(); d-- > 0;) {
      offset += index[d] * (view.strides != nullptr ? view.strides[d] : row_major);
      row_major *= value.shape[d];
    }
    std::memcpy(value.bytes.data() + out * element, base + offset * element,
                static_cast<size_t>(element));
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < value.shape[d]) break;
      index[d] = 0;
    }
  }
  return value;
}

Tensor FromDLPack(py::object source) {
  py::object capsule = source;
  if (!PyCapsule_CheckExact(source.ptr())) {
    if (!py::hasattr(source, "__dlpack__")) {
      throw py::type_error("from_dlpack: expected an object with __dlpack__ or a DLPack capsule");
    }
    capsule = source.attr("__dlpack__")();
  }
  if (PyCapsule_IsValid(capsule.ptr(), kUsedCapsuleName)) {
    throw py::value_error("from_dlpack: this DLPack capsule was already consumed (read it once)");
  }
  if (!PyCapsule_IsValid(capsule.ptr(), kCapsuleName)) {
    throw py::type_error("from_dlpack: not a DLPack capsule (named \"dltensor\")");
  }
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), kCapsuleName));
  if (managed->dl_tensor.device.device_type != kDLCPU) {
    throw py::value_error("from_dlpack: the tensor is on DLPack device type " +
                          std::to_string(managed->dl_tensor.device.device_type) +
                          "; vkspmd reads CPU tensors (type 1) only");
  }
  HostTensor value = CopyOut(managed->dl_tensor);
  // Consumed: the producer's memory is released now and the capsule cannot be read again.
  PyCapsule_SetName(capsule.ptr(), kUsedCapsuleName);
  if (managed->deleter != nullptr) managed->deleter(managed);
  return from_host(value);
}

}  // namespace

void BindDLPack(py::module_& module) {
  py::class_<Tensor> cls = module.attr("Tensor");
  cls.def(
      "__dlpack__",
      [](const Tensor& t, py::object stream, py::kwargs) {
        if (!stream.is_none()) throw py::value_error("__dlpack__: a CPU tensor takes no stream");
        return ToDLPack(t);
      },
      py::arg("stream") = py::none(),
      "A DLPack capsule of the value on the host (waits for the devices and gathers the shards).");
  cls.def("__dlpack_device__", [](const Tensor&) { return py::make_tuple(kDLCPU, 0); });
  module.def("from_dlpack", &FromDLPack, py::arg("source"),
             "A tensor with a copy of a DLPack producer's CPU tensor (np.ndarray, torch.Tensor, "
             "or a capsule, which can be read once).");
}

}  // namespace vkspmd::python
