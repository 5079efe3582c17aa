#!/bin/sh
# A rank of `vkspmd train` on 2 processes x 2 devices killed with SIGKILL after step 2 (issue 20):
# the other process fails by itself with an error naming the dead process well within the
# collective timeout (30 s here; a dead peer's closed connection is seen at once), and the launcher
# reports rank 1 as the first failure and exits 137. Usage: launch_kill.sh VKSPMD WORKDIR
set -eu
vkspmd=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
start=$(date +%s)
code=0
# Rank 0 ignores the launcher's SIGTERM (and the launcher waits 30 s before SIGKILL), so that it
# ends by its own error.
VKSPMD_COLLECTIVE_TIMEOUT_S=30 "$vkspmd" launch -n 2 --devices-per-process 2 --grace-period 30 -- \
  /bin/sh -c '
  vkspmd=$1; work=$2
  if [ "$RANK" = 1 ]; then
    # $$ becomes the trainer at exec; the watcher kills it once step 2 is logged.
    (while ! grep -q "step 2/" "$work/rank1.txt" 2> /dev/null; do sleep 0.05; done
     kill -9 $$) &
    exec "$vkspmd" train --steps 1000 --log-every 1 --out "$work/out" > "$work/rank1.txt" 2>&1
  fi
  trap "" TERM
  exec "$vkspmd" train --steps 1000 --log-every 1 --out "$work/out"
' sh "$vkspmd" "$work" > "$work/launch.txt" 2>&1 || code=$?
elapsed=$(($(date +%s) - start))
cat "$work/launch.txt"
test "$code" = 137 || { echo "expected the launcher's exit code 137, got $code"; exit 1; }
grep -q "rank 1 failed first (killed by SIGKILL); then rank 0 exit code [1-9]" "$work/launch.txt"
grep -q "^\[rank 0\] .*process 1 (ranks 2-3" "$work/launch.txt" ||
  { echo "rank 0's error does not name process 1"; exit 1; }
test "$elapsed" -lt 25 || { echo "took $elapsed s: rank 0 waited for the timeout"; exit 1; }
echo "rank 0 failed naming process 1; the launcher reported rank 1 first; $elapsed s in all"
