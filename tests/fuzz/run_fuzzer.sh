#!/usr/bin/env bash
# Builds the HLO parser fuzzer with clang (-DVKSPMD_FUZZ=ON, a separate build directory) and runs
# it for SECONDS from a seed corpus of tests/testdata/*.hlo and tests/fuzz/corpus/*.
# Usage: tests/fuzz/run_fuzzer.sh SECONDS   (exit status 1 on any crash, hang or sanitizer report;
# never 77, which this project's scripts read as "skipped")
set -euo pipefail

seconds="${1:?usage: run_fuzzer.sh SECONDS}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${VKSPMD_FUZZ_BUILD_DIR:-${repo}/build-fuzz}"

mkdir -p "${build}"
CC=clang CXX=clang++ cmake -S "${repo}" -B "${build}" -G Ninja -DVKSPMD_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo > "${build}/configure.log" 2>&1 ||
  { cat "${build}/configure.log"; exit 1; }
cmake --build "${build}" --target hlo_parser_fuzzer

# libFuzzer writes new inputs into the first corpus directory, so seed a scratch copy.
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
mkdir -p "${work}/corpus" "${work}/artifacts"
cp "${repo}"/tests/testdata/*.hlo "${work}/corpus/"
if compgen -G "${repo}/tests/fuzz/corpus/*" > /dev/null; then
  cp "${repo}"/tests/fuzz/corpus/* "${work}/corpus/"
fi

status=0
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "${build}/tests/fuzz/hlo_parser_fuzzer" "${work}/corpus" \
  -max_total_time="${seconds}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -artifact_prefix="${work}/artifacts/" -print_final_stats=1 \
  -error_exitcode=1 -timeout_exitcode=1 || status=$?
if compgen -G "${work}/artifacts/*" > /dev/null; then
  mkdir -p "${repo}/build-fuzz-artifacts"
  cp "${work}"/artifacts/* "${repo}/build-fuzz-artifacts/"
  echo "fuzzer artifacts copied to ${repo}/build-fuzz-artifacts" >&2
fi
exit "${status}"
