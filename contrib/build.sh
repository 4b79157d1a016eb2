#!/bin/bash
#
# Set up, configure and build ucx-gaudi out of tree in $BUILD_DIR
# (default: <repo>/build). Prints the build directory on stdout.
#
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
jobs=${JOBS:-$(nproc)}

ucx_src=$("$top/contrib/setup.sh")

if [ ! -x "$top/configure" ] || [ "$top/configure.ac" -nt "$top/configure" ]
then
    (cd "$top" && ./autogen.sh) >&2
fi

mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ] || [ "$top/configure" -nt config.status ]; then
    "$top/configure" --with-ucx-src="$ucx_src" \
        --prefix="$build/install" >&2
fi
make -j"$jobs" >&2
echo "$build"
