#!/bin/sh
# `cmake --install` of the build tree into a fresh prefix, then `import vkspmd` from that prefix's
# site-packages (outside the source and build trees), computing on a device.
# Usage: install_check.sh CMAKE BUILD_DIR PREFIX PYTHON_INSTALL_DIR PYTHON
set -eu
cmake=$1 build=$2 prefix=$3 site=$4 python=$5
rm -rf "$prefix"
"$cmake" --install "$build" --prefix "$prefix" > /dev/null
cd /
PYTHONPATH="$prefix/$site" "$python" -c '
import vkspmd
assert vkspmd.__file__.startswith("'"$prefix"'"), vkspmd.__file__
print("installed vkspmd at", vkspmd.__file__, (vkspmd.ones(2) * 3).tolist())
'
rm -rf "$prefix"
