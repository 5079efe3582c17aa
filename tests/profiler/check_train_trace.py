#!/usr/bin/python3
"""`vkspmd train --trace` end to end: the trace's structure, the same kernel spans in every traced
step, each inside the host's window for its submission, the devices' time per step (their runs
less their collectives) within 10% of the compute time train reports for the traced steps,
`vkspmd trace summarize` on it, and a VKSPMD_TRACE trace of a whole run (its compile stages).

usage: check_train_trace.py VKSPMD WORK_DIR [train options...]
"""
import collections
import json
import os
import re
import shutil
import subprocess
import sys

SLACK_US = 0.0025  # ts and dur are written to 0.001 us.


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def check_structure(events):
    spans = collections.defaultdict(list)
    flows = collections.defaultdict(lambda: [0, 0])
    for event in events:
        for key in ("ph", "name", "pid", "tid"):
            if key not in event:
                fail("an event without %s: %s" % (key, event))
        if event["ph"] != "M" and "ts" not in event:
            fail("an event without ts: %s" % event)
        if event["ph"] == "X":
            if event.get("dur", -1) < 0:
                fail("a span without a non-negative dur: %s" % event)
            spans[(event["pid"], event["tid"])].append((event["ts"], event["ts"] + event["dur"]))
        if event["ph"] in ("s", "f"):
            flows[event["id"]][0 if event["ph"] == "s" else 1] += 1
    for track, track_spans in spans.items():
        track_spans.sort(key=lambda span: (span[0], -span[1]))
        open_ends = []
        for start, end in track_spans:
            while open_ends and open_ends[-1] <= start + SLACK_US:
                open_ends.pop()
            if open_ends and end > open_ends[-1] + SLACK_US:
                fail("spans overlap partly on track %s at %s" % (track, start))
            open_ends.append(end)
    for flow_id, ends in flows.items():
        if ends != [1, 1]:
            fail("flow %s has %d start(s) and %d finish(es)" % (flow_id, ends[0], ends[1]))
    return len(flows)


def main():
    vkspmd, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    trace_path = os.path.join(work, "trace.json")
    first, end = 2, 5
    command = [vkspmd, "train", "--steps", "6", "--out", work, "--trace", trace_path,
               "--trace-steps", "%d:%d" % (first, end)] + sys.argv[3:]
    result = subprocess.run(command, capture_output=True, text=True)
    print(result.stdout + result.stderr)
    if result.returncode != 0:
        fail("vkspmd train exited %d" % result.returncode)
    match = re.search(r"trace: steps (\d+)-(\d+) in .*: compute ([0-9.]+) ms, collectives "
                      r"([0-9.]+) ms per step", result.stdout)
    if not match:
        fail("train printed no trace line")
    if (int(match.group(1)), int(match.group(2))) != (first, end - 1):
        fail("train traced steps %s-%s, not %d-%d" % (match.group(1), match.group(2), first,
                                                      end - 1))
    compute_ms = float(match.group(3))
    steps = end - first

    with open(trace_path) as handle:
        trace = json.load(handle)
    if "traceEvents" not in trace or "displayTimeUnit" not in trace:
        fail("required top-level keys are missing")
    events = trace["traceEvents"]
    flow_count = check_structure(events)

    # Device processes: their kernel spans; the host's device workers: their runs and waits.
    kernels = collections.defaultdict(list)
    collective_us = collections.defaultdict(float)
    worker_of_thread = {}
    for event in events:
        if event["ph"] == "M" and event["name"] == "thread_name" and \
                event["args"]["name"].startswith("device worker "):
            worker_of_thread[event["tid"]] = int(event["args"]["name"].split()[-1])
    runs_us = collections.defaultdict(float)
    windows = collections.defaultdict(list)
    launches = 0
    for event in events:
        if event["ph"] != "X":
            continue
        if event.get("cat") == "kernel":
            kernels[event["pid"] - 100].append(event)
        elif event.get("cat") == "collective":
            collective_us[event["pid"] - 100] += event["dur"]
        elif event["name"] == "launch graph":
            launches += 1
        elif event["tid"] in worker_of_thread and event["pid"] == 1:
            worker = worker_of_thread[event["tid"]]
            if event["name"] == "device run":
                runs_us[worker] += event["dur"]
            if event["name"] == "submit and wait":
                windows[worker].append((event["ts"], event["ts"] + event["dur"]))
    if launches != steps:
        fail("%d graph launches in the trace; %d steps were traced" % (launches, steps))
    if sorted(kernels) != [0, 1, 2, 3]:
        fail("kernel spans on devices %s; the default mesh has 0-3" % sorted(kernels))
    kernel_ms, compute_in_trace_ms = [], []
    for device, spans in sorted(kernels.items()):
        if len(spans) % steps != 0:
            fail("device %d: %d kernel spans is no whole number of %d steps" %
                 (device, len(spans), steps))
        spans.sort(key=lambda span: span["ts"])
        names = [span["name"] for span in spans]
        per_step = len(names) // steps
        for step in range(1, steps):
            if names[step * per_step:(step + 1) * per_step] != names[:per_step]:
                fail("device %d: step %d dispatched other kernels than the first" % (device, step))
        # Each kernel ran while its device worker waited for its submission: the timestamps are
        # placed on the host clock inside that window.
        device_windows = sorted(windows[device])
        for span in spans:
            start, end = span["ts"], span["ts"] + span["dur"]
            if not any(low - SLACK_US <= start and end <= high + SLACK_US
                       for low, high in device_windows):
                fail("device %d: kernel %s [%.3f, %.3f] lies outside every submit-and-wait "
                     "window of its worker" % (device, span["name"], start, end))
        kernel_ms.append(sum(span["dur"] for span in spans) / 1e3 / steps)
        compute_in_trace_ms.append((runs_us[device] - collective_us[device]) / 1e3 / steps)
        print("device %d: %d dispatches per step, kernels %.2f ms, device run less collectives "
              "%.2f ms per step" % (device, per_step, kernel_ms[-1], compute_in_trace_ms[-1]))
    if flow_count == 0:
        fail("no flow joins the collectives of the default dp+tp run")
    compute_trace = sum(compute_in_trace_ms) / len(compute_in_trace_ms)
    kernels_mean = sum(kernel_ms) / len(kernel_ms)
    print("per step: the trace's device compute %.2f ms (kernels alone %.2f ms = %.0f%%), "
          "train's compute %.2f ms" % (compute_trace, kernels_mean,
                                       100 * kernels_mean / compute_ms, compute_ms))
    if abs(compute_trace - compute_ms) > 0.10 * compute_ms:
        fail("the trace's device time per step %.2f ms is not within 10%% of train's compute "
             "time %.2f ms" % (compute_trace, compute_ms))
    if kernels_mean > compute_ms:
        fail("kernels take longer than the steps' compute time")

    summary = subprocess.run([vkspmd, "trace", "summarize", trace_path], capture_output=True,
                             text=True)
    print(summary.stdout + summary.stderr)
    if summary.returncode != 0:
        fail("vkspmd trace summarize exited %d" % summary.returncode)
    for text in ("%d graph run(s) on 4 device(s)" % steps, "top kernels by device time",
                 "collectives (host-staged", "host time per phase", "launch graph"):
        if text not in summary.stdout:
            fail("the summary lacks %r" % text)

    # VKSPMD_TRACE: the whole run, compiles included, written at exit.
    env_trace = os.path.join(work, "environment.json")
    run = subprocess.run([vkspmd, "train", "--model", "mlp", "--steps", "2", "--out",
                          os.path.join(work, "env")], capture_output=True, text=True,
                         env=dict(os.environ, VKSPMD_TRACE=env_trace))
    if run.returncode != 0 or not os.path.exists(env_trace):
        fail("VKSPMD_TRACE: vkspmd train exited %d without writing %s: %s" %
             (run.returncode, env_trace, run.stderr))
    with open(env_trace) as handle:
        events = json.load(handle)["traceEvents"]
    check_structure(events)
    names = {event["name"] for event in events if event["ph"] == "X"}
    for name in ("sync: lower graphs", "compile graph",
                 "partition (sharding propagation, SPMD partitioner)", "compile executable",
                 "plan and generate kernels (fusion, GLSL)", "record command buffers",
                 "launch graph", "device run", "submit and wait"):
        if name not in names:
            fail("VKSPMD_TRACE's trace has no %r span" % name)
    print("OK")


if __name__ == "__main__":
    main()
