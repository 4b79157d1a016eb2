#!/bin/bash
#
# Build (once) and cache an upstream UCX release from the tarballs in
# ../shared/ucx-src (or $GAUDI_UCX_TARBALLS), and print the path of its
# cache directory. The directory holds:
#   src/      the unpacked, configured and built source tree
#   install/  the installed UCX (bin/ucx_info, lib/, include/)
#
# Usage: contrib/ucx-upstream.sh VERSION [CACHE_DIR]
#   CACHE_DIR defaults to $GAUDI_UCX_CACHE or ~/.cache/ucx-gaudi
#
set -euo pipefail

ver=${1:?usage: ucx-upstream.sh VERSION [CACHE_DIR]}
top=$(cd "$(dirname "$0")/.." && pwd)
cache=${2:-${GAUDI_UCX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ucx-gaudi}}
tarballs=${GAUDI_UCX_TARBALLS:-$top/../shared/ucx-src}
jobs=${JOBS:-$(nproc)}
dest=$cache/upstream/ucx-$ver
log() { echo "ucx-upstream: $*" >&2; }

if [ -f "$dest/.ucx-gaudi-complete" ]; then
    echo "$dest"
    exit 0
fi

tarball=$tarballs/ucx-$ver.tar.xz
if [ ! -f "$tarball" ]; then
    log "no tarball $tarball"
    exit 1
fi
if [ -f "$tarballs/SHA256SUMS" ]; then
    (cd "$tarballs" && grep " ucx-$ver.tar.xz\$" SHA256SUMS | sha256sum -c -) \
        >&2 || { log "checksum of $tarball does not match"; exit 1; }
fi

rm -rf "$dest"
mkdir -p "$dest"
tar xJf "$tarball" -C "$dest"
mv "$dest/ucx-$ver" "$dest/src"
log "building UCX $ver in $dest (a few minutes)"
(
    cd "$dest/src"
    ./autogen.sh
    ./configure --prefix="$dest/install" --enable-mt \
        --disable-doxygen-doc --without-java --without-go \
        --without-cuda --without-rocm --without-verbs --without-rdmacm \
        --disable-debug --disable-assertions --disable-params-check
    make -j"$jobs"
    make install
) > "$dest/build.log" 2>&1 || {
    tail -n 40 "$dest/build.log" >&2
    log "building UCX $ver failed (log: $dest/build.log)"
    exit 1
}
touch "$dest/.ucx-gaudi-complete"
echo "$dest"
