#!/bin/sh
# A job whose processes drive different device counts (process 0: 3 lavapipe devices, process
# 1: one): hybrid_device_mesh refuses it in both processes with one message naming each count,
# and init_device_mesh({2, 2}) over the job's 4 devices still gathers a DTensor exactly.
# Usage: hybrid_mesh_unequal.sh HYBRID_MESH_RUN WORKDIR
set -u
run=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
export WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 VKSPMD_RENDEZVOUS_DIR="$work/store"
export VKSPMD_RENDEZVOUS_TIMEOUT_S=60 VKSPMD_COLLECTIVE_TIMEOUT_S=60
RANK=0 LOCAL_RANK=0 VKSPMD_DEVICES=3 "$run" unequal > "$work/rank0.txt" 2>&1 &
first=$!
RANK=1 LOCAL_RANK=1 VKSPMD_DEVICES=1 "$run" unequal > "$work/rank1.txt" 2>&1 &
second=$!
status=0
wait $first || status=1
wait $second || status=1
expected="hybrid error: hybrid_device_mesh: the inner shape [2] needs 2 devices in each of the 2 process(es), which drive process 0: 3, process 1: 1. "
for rank in 0 1; do
  if ! grep -qF "$expected" "$work/rank$rank.txt" ||
     ! grep -q "^init_device_mesh gather ok" "$work/rank$rank.txt"; then
    status=1
  fi
done
# Both logs go to the output, so the test's checks see any validation message in them.
for rank in 0 1; do echo "--- process $rank"; cat "$work/rank$rank.txt"; done
[ $status -eq 0 ] || exit 1
echo "unequal processes: hybrid_device_mesh refused in both, init_device_mesh gathered exactly"
