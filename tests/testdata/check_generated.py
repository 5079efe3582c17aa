#!/usr/bin/python3
# Reruns the NumPy generators of tests/testdata (generate.py, then dumps/generate.py, which reads
# the first one's outputs) on copies in a temporary folder, and fails unless they write every
# checked-in .hlo and .npy file of both folders again, byte for byte, and nothing else there.
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


def main():
    try:
        import numpy  # noqa: F401
    except ImportError:
        print(f"SKIPPED: {sys.executable} has no numpy (Debian: apt-get install python3-numpy)")
        return 77
    with tempfile.TemporaryDirectory() as work:
        for folder in FOLDERS:
            os.makedirs(os.path.join(work, folder), exist_ok=True)
            for script in glob.glob(os.path.join(HERE, folder, "*.py")):
                shutil.copy(script, os.path.join(work, folder))
        for folder in FOLDERS:
            subprocess.run([sys.executable, "generate.py"], cwd=os.path.join(work, folder),
                           check=True, stdout=subprocess.DEVNULL)
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
        for problem in problems:
            print(problem)
        print(f"{len(problems)} problem(s) in {sum(len(data_files(HERE, f)) for f in FOLDERS)} "
              "generated files")
        return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
