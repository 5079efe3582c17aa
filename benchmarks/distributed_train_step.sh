#!/bin/sh
# The default `vkspmd train` step (transformer, dp+tp on a 2x2 mesh) on 1 process x 4 devices
# against 2 processes x 2 devices (vkspmd launch), alternating, in one run (issue 20). Prints each
# run's steady-state "then ... ms/step" line and a JSON summary of the medians.
# Usage: distributed_train_step.sh VKSPMD [STEPS=20] [REPEATS=3]
set -eu
vkspmd=$1
steps=${2:-20}
repeats=${3:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
step_ms() { sed -n 's/.*then \([0-9.]*\) ms\/step.*collectives \([0-9.]*\) ms.*/\1 \2/p' "$1" | head -1; }
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
: > "$work/one" && : > "$work/two"
for r in $(seq "$repeats"); do
  VKSPMD_DEVICES=4 "$vkspmd" train --steps "$steps" --log-every "$steps" --out "$work/o1" \
    > "$work/run.txt"
  step_ms "$work/run.txt" >> "$work/one"
  echo "1 x 4, run $r: $(tail -1 "$work/one") (ms/step, collectives ms/step)"
  "$vkspmd" launch -n 2 --devices-per-process 2 -- "$vkspmd" train --steps "$steps" \
    --log-every "$steps" --out "$work/o2" > "$work/run.txt"
  grep '^\[rank 0\]' "$work/run.txt" > "$work/rank0.txt"
  step_ms "$work/rank0.txt" >> "$work/two"
  echo "2 x 2, run $r: $(tail -1 "$work/two") (ms/step, collectives ms/step)"
done
one=$(cut -d' ' -f1 "$work/one" | median)
two=$(cut -d' ' -f1 "$work/two" | median)
one_c=$(cut -d' ' -f2 "$work/one" | median)
two_c=$(cut -d' ' -f2 "$work/two" | median)
printf '{"steps": %s, "repeats": %s, "one_process_4_devices_ms": %s, "one_process_collectives_ms": %s, "two_processes_2_devices_ms": %s, "two_processes_collectives_ms": %s}\n' \
  "$steps" "$repeats" "$one" "$one_c" "$two" "$two_c"
