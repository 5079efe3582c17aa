#!/bin/sh
# `vkspmd launch -n 2 --devices-per-process 2 --max-restarts 1` with `vkspmd train --checkpoint-dir
# D --resume` (issue 20): each process saves its own devices' shards in D/process-<p>; the first
# attempt fails after step 2 was committed, the restart resumes both processes from it, and the
# losses of both equal an uninterrupted 1 process x 4 devices run's bit for bit, and so do the
# final parameters. Usage: launch_resume_processes.sh VKSPMD WORKDIR
. "$(dirname "$0")/launch_common.sh"
args="--log-every 1 --parameter-digest"
VKSPMD_DEVICES=4 "$vkspmd" train $args --steps 4 --out "$work/whole" > "$work/whole.txt"
"$vkspmd" launch -n 2 --devices-per-process 2 --max-restarts 1 -- /bin/sh -c '
  vkspmd=$1; work=$2; shift 2
  if [ "$VKSPMD_RESTART_COUNT" = 0 ]; then
    "$vkspmd" train "$@" --steps 2 --checkpoint-dir "$work/ckpt" --resume --out "$work/resumed"
    # Both processes committed step 2 (step_N appears only at the commit) before this one
    # fails, so that the other is not stopped mid-save (that case resumes from step 0).
    for q in 0 1; do
      i=0
      while [ ! -d "$work/ckpt/process-$q/step_00000002" ] && [ $i -lt 600 ]; do
        sleep 0.05; i=$((i + 1))
      done
    done
    echo "attempt 0: failing after step 2"
    exit 1
  fi
  exec "$vkspmd" train "$@" --steps 4 --checkpoint-dir "$work/ckpt" --resume --out "$work/resumed"
' sh "$vkspmd" "$work" $args > "$work/launch.txt" 2>&1 || { cat "$work/launch.txt"; exit 1; }
cat "$work/launch.txt"
ls "$work/ckpt/process-0" "$work/ckpt/process-1"
grep -q "^\[rank 1\] vkspmd train: resuming after step 2 from .*process-1/step_0*2" "$work/launch.txt"
cmp "$work/whole/loss.csv" "$work/resumed/loss.csv"
cmp "$work/whole/loss.csv" "$work/resumed/process-1/loss.csv"
sed -n '/restart 1 of 1/,$p' "$work/launch.txt" > "$work/restarted.txt"
test "$(digest "$work/restarted.txt")" = "$(digest "$work/whole.txt")" ||
  { echo "the resumed run's final parameters differ"; exit 1; }
echo "the restarted 2-process run's losses and parameters equal the uninterrupted run's"
