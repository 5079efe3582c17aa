"""vkspmd.distributed's job calls in one process: the queries without and with initialize() (a
job of this process alone), and initialize()'s errors as Python exceptions, each in a fresh
interpreter (a succeeded initialize() is kept for the process): an inconsistent environment, a
process that never arrives, processes started for different world sizes, tensors computed
before it. The 2-process job itself is distributed_job.py (tests/python/CMakeLists.txt)."""
import os
import re
import subprocess
import sys

import vkspmd
from vkspmd import distributed
from vkspmd.distributed import hybrid_device_mesh, init_device_mesh

# What torchrun, mpirun and `vkspmd launch` set; none of them in this test's own environment.
JOB_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                 "MASTER_PORT", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                 "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
                 "VKSPMD_RENDEZVOUS_DIR", "VKSPMD_RENDEZVOUS_TIMEOUT_S", "VKSPMD_RUN_ID")


def clean_environment(**variables):
    env = {name: value for name, value in os.environ.items() if name not in JOB_VARIABLES}
    env.update(variables)
    return env


def run_python(program, *args, env=None):
    """Runs `program` in a fresh interpreter; its stdout lines."""
    result = subprocess.run([sys.executable, "-c", program, *args], capture_output=True,
                            text=True, timeout=60, env=env or clean_environment())
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.splitlines()


def test_one_process_is_a_job_of_one(monkeypatch):
    for name in JOB_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    everything = list(range(vkspmd.device_count()))
    assert len(everything) == 8  # VKSPMD_DEVICES of the ctest entry.
    for step in ("before", "after"):
        assert distributed.process_index() == 0 and distributed.get_rank() == 0, step
        assert distributed.process_count() == 1 and distributed.get_world_size() == 1, step
        assert distributed.device_count() == vkspmd.device_count() == 8, step
        assert distributed.addressable_devices() == everything, step
        distributed.initialize()  # No launcher variables: this process alone.
        assert distributed.is_initialized()
    distributed.initialize()  # Idempotent.
    assert init_device_mesh("vulkan", (2, 4)).device_ids == everything
    assert hybrid_device_mesh((8,)).shape == (1, 8)


# Each case sets the variables, calls initialize() and prints what it raised. A failure is not
# kept, so the cases run one after the other in one interpreter, and the last (no variables)
# succeeds.
ERRORS = r"""
import os, sys
import vkspmd
from vkspmd import distributed
cases = [dict(RANK="2", WORLD_SIZE="2"), dict(RANK="0"), dict(RANK="x", WORLD_SIZE="2"),
         dict(RANK="0", WORLD_SIZE="2"),
         dict(RANK="0", WORLD_SIZE="2", VKSPMD_RENDEZVOUS_DIR=sys.argv[1],
              VKSPMD_RENDEZVOUS_TIMEOUT_S="0.5")]
for case in cases + [{}]:
    os.environ.update(case)
    try:
        distributed.initialize()
        print("joined", distributed.is_initialized(), distributed.process_count())
    except vkspmd.Error as error:
        kinds = [kind.__name__ for kind in (ValueError, TimeoutError) if isinstance(error, kind)]
        print(type(error).__name__, error.code, kinds, distributed.is_initialized(),
              distributed.process_count(), str(error).replace("\n", " "))
    for name in case:
        del os.environ[name]
"""


def test_inconsistent_environments_raise_and_may_be_retried(tmp_path):
    lines = run_python(ERRORS, str(tmp_path))
    assert len(lines) == 6, lines
    invalid = "InvalidArgumentError INVALID_ARGUMENT ['ValueError'] False 1 "
    assert lines[0].startswith(invalid + "RANK=2 is not below WORLD_SIZE=2"), lines[0]
    assert lines[1].startswith(invalid + "WORLD_SIZE is unset while RANK is set"), lines[1]
    assert lines[2].startswith(invalid + "RANK=x must be an integer"), lines[2]
    assert lines[3].startswith(invalid + "process 0 of 2"), lines[3]
    assert "has no rendezvous: set MASTER_ADDR and MASTER_PORT" in lines[3], lines[3]
    timeout = "DeadlineExceededError DEADLINE_EXCEEDED ['TimeoutError'] False 1 "
    assert lines[4].startswith(timeout) and "process(es) 1 of 2 never arrived" in lines[4], lines[4]
    assert lines[5] == "joined True 1", lines


JOIN = r"""
import vkspmd
from vkspmd import distributed
try:
    distributed.initialize()
    print("joined")
except vkspmd.Error as error:
    print("refused:", error.code, str(error).replace("\n", " "))
"""


def test_processes_started_for_different_world_sizes_both_fail(tmp_path):
    """Process 0 believes in 2 processes, process 1 in 3: both refuse, naming the sizes."""
    processes = [
        subprocess.Popen([sys.executable, "-c", JOIN], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True,
                         env=clean_environment(RANK=str(rank), WORLD_SIZE=str(size),
                                               VKSPMD_RENDEZVOUS_DIR=str(tmp_path),
                                               VKSPMD_RENDEZVOUS_TIMEOUT_S="30"))
        for rank, size in ((0, 2), (1, 3))]
    outputs = [process.communicate(timeout=60)[0] for process in processes]
    for output in outputs:
        assert output.startswith("refused: FAILED_PRECONDITION "), outputs
        # Its own reason or, failing second, the first one's: either names both sizes.
        assert re.search("was started for (3 processes but process 0 for 2|2 processes but "
                         "process 1 for 3).*the world sizes must match", output), outputs


AFTER_TENSORS = r"""
import os, sys
import vkspmd
from vkspmd import distributed
t = vkspmd.ones(4) + 1
print(t.numpy().tolist())
os.environ.update(RANK="0", WORLD_SIZE="2", VKSPMD_RENDEZVOUS_DIR=sys.argv[1])
try:
    distributed.initialize()
except vkspmd.Error as error:
    print(type(error).__name__, error.code, distributed.is_initialized(), error)
"""


def test_initialize_after_tensors_were_computed_raises(tmp_path):
    lines = run_python(AFTER_TENSORS, str(tmp_path))
    assert lines == ["[2.0, 2.0, 2.0, 2.0]",
                     "Error FAILED_PRECONDITION False distributed::initialize() must come before "
                     "the first tensor is computed"], lines
