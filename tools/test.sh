#!/usr/bin/env bash
# Sets up (when run as root), builds and runs the whole vkspmd test suite: the README's second
# command, and what .ci/run calls. Device tests run on lavapipe with the validation layer on.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -eq 0 ]; then tools/setup.sh; fi
mkdir -p -m 700 "${XDG_RUNTIME_DIR:-/tmp/vkspmd-xdg-$(id -u)}"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp/vkspmd-xdg-$(id -u)}"

echo "== The Vulkan devices this machine has (lavapipe pinned for tests)"
VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json vulkaninfo --summary 2>/dev/null \
  | sed -n '/^Devices:/,$p' || true

echo "== Layering check (DESIGN.md)"
if [ -x ../shared/tools/check-layers ]; then ../shared/tools/check-layers .; fi

echo "== Configure, build and test (preset ci)"
cmake --preset ci
cmake --build --preset ci
if [ -x tests/fuzz/run_fuzzer.sh ]; then
  echo "== Fuzzing the HLO parser for ${VKSPMD_FUZZ_SECONDS:-60} seconds"
  tests/fuzz/run_fuzzer.sh "${VKSPMD_FUZZ_SECONDS:-60}"
  echo "== Fuzzing the SPMD partitioner against the reference for ${VKSPMD_FUZZ_SECONDS:-60} seconds"
  tests/fuzz/run_fuzzer.sh "${VKSPMD_FUZZ_SECONDS:-60}" spmd_differential_fuzzer
fi
ctest --preset ci
