#!/bin/bash
#
# Build (once) and cache an upstream UCX release from the tarballs in
# ../shared/ucx-src (or $GAUDI_UCX_TARBALLS), and print the path of its
# cache directory. The directory holds:
#   src/      the unpacked, configured and built source tree (the module's
#             --with-ucx-src: UCX's internal headers, its uct gtest sources)
#   install/  the installed UCX: bin/ucx_info, bin/ucx_perftest, the shared
#             ucm/ucs/uct/ucp libraries and the transport modules (tcp, sm,
#             self, cma), include/, lib/pkgconfig/ucx.pc, etc/ucx/ucx.conf
#   build.log the build's output, with the time of each step
#
# Only what the per-release suite (test/suites/ucx-version.sh) and the
# module build (contrib/build-ucx.sh) use is built: shared libraries only,
# and of UCX's tree the libraries, ucx_info and ucx_perftest, not its test
# applications, examples, profile reader or bindings. The cache directory
# is named after a hash of that recipe: a cache built another way is never
# used for this one (and is left in place for whoever built it).
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
log() { echo "ucx-upstream: $*" >&2; }

# The recipe. Anything that changes what is built changes the cache key:
# bump recipe when the steps below change without a flag changing.
recipe=2
configure_flags=(
    --enable-mt --disable-static
    --disable-doxygen-doc --without-java --without-go
    --without-cuda --without-rocm --without-verbs --without-rdmacm
    --disable-debug --disable-assertions --disable-params-check
)
# UCX's own subdirectories, in its build order (the top-level SUBDIRS)
subdirs=(src/ucm src/ucs src/uct src/ucp src/tools/info src/tools/perf)
key=$(printf '%s\n' "$recipe" "${configure_flags[@]}" "${subdirs[@]}" |
      sha256sum | cut -c1-12)
dest=$cache/upstream/ucx-$ver-$key

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
step() {
    local started=$SECONDS
    echo "=== $*"
    "$@"
    echo "=== $(( SECONDS - started )) s: $*"
}
(
    cd "$dest/src"
    # a release tarball ships configure; a git archive does not
    if [ ! -x configure ]; then
        step ./autogen.sh
    fi
    step ./configure --prefix="$dest/install" "${configure_flags[@]}"
    for dir in "${subdirs[@]}"; do
        step make -j"$jobs" -C "$dir"
    done
    for dir in "${subdirs[@]}"; do
        step make -j"$jobs" -C "$dir" install
    done
    step make install-pkgconfigDATA
    # etc/ucx/ucx.conf, UCX's settings per CPU model, where it has one
    if [ -f config/Makefile ]; then
        step make -C config install
    fi
) > "$dest/build.log" 2>&1 || {
    tail -n 40 "$dest/build.log" >&2
    log "building UCX $ver failed (log: $dest/build.log)"
    exit 1
}
touch "$dest/.ucx-gaudi-complete"
echo "$dest"
