#!/usr/bin/env bash
# Installs, as root, the Debian 12 packages vkspmd needs to build, test and run. Idempotent: a
# machine that already has everything installs nothing and only checks.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config clang clang-format
  libvulkan-dev vulkan-validationlayers vulkan-tools mesa-vulkan-drivers
  glslang-dev glslang-tools glslc spirv-tools
  libabsl-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev libbenchmark-tools
  libcli11-dev nlohmann-json3-dev libxxhash-dev libgloo-dev
  python3-numpy python3-torch libopenblas-dev libclang-rt-14-dev
  python3-dev pybind11-dev python3-pytest libglpk-dev
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "setup: missing packages: ${missing[*]}" >&2
  echo "setup: run this script as root (sudo tools/setup.sh) to install them" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
