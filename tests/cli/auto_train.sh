#!/bin/sh
# `vkspmd train --strategy auto` (issue 22): the model trained with auto-sharding on each mesh
# (AUTO_MESHES, default 2, 4 and 2x2) has the losses of the run on one device (relative 1e-4, the
# strategies' tolerance), and the run prints the plan (each parameter's sharding) and where its
# cost model came from (echoed, for the test's regex).
# Usage: [AUTO_MESHES="2 4"] [AUTO_ARGS="--cost-model defaults"] auto_train.sh VKSPMD WORKDIR MODEL
#        [train options...]   (AUTO_ARGS go to the auto runs only; the one-device run is dp)
set -eu
vkspmd=$1
work=$2
model=$3
shift 3
meshes=${AUTO_MESHES:-2 4 2x2}
rm -rf "$work"
mkdir -p "$work"
args="train --model $model --steps 4 --log-every 1 $*"
"$vkspmd" $args --mesh 1 --strategy dp --out "$work/one" > "$work/one.txt"
for mesh in $meshes; do
  "$vkspmd" $args --mesh "$mesh" --strategy auto ${AUTO_ARGS:-} --out "$work/auto-$mesh" \
    > "$work/auto-$mesh.txt"
  grep -q "auto-sharding plan: modelled" "$work/auto-$mesh.txt" ||
    { echo "no plan printed on mesh $mesh"; cat "$work/auto-$mesh.txt"; exit 1; }
  grep -q "^    .*weight {" "$work/auto-$mesh.txt" ||
    { echo "no parameter's sharding printed on mesh $mesh"; exit 1; }
  echo "mesh $mesh: $(grep -m1 '^    cost model: ' "$work/auto-$mesh.txt" | sed 's/^ *//')"
  python3 - "$work/one/loss.csv" "$work/auto-$mesh/loss.csv" "$mesh" <<'PY'
import sys
def losses(path):
    rows = [line.strip().split(",") for line in open(path) if line.strip()]
    return [(int(r[0]), float(r[1])) for r in rows if r[0].isdigit()]
one, auto = losses(sys.argv[1]), losses(sys.argv[2])
assert len(one) == 4 and [s for s, _ in one] == [s for s, _ in auto], (one, auto)
for (step, a), (_, b) in zip(one, auto):
    assert abs(a - b) <= 1e-4 * abs(a), f"mesh {sys.argv[3]} step {step}: {b} vs one device {a}"
PY
done
echo "auto: the losses on $(echo $meshes | sed 's/ /, /g') devices equal one device's"
