// vkspmd::Error as Python exceptions: vkspmd.Error (a RuntimeError) and, by the error's status
// code, subclasses that are also the built-in exception Python code expects (ValueError for an
// invalid argument, IndexError, NotImplementedError, TimeoutError). The message is the C++ one.
#include <Python.h>

#include <array>
#include <exception>
#include <string>

#include "python/src/bindings.h"
#include "vkspmd/error.h"

namespace vkspmd::python {
namespace {

// absl::StatusCode's names, indexed by value (the codes of vkspmd::ErrorCode).
constexpr std::array<const char*, 16> kCodeNames = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS"};

struct ErrorClasses {
  PyObject* base = nullptr;
  PyObject* invalid_argument = nullptr;
  PyObject* out_of_range = nullptr;
  PyObject* unimplemented = nullptr;
  PyObject* deadline_exceeded = nullptr;
};

// Created once per process and never freed: the interpreter holds them as module attributes.
ErrorClasses& Classes() {
  static ErrorClasses classes;
  return classes;
}

PyObject* AddClass(py::module_& module, const char* name, const char* doc, PyObject* bases) {
  const std::string qualified = std::string("vkspmd.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  Py_XDECREF(bases);
  if (type == nullptr) throw py::error_already_set();
  module.add_object(name, py::reinterpret_borrow<py::object>(type));
  return type;
}

PyObject* Both(PyObject* first, PyObject* second) { return PyTuple_Pack(2, first, second); }

PyObject* ClassFor(ErrorCode code) {
  const ErrorClasses& classes = Classes();
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return classes.invalid_argument;
    case ErrorCode::kOutOfRange:
      return classes.out_of_range;
    case ErrorCode::kUnimplemented:
      return classes.unimplemented;
    case ErrorCode::kDeadlineExceeded:
      return classes.deadline_exceeded;
    default:
      return classes.base;
  }
}

void Raise(const Error& error) {
  PyObject* type = ClassFor(error.code());
  PyObject* instance = PyObject_CallFunction(type, "s", error.what());
  if (instance == nullptr) return;  // The call set its own exception.
  const int code = static_cast<int>(error.code());
  const char* name =
      code >= 0 && code < static_cast<int>(kCodeNames.size()) ? kCodeNames[code] : "UNKNOWN";
  PyObject* code_name = PyUnicode_FromString(name);
  PyObject_SetAttrString(instance, "code", code_name);
  Py_XDECREF(code_name);
  PyErr_SetObject(type, instance);
  Py_DECREF(instance);
}

}  // namespace

void BindErrors(py::module_& module) {
  ErrorClasses& classes = Classes();
  classes.base =
      AddClass(module, "Error",
               "An error of the vkspmd library; `code` is its status code name (e.g. 'INTERNAL').",
               PyTuple_Pack(1, PyExc_RuntimeError));
  classes.invalid_argument =
      AddClass(module, "InvalidArgumentError", "A bad argument (also a ValueError).",
               Both(classes.base, PyExc_ValueError));
  classes.out_of_range =
      AddClass(module, "OutOfRangeError", "An index or dim out of range (also an IndexError).",
               Both(classes.base, PyExc_IndexError));
  classes.unimplemented =
      AddClass(module, "UnimplementedError",
               "An op, shape or sharding vkspmd does not support (also a NotImplementedError).",
               Both(classes.base, PyExc_NotImplementedError));
  classes.deadline_exceeded = AddClass(
      module, "DeadlineExceededError",
      "A device did not finish in time; the device is marked failed (also a TimeoutError).",
      Both(classes.base, PyExc_TimeoutError));
  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer) std::rethrow_exception(pointer);
    } catch (const Error& error) {
      Raise(error);
    }
  });
}

}  // namespace vkspmd::python
