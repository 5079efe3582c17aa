#!/usr/bin/env bash
# Runs on a lent GPU machine, in a copy of the repository root, with .gpu/ (tools/gpu/pack.sh's
# pack) and .gl/ (Debian's libvulkan1 and glvnd .debs) carried. Each argument names a step:
#   devices  vkspmd devices (always first)
#   tests    the device tests (ctest label gpu, not slow) under core validation, on the GPU
#   train    the default step against PyTorch CUDA: 1 device f32/bf16/f16, 2x2 dp+tp
#   matmul   f32/f16/bf16 matmuls against torch.matmul (cuBLAS)
#   collect  the collectives benchmark (all-reduce against memcpy)
#   f16      a trace of the f16 training step, and the step without tensor-core dots
# Logs go to $OUT (the device tool brings them back). Each step is bounded by `timeout`.
set -uo pipefail
root=$(pwd)
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out"
for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig
pack=/tmp/pack
rm -rf "$pack" && mkdir -p "$pack" && xz -dc .gpu/pack.tar.xz | tar -C "$pack" -xf -
build=$(cat "$pack/build-dir")
src=$(cat "$pack/source-dir")
: "${build:?the pack names no build folder}" "${src:?the pack names no source folder}"
rm -rf "${root:?}/$build" && mkdir -p "$(dirname "$root/$build")" && mv "$pack/build" "$root/$build"
# Paths compiled into the binaries and ctest files name the source tree where it was built.
if [ "$src" != "$root" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$root" "$src"; fi
cmake_bin=$(command -v cmake || true)
if [ -n "$cmake_bin" ] && [ "$cmake_bin" != /usr/bin/cmake ] && [ ! -e /usr/bin/cmake ]; then
  ln -s "$cmake_bin" /usr/bin/cmake
fi
export LD_LIBRARY_PATH=$pack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VK_LAYER_PATH=$pack/layers
icd=""
for c in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
         /etc/vulkan/icd.d/nvidia_icd.json; do [ -f "$c" ] && icd=$c && break; done
echo "commit $(cat "$pack/commit"), ICD ${icd:-none}: $(cat "$icd" 2>/dev/null | tr -d '\n ')"
# The ci build pins device tests to lavapipe's manifest: put the GPU's driver under that name.
mkdir -p /usr/share/vulkan/icd.d
[ -n "$icd" ] && cp "$icd" /usr/share/vulkan/icd.d/lvp_icd.x86_64.json
export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd VKSPMD_CACHE_DIR=/tmp/vkspmd-cache
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
vk=$root/$build/tools/vkspmd
timeout 60 "$vk" devices 2>&1 | tee "$out/devices.log"
for step in "$@"; do
  start=$(date +%s)
  case $step in
    tests)
      # Not the tests whose executables the pack left out (PACK_ONLY); one regex of those (all
      # the names would pass ctest's regex size limit).
      ctest --test-dir "$root/$build" -L gpu -LE slow -N --show-only=json-v1 > "$pack/tests.json"
      regex=$(python3 - "$pack/tests.json" "$src/$build" <<'PY'
import json, os, re, sys
build = sys.argv[2]
names = [t["name"] for t in json.load(open(sys.argv[1]))["tests"]
         if not all(os.path.exists(a) for a in t.get("command", []) if a.startswith(build + "/"))]
print("^(" + "|".join(re.escape(n) for n in names) + ")$")
PY
)
      echo "$(echo "$regex" | tr '|' '\n' | wc -l) tests left out"
      timeout "${TESTS_TIMEOUT:-240}" ctest --test-dir "$root/$build" -L gpu -LE slow -E "$regex" \
        -j "${TESTS_JOBS:-12}" --timeout 200 --output-on-failure ${TESTS_ARGS:-} > "$out/ctest.log" 2>&1
      grep -E "tests passed|\(Failed\)|Timeout\)|\(Not Run\)|Exception" "$out/ctest.log" | head -60 ;;
    train)
      export PYTHONUNBUFFERED=1
      for mesh in "1 dp" "2x2 dp+tp"; do
        set -- $mesh
        timeout 70 python3 benchmarks/train_vs_torch.py --vkspmd "$vk" --torch-device cuda \
          --steps 60 --mesh "$1" --strategy "$2" 2>&1 | tail -8
      done 2>&1 | tee "$out/train.log"
      for precision in bf16 f16; do
        echo "== train --precision $precision"
        timeout 40 "$vk" train --steps 40 --mesh 1 --strategy dp --precision "$precision" 2>&1 |
          grep -E "ms/step|dispatches|steps in" | tail -4
      done 2>&1 | tee -a "$out/train.log" ;;
    f16)
      # Where the f16 step's time goes: a trace of steps 5-20, and the step without tensor cores.
      timeout 60 "$vk" train --steps 20 --mesh 1 --strategy dp --precision f16 \
        --trace "$out/f16-trace.json" --trace-steps 5:20 2>&1 | grep -E "ms/step|dispatches"
      timeout 30 "$vk" trace summarize "$out/f16-trace.json" 2>&1 | tee "$out/f16-summary.log" | head -40
      rm -f "$out/f16-trace.json"
      VKSPMD_DOT_KERNEL=shared_memory timeout 40 "$vk" train --steps 30 --mesh 1 --strategy dp \
        --precision f16 2>&1 | grep -E "ms/step|dispatches" ;;
    matmul)
      timeout 120 python3 benchmarks/matmul_vs_torch.py --codegen-benchmarks \
        "$root/$build/benchmarks/codegen_benchmarks" --sizes "${MATMUL_SIZES:-1024,2048}" \
        --dtypes f32,f16,bf16 --json "$out/matmul.json" 2>&1 | tee "$out/matmul.log" | tail -20 ;;
    collect)
      timeout 60 "$root/$build/benchmarks/collectives_benchmarks" --benchmark_min_time=0.1 \
        --benchmark_filter="BM_AllReduce|BM_MemcpyFloor" \
        2>&1 | tee "$out/collectives.log" | tail -20 ;;
    *) echo "unknown step $step" ;;
  esac
  echo "== $step took $(( $(date +%s) - start )) s"
done
