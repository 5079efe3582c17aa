"""Exit with work in flight: a Python process that launches graphs on a sharded mesh and exits at
once (tensors alive, nothing waited for; normally, by sys.exit, and by an uncaught exception) must
end cleanly every time: no crash, no validation message, no error."""
import os
import subprocess
import sys

import pytest

PROGRAM = r"""
import sys
import numpy as np
import vkspmd
mesh = vkspmd.Mesh(np.arange(4), (2, 2), ("x", "y"))
a = vkspmd.mark_sharding(vkspmd.randn(256, 256), mesh, ("x", "y"))
b = vkspmd.randn(256, 256)
for _ in range(4):
    a = vkspmd.tanh(a @ b) + 1
vkspmd.mark_step()
c = a.sum(0) * 2
vkspmd.sync()
how = sys.argv[1]
if how == "exit":
    sys.exit(0)
if how == "raise":
    raise RuntimeError("leaving with a graph in flight")
if how == "shutdown":
    vkspmd.shutdown()
    try:
        c.numpy()
    except vkspmd.Error as error:
        print("after shutdown:", error)
"""


@pytest.mark.parametrize("how,code", [("end", 0), ("exit", 0), ("raise", 1), ("shutdown", 0)])
def test_exit_with_graph_in_flight(how, code):
    for run in range(10 if how == "end" else 3):
        result = subprocess.run([sys.executable, "-c", PROGRAM, how], capture_output=True,
                                text=True, timeout=60, env=os.environ)
        output = result.stdout + result.stderr
        assert result.returncode == code, f"run {run}: exit code {result.returncode}\n{output}"
        assert "validation" not in output and "Segmentation" not in output, output
        if how == "raise":
            assert "leaving with a graph in flight" in output
        if how == "shutdown":
            assert "after shutdown: " in output and "shut down" in output, output


INTERRUPTED = r"""
import signal, threading, time
import vkspmd
a = vkspmd.randn(1024, 1024)
for _ in range(12):
    a = vkspmd.tanh(a @ a)
vkspmd.mark_step()
assert not vkspmd.wait_device_ops_for(0.0)  # Still running.
threading.Timer(0.3, lambda: signal.raise_signal(signal.SIGINT)).start()
start = time.perf_counter()
try:
    vkspmd.wait_device_ops()
    print("finished before the interrupt")
except KeyboardInterrupt:
    print(f"interrupted after {time.perf_counter() - start:.2f} s")
vkspmd.wait_device_ops()
assert vkspmd.wait_device_ops_for(0.0)
print("graph finished", a.shape)
"""


def test_ctrl_c_interrupts_wait_device_ops():
    result = subprocess.run([sys.executable, "-c", INTERRUPTED], capture_output=True, text=True,
                            timeout=120, env=os.environ)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "interrupted after 0." in output and "graph finished (1024, 1024)" in output, output


# Reading a value waits for the graph that computes it: numpy(), np.asarray, item(), DLPack, repr
# and local_shards wait in slices like wait_device_ops, so Ctrl-C interrupts them too; the value is
# read after. A read of a graph still pending (no mark_step) launches it first (vkspmd.sync of the
# tensor) and waits the same way.
INTERRUPTED_READ = r"""
import signal, threading, time
import numpy as np
import vkspmd
a = vkspmd.randn(1024, 1024)
for _ in range(12):
    a = vkspmd.tanh(a @ a)
s = a.sum()
{MARK}
{LAUNCH}
threading.Timer(0.3, lambda: signal.raise_signal(signal.SIGINT)).start()
start = time.perf_counter()
try:
    value = {READ}
    print("finished before the interrupt")
except KeyboardInterrupt:
    print(f"interrupted after {time.perf_counter() - start:.2f} s")
assert not vkspmd.wait_device_ops_for(0.0)  # The interrupt left the graph running.
value = np.asarray({READ}, dtype=np.float64)
whole = a.numpy().astype(np.float64)  # The oracle: the plain read, and numpy's sum of it.
np.testing.assert_allclose(value, whole if value.shape else whole.sum(), rtol=1e-4, atol=0.5)
print("read after the interrupt", value.shape)
"""


SHARDED = "a = vkspmd.mark_sharding(a, vkspmd.get_1d_mesh(), (0, None))"
SHARDS = "np.concatenate([shard.data for shard in a.local_shards])"


LAUNCHED = "vkspmd.mark_step()\nassert not vkspmd.wait_device_ops_for(0.0)  # Still running."


@pytest.mark.parametrize("read,mark,launch", [
    ("a.numpy()", "", LAUNCHED), ("np.asarray(a)", "", LAUNCHED), ("s.item()", "", LAUNCHED),
    ("np.from_dlpack(a)", "", LAUNCHED),
    ("float(repr(s)[len('tensor('):].split(',')[0].rstrip(')'))", "", LAUNCHED),
    (SHARDS, SHARDED, LAUNCHED), ("s.item()", "", "")])
def test_ctrl_c_interrupts_reads(read, mark, launch):
    program = (INTERRUPTED_READ.replace("{READ}", read).replace("{MARK}", mark)
               .replace("{LAUNCH}", launch))
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            timeout=120, env=os.environ)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "interrupted after 0." in output and "read after the interrupt" in output, output
