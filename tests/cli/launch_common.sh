# Sourced by the multi-process training tests (issue 20): VKSPMD and a fresh WORKDIR from the
# arguments, and digest FILE, the distinct final-parameter digests `train --parameter-digest`
# printed there.
set -eu
vkspmd=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
digest() { sed -n 's/.*parameter digest: \([0-9a-f]*\).*/\1/p' "$1" | sort -u; }
