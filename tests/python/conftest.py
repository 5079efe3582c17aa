"""With VKSPMD_BINDING_COVERAGE=1 (the python_binding_coverage test), records every call of an
extension function or method during the session and fails the session unless each public one of
vkspmd._C, vkspmd.nn, vkspmd.optim, vkspmd._C.dtensor, vkspmd._C.collectives and
vkspmd._C.distributed was called at least once. Operators, properties and
constructors go through slots, not calls the profiler sees; the tests call those directly."""
import os
import sys
import threading

import pytest

CALLED = set()
# Called only where the session cannot: in the subprocesses of test_exit.py.
ELSEWHERE = {"vkspmd._C.shutdown"}
ACTIVE = os.environ.get("VKSPMD_BINDING_COVERAGE") == "1"


def _record(frame, event, arg):
    # pybind11's functions carry no owner (their __self__ is a capsule), so the function objects
    # themselves are recorded and matched against the module's and the classes' attributes.
    if event == "c_call" and str(getattr(arg, "__module__", "")).startswith("vkspmd"):
        CALLED.add(arg)


def pytest_configure(config):
    if ACTIVE:
        sys.setprofile(_record)
        threading.setprofile(_record)


def _expected():
    """{function object: "owner.name"} of every public extension function and method."""
    import vkspmd._C as C
    expected = {}
    for module in (C, C.nn, C.optim, C.dtensor, C.collectives, C.distributed):
        for name in dir(module):
            value = getattr(module, name)
            if name.startswith("_"):
                continue
            if type(value).__name__ == "builtin_function_or_method":
                expected[value] = f"{module.__name__}.{name}"
            elif isinstance(value, type) and value.__module__.startswith("vkspmd"):
                for method, attribute in vars(value).items():
                    function = getattr(attribute, "__func__", None)
                    if not method.startswith("_") and function is not None:
                        expected[function] = f"{value.__module__}.{value.__name__}.{method}"
    return expected


def pytest_sessionfinish(session, exitstatus):
    if not ACTIVE:
        return
    sys.setprofile(None)
    expected = _expected()
    missing = sorted(label for function, label in expected.items()
                     if function not in CALLED and label not in ELSEWHERE)
    if missing:
        print("\nbindings never called:", ", ".join(missing))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    else:
        print(f"\nevery one of the {len(expected)} public bindings was called")
