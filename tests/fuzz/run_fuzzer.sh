#!/usr/bin/env bash
# Builds a fuzzer with clang (-DVKSPMD_FUZZ=ON, a separate build directory) and runs it for SECONDS
# from its seed corpus: hlo_parser_fuzzer (the default) from tests/testdata/*.hlo and
# tests/fuzz/corpus/*; spmd_differential_fuzzer from tests/fuzz/spmd_corpus/* (a reproducer of
# every bug it found).
# Usage: tests/fuzz/run_fuzzer.sh SECONDS [FUZZER]   (exit status 1 on any crash, hang, sanitizer
# report or, for the SPMD fuzzer, partitioned result that differs from the whole program's; never
# 77, which this project's scripts read as "skipped")
set -euo pipefail

seconds="${1:?usage: run_fuzzer.sh SECONDS [hlo_parser_fuzzer|spmd_differential_fuzzer]}"
fuzzer="${2:-hlo_parser_fuzzer}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${VKSPMD_FUZZ_BUILD_DIR:-${repo}/build-fuzz}"

mkdir -p "${build}"
CC=clang CXX=clang++ cmake -S "${repo}" -B "${build}" -G Ninja -DVKSPMD_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo > "${build}/configure.log" 2>&1 ||
  { cat "${build}/configure.log"; exit 1; }
cmake --build "${build}" --target "${fuzzer}"

# libFuzzer writes new inputs into the first corpus directory, so seed a scratch copy.
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
mkdir -p "${work}/corpus" "${work}/artifacts"
case "${fuzzer}" in
  hlo_parser_fuzzer)
    seeds=("${repo}"/tests/testdata/*.hlo "${repo}"/tests/fuzz/corpus/*)
    max_len=65536 ;;
  spmd_differential_fuzzer)  # a program uses about a hundred bytes of choices
    seeds=("${repo}"/tests/fuzz/spmd_corpus/*)
    max_len=512 ;;
  *) echo "run_fuzzer.sh: unknown fuzzer ${fuzzer}" >&2; exit 1 ;;
esac
cp "${seeds[@]}" "${work}/corpus/"

status=0
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "${build}/tests/fuzz/${fuzzer}" "${work}/corpus" \
  -max_total_time="${seconds}" -timeout=10 -rss_limit_mb=2048 -max_len="${max_len}" \
  -artifact_prefix="${work}/artifacts/" -print_final_stats=1 \
  -error_exitcode=1 -timeout_exitcode=1 || status=$?
if compgen -G "${work}/artifacts/*" > /dev/null; then
  mkdir -p "${repo}/build-fuzz-artifacts"
  cp "${work}"/artifacts/* "${repo}/build-fuzz-artifacts/"
  echo "fuzzer artifacts copied to ${repo}/build-fuzz-artifacts" >&2
fi
exit "${status}"
