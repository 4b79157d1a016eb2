#!/bin/bash
#
# Build ucx-gaudi against an upstream UCX release: the release itself once
# (contrib/ucx-upstream.sh, cached under ~/.cache/ucx-gaudi), then the
# module, its test programs and that release's uct gtest subset out of tree
# in $BUILD_DIR (default: <repo>/build/ucx-VERSION; reused when present).
# Prints "<build dir> <UCX prefix>" on stdout.
#
# Usage: contrib/build-ucx.sh VERSION
#
set -euo pipefail

ver=${1:?usage: build-ucx.sh VERSION}
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build/ucx-$ver}
jobs=${JOBS:-$(nproc)}

ucx=$("$top/contrib/ucx-upstream.sh" "$ver")

if [ ! -x "$top/configure" ] || [ "$top/configure.ac" -nt "$top/configure" ]
then
    (cd "$top" && ./autogen.sh) >&2
fi

mkdir -p "$build"
cd "$build"
# a build made against another build of this release (an older recipe of
# ucx-upstream.sh) is configured again and rebuilt from clean: the uct
# gtest objects depend on UCX's headers by path only
stamp=.ucx-gaudi-ucx
if [ -f Makefile ] && [ "$(cat $stamp 2>/dev/null)" != "$ucx" ]; then
    make clean >&2 || true
    rm -rf config.status test/gtest/ucx/obj
fi
if [ ! -f Makefile ] || [ ! -f config.status ] ||
   [ "$top/configure" -nt config.status ]; then
    "$top/configure" --with-ucx="$ucx/install" --with-ucx-src="$ucx/src" \
        --prefix="$build/install" >&2
    echo "$ucx" > $stamp
fi
make -j"$jobs" >&2
make -j"$jobs" -C test/ops check TESTS= >&2
make -j"$jobs" -C test/mpi check TESTS= >&2
make -j"$jobs" -C test/emu/nicsim check TESTS= >&2
make -j"$jobs" -C test/gtest/ucx ucx_gtest >&2
# the module's gtest of freed and reused host buffers (ucx-version.sh)
make -j"$jobs" -C test/gtest gaudi_reuse_test >&2
echo "$build $ucx/install"
