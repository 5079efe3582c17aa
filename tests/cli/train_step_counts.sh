#!/bin/sh
# `vkspmd train`'s per-step dispatch and collective counts (the summary's "per step and device"
# line) are the same whatever the number of steps after the first: a 2-step run, a 6-step run and
# a run resumed from a checkpoint with 2 steps left all print the counts of every other step, and
# none is 0 (they were, when the steady state's window lost the step in flight; issue 18).
# Usage: train_step_counts.sh VKSPMD WORKDIR
set -eu
vkspmd=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
args="train --model mlp --strategy dp --mesh 4 --log-every 1000"
counts() { sed -n 's/.*per step and device: \(.*\)$/\1/p' "$1"; }
"$vkspmd" $args --steps 2 --out "$work/two" > "$work/two.txt"
"$vkspmd" $args --steps 6 --out "$work/six" > "$work/six.txt"
"$vkspmd" $args --steps 3 --out "$work/resumed" --checkpoint-dir "$work/checkpoints" \
  > "$work/first.txt"
"$vkspmd" $args --steps 5 --out "$work/resumed" --checkpoint-dir "$work/checkpoints" --resume \
  > "$work/resumed.txt"
six=$(counts "$work/six.txt")
echo "6 steps: $six"
echo "$six" | grep -Eq '^[1-9][0-9]* kernel dispatches, [1-9][0-9]* collectives$' ||
  { echo "the 6-step run's counts are missing or zero"; exit 1; }
for run in two first resumed; do
  test "$(counts "$work/$run.txt")" = "$six" ||
    { echo "$run: '$(counts "$work/$run.txt")' differs from the 6-step run's '$six'"; exit 1; }
done
echo "per-step counts equal in every run"
