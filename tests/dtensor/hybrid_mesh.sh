#!/bin/sh
# A hybrid mesh on 2 processes x 2 lavapipe devices (dp over the processes, tp inside each)
# equals the same [2, 2] mesh in 1 process x 4 devices bit for bit: DTensor redistributes
# (values and the collectives they run) and 3 SGD steps of a dp+tp parallelized MLP.
# Usage: hybrid_mesh.sh VKSPMD HYBRID_MESH_RUN WORKDIR
set -eu
vkspmd=$1
run=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
VKSPMD_DEVICES=4 "$run" flat > "$work/one.txt"
"$vkspmd" launch -n 2 --devices-per-process 2 -- "$run" hybrid > "$work/launch.txt"
grep -q "^step 2 loss" "$work/one.txt"
for rank in 0 1; do
  sed -n "s/^\[rank $rank\] //p" "$work/launch.txt" > "$work/rank$rank.txt"
  if ! cmp "$work/one.txt" "$work/rank$rank.txt"; then
    diff "$work/one.txt" "$work/rank$rank.txt" | head -20
    exit 1
  fi
done
echo "hybrid mesh: both processes print the 1 x 4 run's $(wc -l < "$work/one.txt") lines"
