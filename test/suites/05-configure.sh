# configure refuses, with a clear message, a UCX source tree whose version
# differs from the installed UCX, and a missing --with-ucx-src
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d); tmpdirs+=("$work")

mkdir -p "$work/ucx/src/uct/base" "$work/build"
touch "$work/ucx/src/uct/base/uct_md.h"
printf 'define([ucx_ver_major], 1)\ndefine([ucx_ver_minor], 99)\ndefine([ucx_ver_patch], 0)\n' \
    > "$work/ucx/configure.ac"

cd "$work/build"
if "$top/configure" --with-ucx-src="$work/ucx" > out 2>&1; then
    fail "version mismatch refused" "configure succeeded"
else
    expect_match "version mismatch refused" out \
        'UCX source tree version 1\.99\.0 differs from the installed UCX'
fi

if "$top/configure" > out 2>&1; then
    fail "missing --with-ucx-src refused" "configure succeeded"
else
    expect_match "missing --with-ucx-src refused" out \
        '--with-ucx-src=DIR is required'
fi

finish
