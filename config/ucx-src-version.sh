#!/bin/sh
# Print the version (major.minor.patch) of the UCX source tree in $1
f="$1/configure.ac"
v() { sed -n "s/^define(\[ucx_ver_$1\], *\([0-9]*\)).*/\1/p" "$f"; }
echo "$(v major).$(v minor).$(v patch)"
