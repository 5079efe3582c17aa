#!/bin/sh
# `vkspmd train` dp+tp on 2x2 with device-side collectives (VKSPMD_DEVICE_COLLECTIVES=1; lavapipe's
# four devices put on one VkDevice by VKSPMD_SHARED_QUEUES=1) equals the host-staged path on the
# same devices bit for bit: loss.csv and the final parameters' digest (issue 18).
# Usage: device_collectives_train.sh VKSPMD WORKDIR
set -eu
vkspmd=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
args="train --steps 4 --log-every 1 --mesh 2x2 --strategy dp+tp --parameter-digest"
digest() { sed -n 's/.*parameter digest: \([0-9a-f]*\).*/\1/p' "$1"; }
VKSPMD_SHARED_QUEUES=1 VKSPMD_DEVICE_COLLECTIVES=0 "$vkspmd" $args --out "$work/host" \
  > "$work/host.txt"
VKSPMD_SHARED_QUEUES=1 VKSPMD_DEVICE_COLLECTIVES=1 "$vkspmd" $args --out "$work/device" \
  > "$work/device.txt"
test -n "$(digest "$work/host.txt")"
cmp "$work/host/loss.csv" "$work/device/loss.csv"
test "$(digest "$work/host.txt")" = "$(digest "$work/device.txt")" ||
  { echo "final parameters differ between the host and the device path"; exit 1; }
echo "device-side collectives: loss.csv and the parameter digest equal the host path's"
