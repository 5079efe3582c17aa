#!/usr/bin/env python3
"""The persistent compile cache as programs use it: separate processes of cache_probe sharing one
cache directory (hits, misses, damaged entries, concurrent writers, refused directories, the size
cap, the API and the default location).

Usage: cache_processes_test.py CACHE_PROBE WORK_DIR
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

PROBE = ""
WORK_DIR = ""


def metric(output, name):
    match = re.search(r"^%s\s+(\d+)" % name, output, re.MULTILINE)
    assert match, "no %s in:\n%s" % (name, output)
    return int(match.group(1))


def result(output):
    match = re.search(r"^result ([0-9a-f]{16})$", output, re.MULTILINE)
    assert match, output
    return match.group(1)


def entries(directory):
    return sorted(name for name in os.listdir(directory) if name.endswith(".bin"))


class CacheProcessesTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=WORK_DIR)
        self.cache = os.path.join(self.dir, "cache")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_probe(self, *args, cache=None, extra_env=None, check=True):
        env = dict(os.environ)
        env["VKSPMD_CACHE_DIR"] = self.cache if cache is None else cache
        env.update(extra_env or {})
        done = subprocess.run([PROBE, *args], env=env, capture_output=True, text=True, timeout=120)
        if check:
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        return done

    def reference(self):
        return result(self.run_probe(cache="").stdout)

    def test_second_process_hits_with_identical_results(self):
        cold = self.run_probe()
        self.assertEqual(metric(cold.stdout, "CompileCacheHits"), 0)
        misses = metric(cold.stdout, "CompileCacheMisses")
        self.assertGreater(misses, 0)
        self.assertGreater(metric(cold.stdout, "CompileCacheWritten"), 0)
        self.assertEqual(oct(os.stat(self.cache).st_mode & 0o777), "0o700")
        warm = self.run_probe()
        self.assertEqual(metric(warm.stdout, "CompileCacheMisses"), 0, warm.stdout)
        self.assertEqual(metric(warm.stdout, "CompileCacheHits"), misses)
        self.assertGreater(metric(warm.stdout, "CompileCacheRead"), 0)
        self.assertEqual(metric(warm.stdout, "CompileCacheWritten"), 0)
        self.assertEqual(result(warm.stdout), result(cold.stdout))
        self.assertEqual(result(cold.stdout), self.reference())
        self.assertEqual(cold.stderr + warm.stderr, "")

    def test_changed_kernel_source_misses_only_there(self):
        self.run_probe()
        changed = self.run_probe("--sigmoid")
        self.assertGreater(metric(changed.stdout, "CompileCacheMisses"), 0)
        self.assertGreater(metric(changed.stdout, "CompileCacheHits"), 0)  # The dot is shared.
        self.assertEqual(result(changed.stdout), result(self.run_probe("--sigmoid", cache="").stdout))

    def test_operand_order_is_part_of_the_key(self):
        # softmax(a - h) and softmax(h - a) differ only in the order of a subtraction's operands:
        # in one process, and again with the first process's entries on disk, each must run its
        # own program (equal to the uncached run's bits), never the other's.
        def digests(output):
            return re.search(r"^minus ([0-9a-f]{16})$", output, re.MULTILINE).group(1), re.search(
                r"^swapped ([0-9a-f]{16})$", output, re.MULTILINE).group(1)

        uncached = digests(self.run_probe("--minus", cache="").stdout)
        self.assertNotEqual(uncached[0], uncached[1])
        cold = self.run_probe("--minus")
        self.assertEqual(digests(cold.stdout), uncached)
        warm = self.run_probe("--minus")
        self.assertGreater(metric(warm.stdout, "CompileCacheHits"), 0)
        self.assertEqual(metric(warm.stdout, "CompileCacheMisses"), 0)
        self.assertEqual(digests(warm.stdout), uncached)

    def test_changed_mesh_misses(self):
        self.run_probe()
        sharded = self.run_probe("--mesh")
        # Shards have other sizes, so other kernels: misses, never the one-device kernels' SPIR-V.
        self.assertGreater(metric(sharded.stdout, "CompileCacheMisses"), 0)
        self.assertEqual(result(sharded.stdout), result(self.run_probe("--mesh", cache="").stdout))
        again = self.run_probe("--mesh")
        self.assertEqual(metric(again.stdout, "CompileCacheMisses"), 0)
        self.assertEqual(result(again.stdout), result(sharded.stdout))

    def test_debug_says_why_a_compile_missed_and_changes_no_key(self):
        cold = self.run_probe(extra_env={"VKSPMD_DEBUG": "1"})
        self.assertRegex(cold.stderr, r"compile cache miss for kernel \S+ \([0-9a-f]{32}\): no entry")
        warm = self.run_probe(extra_env={"VKSPMD_DEBUG": "0"})
        self.assertEqual(metric(warm.stdout, "CompileCacheMisses"), 0)
        for name in entries(self.cache):
            with open(os.path.join(self.cache, name), "r+b") as entry:
                entry.truncate(10)
        damaged = self.run_probe(extra_env={"VKSPMD_DEBUG": "1"})
        self.assertRegex(damaged.stderr, r"compile cache miss for kernel .*: corrupt entry: "
                         r"truncated header \(10 bytes\)")

    def check_damage(self, damage, reason):
        expected = self.reference()
        cold = self.run_probe()
        names = entries(self.cache)
        self.assertGreater(len(names), 1)
        for index, name in enumerate(names):
            damage(os.path.join(self.cache, name), os.path.join(self.cache, names[index - 1]))
        damaged = self.run_probe()
        self.assertEqual(result(damaged.stdout), expected)
        lines = damaged.stderr.splitlines()
        self.assertTrue(lines, "no warning")
        for line in lines:
            self.assertRegex(line, r"^vkspmd: ignoring corrupt cache entry \S+\.bin: " + reason)
        self.assertEqual(metric(damaged.stdout, "CompileCacheHits"), 0)
        # The damaged entries were replaced: the next process hits again.
        again = self.run_probe()
        self.assertEqual(again.stderr, "")
        self.assertEqual(metric(again.stdout, "CompileCacheHits"),
                         metric(cold.stdout, "CompileCacheMisses"))
        self.assertEqual(result(again.stdout), expected)

    def test_flipped_bit(self):
        def flip(path, _):
            with open(path, "r+b") as entry:
                entry.seek(-1, os.SEEK_END)
                last = entry.read(1)[0]
                entry.seek(-1, os.SEEK_END)
                entry.write(bytes([last ^ 0x04]))
        self.check_damage(flip, "payload checksum mismatch")

    def test_truncated_file(self):
        def truncate(path, _):
            size = os.path.getsize(path)
            with open(path, "r+b") as entry:
                entry.truncate(size - 5)
        self.check_damage(truncate, r"the header says \d+ payload bytes, the file has \d+")

    def test_wrong_magic(self):
        def magic(path, _):
            with open(path, "r+b") as entry:
                entry.write(b"\x7fELF")
        self.check_damage(magic, r"wrong magic")

    def test_zero_length_file(self):
        self.check_damage(lambda path, _: open(path, "wb").close(), "zero-length file")

    def test_entry_renamed_to_another_key(self):
        contents = {}

        def swap(path, previous):
            if not contents:
                for name in entries(os.path.dirname(path)):
                    with open(os.path.join(os.path.dirname(path), name), "rb") as entry:
                        contents[name] = entry.read()
            with open(path, "wb") as entry:
                entry.write(contents[os.path.basename(previous)])
        self.check_damage(swap, r"its header holds key [0-9a-f]{32}, not its file name's")

    def test_four_processes_at_once(self):
        env = dict(os.environ, VKSPMD_CACHE_DIR=self.cache)
        processes = [subprocess.Popen([PROBE], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True) for _ in range(4)]
        outputs = [process.communicate(timeout=180) for process in processes]
        for process, (out, err) in zip(processes, outputs):
            self.assertEqual(process.returncode, 0, out + err)
            self.assertEqual(err, "")
        self.assertEqual(len({result(out) for out, _ in outputs}), 1)
        self.assertEqual([name for name in os.listdir(self.cache) if not name.endswith(".bin")],
                         [])
        after = self.run_probe()
        self.assertEqual(after.stderr, "")
        self.assertEqual(metric(after.stdout, "CompileCacheMisses"), 0)
        self.assertEqual(result(after.stdout), result(outputs[0][0]))

    def test_uncreatable_directory_runs_uncached_with_a_warning(self):
        blocker = os.path.join(self.dir, "file")
        open(blocker, "w").close()
        done = self.run_probe(cache=os.path.join(blocker, "cache"))
        self.assertRegex(done.stderr, r"^vkspmd: compile cache refused, running uncached: "
                         r"cannot create \S+: Not a directory\n$")
        self.assertIn("cache directory: \n", done.stdout)
        self.assertEqual(metric(done.stdout, "CompileCacheHits") +
                         metric(done.stdout, "CompileCacheMisses"), 0)
        self.assertEqual(result(done.stdout), self.reference())

    def test_unwritable_directory_runs_uncached_with_a_warning(self):
        if os.geteuid() == 0:
            self.skipTest("root writes anywhere (the unit test removes the directory instead)")
        os.mkdir(self.cache, 0o500)
        done = self.run_probe()
        self.assertIn("is not writable", done.stderr)
        self.assertEqual(result(done.stdout), self.reference())

    def test_directory_others_may_write_is_refused(self):
        os.mkdir(self.cache)
        os.chmod(self.cache, 0o777)
        done = self.run_probe()
        self.assertRegex(done.stderr, r"^vkspmd: compile cache refused, running uncached: \S+ is "
                         r"writable by group or others \(mode 0777\)\n$")
        self.assertEqual(os.listdir(self.cache), [])
        self.assertEqual(result(done.stdout), self.reference())

    def test_directory_of_another_user_is_refused(self):
        os.mkdir(self.cache, 0o700)
        try:
            os.chown(self.cache, 65534, 65534)
        except PermissionError:
            self.skipTest("needs root to chown")
        done = self.run_probe()
        self.assertIn("is owned by uid 65534", done.stderr)
        self.assertEqual(os.listdir(self.cache), [])

    def test_eviction_keeps_the_size_under_the_cap(self):
        # One byte less than an uncapped run keeps, less its smallest entry: whatever the driver's
        # entry sizes, the run must evict, and evicting any one entry is enough, so something
        # stays. (A fixed 4 KiB cap evicted everything on an NVIDIA GPU; half the total evicted
        # everything on an H100 whose larger entry was written last and was over half.)
        uncapped = os.path.join(self.dir, "uncapped")
        self.run_probe(cache=uncapped)
        sizes = [os.path.getsize(os.path.join(uncapped, name)) for name in entries(uncapped)]
        self.assertGreaterEqual(len(sizes), 2)
        cap = sum(sizes) - min(sizes)
        done = self.run_probe(extra_env={"VKSPMD_CACHE_MAX_BYTES": str(cap)})
        self.assertGreater(metric(done.stdout, "CompileCacheWritten"), 0)
        kept = entries(self.cache)
        self.assertLess(len(kept), len(sizes))  # something was evicted
        total = sum(os.path.getsize(os.path.join(self.cache, name)) for name in kept)
        self.assertLessEqual(total, cap)
        self.assertGreater(total, 0)

    def test_initialize_cache_and_readonly(self):
        missing = self.run_probe("--init", self.cache, "--readonly", cache="")
        self.assertRegex(missing.stderr, r"^vkspmd: compile cache refused, running uncached: "
                         r"\S+: No such file or directory\n$")
        self.assertFalse(os.path.exists(self.cache))
        written = self.run_probe("--init", self.cache, cache="")
        self.assertIn("cache directory: %s\n" % self.cache, written.stdout)
        count = len(entries(self.cache))
        self.assertGreater(count, 0)
        hit = self.run_probe("--init", self.cache, "--readonly", cache="")
        self.assertEqual(metric(hit.stdout, "CompileCacheMisses"), 0)
        self.assertGreater(metric(hit.stdout, "CompileCacheHits"), 0)
        other = self.run_probe("--sigmoid", "--init", self.cache, "--readonly", cache="")
        self.assertGreater(metric(other.stdout, "CompileCacheMisses"), 0)
        self.assertEqual(metric(other.stdout, "CompileCacheWritten"), 0)
        self.assertEqual(len(entries(self.cache)), count)

    def test_default_directory_follows_xdg_then_home(self):
        env = dict(os.environ)
        env.pop("VKSPMD_CACHE_DIR", None)
        env["XDG_CACHE_HOME"] = os.path.join(self.dir, "xdg")
        env["HOME"] = os.path.join(self.dir, "home")
        done = subprocess.run([PROBE], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertTrue(entries(os.path.join(self.dir, "xdg", "vkspmd")))
        del env["XDG_CACHE_HOME"]
        done = subprocess.run([PROBE], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertTrue(entries(os.path.join(self.dir, "home", ".cache", "vkspmd")))

    def test_empty_variable_turns_the_cache_off(self):
        done = self.run_probe(cache="")
        self.assertIn("cache directory: \n", done.stdout)
        self.assertEqual(metric(done.stdout, "CompileCacheMisses"), 0)
        self.assertEqual(done.stderr, "")


if __name__ == "__main__":
    PROBE, WORK_DIR = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
