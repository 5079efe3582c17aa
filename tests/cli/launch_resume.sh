#!/bin/sh
# `vkspmd launch --max-restarts 1` with `vkspmd train --checkpoint-dir D --resume` (issue 20): the
# first attempt fails after step 2 was committed, the restart resumes from it, and the losses equal
# an uninterrupted run's bit for bit (loss.csv). Usage: launch_resume.sh VKSPMD WORKDIR
set -eu
vkspmd=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
model="--model mlp --strategy dp --mesh 1 --log-every 1"
"$vkspmd" train $model --steps 4 --out "$work/whole"
"$vkspmd" launch -n 1 --max-restarts 1 -- /bin/sh -c '
  vkspmd=$1; work=$2; shift 2
  if [ "$VKSPMD_RESTART_COUNT" = 0 ]; then
    "$vkspmd" train "$@" --steps 2 --checkpoint-dir "$work/ckpt" --resume --out "$work/resumed"
    echo "attempt 0: failing after step 2"
    exit 1
  fi
  exec "$vkspmd" train "$@" --steps 4 --checkpoint-dir "$work/ckpt" --resume --out "$work/resumed"
' sh "$vkspmd" "$work" $model
cmp "$work/whole/loss.csv" "$work/resumed/loss.csv"
echo "loss.csv of the restarted run equals the uninterrupted run's"
