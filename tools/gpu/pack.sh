#!/usr/bin/env bash
# Packs a built tree for a machine with a real GPU that has none of Debian's libraries:
#   [PACK_ONLY=regex] tools/gpu/pack.sh [BUILD_DIR]   (default build/ci)  ->  .gpu/pack.tar.xz
# PACK_ONLY keeps the executables whose build-relative path matches (the device tool carries at
# most 64 MiB: all device tests' executables compress to about 100 MB).
# The pack holds the build tree without objects (executables stripped, ctest files kept), the
# shared libraries the executables need beyond glibc/libstdc++/libvulkan, and the Khronos
# validation layer with a manifest that points beside itself. tools/gpu/job.sh unpacks it on the
# GPU machine. .gpu/ and .gl/ are for .git/info/exclude, never committed.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(realpath --relative-to=. "${1:-build/ci}")
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/build" "$stage/lib" "$stage/layers" .gpu
# The executables the device tests run (and the CLI and benchmarks); the other tests are CPU-only.
abs_build=$(cd "$build" && pwd)
{
  ctest --test-dir "$build" -L gpu -N --show-only=json-v1 | python3 -c '
import json, os, sys
build = sys.argv[1]
for test in json.load(sys.stdin)["tests"]:
    for arg in test.get("command", []):
        if arg.startswith(build) and os.path.isfile(arg):
            print(os.path.relpath(arg, build))' "$abs_build" | grep -E "${PACK_ONLY:-.}"
  echo tools/vkspmd
  echo benchmarks/codegen_benchmarks
  echo benchmarks/collectives_benchmarks
  echo benchmarks/train_benchmarks
} | sort -u > "$stage/wanted"
# The tree minus what only the build needs, and minus executables nothing above runs.
(cd "$build" && find . -type d -name CMakeFiles -prune -o -type f \
   ! -name '*.o' ! -name '*.a' ! -name '*.ninja' ! -name '.ninja_*' ! -name '*.d' -print) |
  sed 's#^\./##' | while read -r f; do
    if head -c4 "$build/$f" | grep -q ELF && ! grep -qxF "$f" "$stage/wanted"; then continue; fi
    mkdir -p "$stage/build/$(dirname "$f")"
    cp -p "$build/$f" "$stage/build/$f"
  done
find "$stage/build" -type f -exec sh -c 'head -c4 "$1" | grep -q ELF' _ {} \; -print |
  while read -r f; do strip --strip-all "$f"; echo "$f"; done > "$stage/elves"
# Libraries the executables load that a CUDA image will not have.
while read -r f; do ldd "$f" 2>/dev/null | awk '/=> \//{print $3}' || true; done < "$stage/elves" |
  sort -u | grep -v -E '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libgcc_s|libstdc\+\+|libvulkan)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done || true
layer=/usr/lib/x86_64-linux-gnu/libVkLayer_khronos_validation.so
cp "$layer" "$stage/layers/"
sed 's#"library_path": *"[^"]*"#"library_path": "./libVkLayer_khronos_validation.so"#' \
  /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json \
  > "$stage/layers/VkLayer_khronos_validation.json"
echo "$build" > "$stage/build-dir"
echo "$(pwd)" > "$stage/source-dir"
git rev-parse --short HEAD > "$stage/commit"
# One solid stream with a dictionary larger than the pack: the statically linked executables
# share most of their code, which then compresses to one copy.
tar -C "$stage" --sort=name -cf - . | xz -T1 --lzma2=preset=3,dict=512MiB > .gpu/pack.tar.xz
du -h .gpu/pack.tar.xz
