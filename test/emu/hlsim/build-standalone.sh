#!/bin/sh
# Build libhlsim.so, test_hlsim and hlsim_totals without the autotools tree.
# Usage: test/emu/hlsim/build-standalone.sh [outdir]   (default: ./build-hlsim)
set -e
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
out=${1:-build-hlsim}
mkdir -p "$out"
CC=${CC:-gcc}
CFLAGS=${CFLAGS:--O2 -g -Wall -Wextra -Wno-unused-parameter}
inc="-I$top/src -I$here -I$top/test/common"
$CC -std=gnu11 $CFLAGS -fPIC -shared $inc -o "$out/libhlsim.so" \
    "$here"/hlsim_*.c -ldl -lpthread
$CC -std=gnu11 $CFLAGS $inc -o "$out/test_hlsim" "$here/test_hlsim.c" \
    -ldl -lpthread
$CC -std=gnu11 $CFLAGS $inc -o "$out/hlsim_totals" "$here/hlsim-totals.c"
echo "built $out/libhlsim.so $out/test_hlsim $out/hlsim_totals"
