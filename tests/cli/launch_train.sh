#!/bin/sh
# `vkspmd train` dp+tp on 2 processes x 2 devices (issue 20), started by `vkspmd launch`, by
# Open MPI's mpirun and by torchrun --no-python when installed, equals 1 process x 4 devices bit
# for bit: loss.csv of every process and the final parameters' digest.
# Usage: launch_train.sh VKSPMD WORKDIR
. "$(dirname "$0")/launch_common.sh"
args="train --steps 4 --log-every 1 --parameter-digest"
same() {  # same NAME: the run's curves and digest equal the 1 x 4 run's.
  cmp "$work/one/loss.csv" "$work/$1/loss.csv"
  cmp "$work/one/loss.csv" "$work/$1/process-1/loss.csv"
  test "$(digest "$work/$1.txt" | wc -l)" = 1 || { echo "$1: the processes' digests differ"; exit 1; }
  test "$(digest "$work/$1.txt")" = "$(digest "$work/one.txt")" ||
    { echo "$1: final parameters differ from 1 x 4"; exit 1; }
  echo "$1: loss.csv of both processes and the parameter digest equal 1 process x 4 devices"
}
VKSPMD_DEVICES=4 "$vkspmd" $args --out "$work/one" > "$work/one.txt"
test -n "$(digest "$work/one.txt")"
"$vkspmd" launch -n 2 --devices-per-process 2 -- "$vkspmd" $args --out "$work/launch" \
  > "$work/launch.txt"
same launch
if command -v mpirun > /dev/null; then
  mpirun --allow-run-as-root --oversubscribe -n 2 -x VKSPMD_DEVICES=2 \
    "$vkspmd" $args --out "$work/mpirun" > "$work/mpirun.txt"
  same mpirun
fi
# Debian's torch 1.13 torchrun needs -r/-t/--log_dir to start on Python 3.11; its agent holds
# --master_port and vkspmd's store takes the next port.
if command -v torchrun > /dev/null; then
  VKSPMD_DEVICES=2 torchrun -r 1 -t 1 --log_dir "$work/torchrun-logs" --no_python \
    --nproc_per_node 2 --master_port 29741 "$vkspmd" $args --out "$work/torchrun" \
    > "$work/torchrun.txt" 2>&1
  same torchrun
fi
