#!/bin/sh
# `vkspmd grad` of a training step using top_k (a slice of a sort with an iota), an embedding
# gather and x.at[i].set(u), then `vkspmd run --compare` of the gradient module on one device and
# partitioned over two with the weight split by columns and the table by rows (the partitioner
# adds collectives around the sorts): each exits 6 if an element differs from the CPU reference.
# Usage: grad_run_compare.sh VKSPMD MODEL.hlo WORKDIR
set -eu
vkspmd=$1
model=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
"$vkspmd" grad "$model" > "$work/gradients.hlo"
grep -q "sort(" "$work/gradients.hlo" || { echo "no sort in the gradient module"; exit 1; }
"$vkspmd" run "$work/gradients.hlo" --random-inputs 5 --compare
"$vkspmd" run "$work/gradients.hlo" --random-inputs 5 --compare --devices 2 \
  --spec "w=(None, 0)" --spec "table=(0, None)"
echo "the gradient module matches the CPU reference on 1 and 2 devices"
