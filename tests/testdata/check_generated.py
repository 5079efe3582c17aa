#!/usr/bin/python3
# Reruns the NumPy generators of tests/testdata (generate.py, then dumps/generate.py, which reads
# the first one's outputs) on copies in a temporary folder, and fails unless they write every
# checked-in .hlo and .npy file of both folders again, byte for byte, and nothing else there.
# Where the CPU has AVX-512, a second pass reruns them with NumPy's AVX-512 code turned off
# (NPY_DISABLE_CPU_FEATURES), so the AVX2 paths that machines without it take are checked too.
# Exits 77 (the ctest entry's SKIP_RETURN_CODE) where this Python has no NumPy.
import filecmp
import glob
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FOLDERS = ["", "dumps"]  # relative to HERE; every .hlo and .npy directly in them is generated


def data_files(root, folder):
    return sorted(os.path.relpath(path, root)
                  for pattern in ("*.hlo", "*.npy")
                  for path in glob.glob(os.path.join(root, folder, pattern)))


# NumPy's names of the AVX-512 feature groups its SIMD code is dispatched on.
AVX512 = ["AVX512F", "AVX512CD", "AVX512_SKX", "AVX512_CLX", "AVX512_CNL", "AVX512_ICL"]


def avx512_off_environment():
    """The environment of the second pass, or (None, why there is none)."""
    import importlib
    import numpy
    # numpy._core in NumPy 2 (where numpy.core.* warns as deprecated), numpy.core before.
    umath = None
    for module in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):
        try:
            umath = importlib.import_module(module)
            break
        except ImportError:
            continue
    if umath is None or not hasattr(umath, "__cpu_features__"):
        return None, f"NumPy {numpy.__version__} does not say which CPU features it dispatches on"
    __cpu_baseline__ = umath.__cpu_baseline__
    __cpu_dispatch__ = umath.__cpu_dispatch__
    __cpu_features__ = umath.__cpu_features__
    baseline = [name for name in AVX512 if name in __cpu_baseline__]
    if baseline:
        return None, (f"this NumPy is built for {' '.join(baseline)} as its baseline, which "
                      "NPY_DISABLE_CPU_FEATURES cannot turn off")
    # Only names NumPy dispatches on and this CPU has: others warn and change nothing.
    present = [name for name in AVX512 if name in __cpu_dispatch__ and __cpu_features__.get(name)]
    if not present:
        return None, "this CPU (or NumPy build) has no AVX-512 code: the first pass ran without it"
    environment = dict(os.environ, NPY_DISABLE_CPU_FEATURES=" ".join(present))
    # The features must really be off in the generators' interpreter (NumPy 1.20 and later).
    probe = subprocess.run(
        [sys.executable, "-W", "error", "-c",
         f"from {umath.__name__} import __cpu_features__ as f\n"
         f"print(' '.join(n for n in {present!r} if f[n]))"],
        env=environment, capture_output=True, text=True)
    if probe.returncode != 0 or probe.stdout.strip():
        raise RuntimeError(f"NPY_DISABLE_CPU_FEATURES={' '.join(present)} did not turn them off: "
                           f"{probe.stdout.strip()} {probe.stderr.strip()}")
    return environment, None


def problems_of_a_pass(environment):
    """Reruns the generators in `environment` (None: this one) and lists what they wrote
    differently from the checked-in files."""
    with tempfile.TemporaryDirectory() as work:
        for folder in FOLDERS:
            os.makedirs(os.path.join(work, folder), exist_ok=True)
            for script in glob.glob(os.path.join(HERE, folder, "*.py")):
                shutil.copy(script, os.path.join(work, folder))
        for folder in FOLDERS:
            subprocess.run([sys.executable, "generate.py"], cwd=os.path.join(work, folder),
                           check=True, stdout=subprocess.DEVNULL, env=environment)
        problems = []
        for folder in FOLDERS:
            written = data_files(work, folder)
            checked_in = data_files(HERE, folder)
            for name in sorted(set(checked_in) - set(written)):
                problems.append(f"{name}: checked in but no longer written")
            for name in sorted(set(written) - set(checked_in)):
                problems.append(f"{name}: written but not checked in")
            for name in sorted(set(written) & set(checked_in)):
                if not filecmp.cmp(os.path.join(work, name), os.path.join(HERE, name),
                                   shallow=False):
                    problems.append(f"{name}: differs from the checked-in file")
        return problems


def main():
    try:
        import numpy  # noqa: F401
    except ImportError:
        print(f"SKIPPED: {sys.executable} has no numpy (Debian: apt-get install python3-numpy)")
        return 77
    files = sum(len(data_files(HERE, f)) for f in FOLDERS)
    failed = False
    passes = [("this CPU's NumPy code", None)]
    environment, why_not = avx512_off_environment()
    if environment is None:
        print(f"no pass without AVX-512: {why_not}")
    else:
        passes.append((f"NPY_DISABLE_CPU_FEATURES={environment['NPY_DISABLE_CPU_FEATURES']}",
                       environment))
    for name, environment in passes:
        problems = problems_of_a_pass(environment)
        for problem in problems:
            print(f"{problem} ({name})")
        print(f"{len(problems)} problem(s) in {files} generated files with {name}")
        failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
