#!/bin/bash
#
# Fetch and cache Debian's source package of exactly the installed libucx0
# version, and print the path of the unpacked tree.
#
# The system's apt configuration is never modified: the deb-src entries are
# derived from the system's own "deb" entries into a private directory and
# apt is pointed at it with -o options.
#
# Usage: contrib/ucx-src.sh [CACHE_DIR]
#   CACHE_DIR defaults to $GAUDI_UCX_CACHE or ~/.cache/ucx-gaudi
#
set -euo pipefail

cache=${1:-${GAUDI_UCX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ucx-gaudi}}
log() { echo "ucx-src: $*" >&2; }

pkgver=$(dpkg-query -W -f='${Version}' libucx0 2>/dev/null || true)
if [ -z "$pkgver" ]; then
    log "libucx0 is not installed (apt-get install libucx-dev ucx-utils)"
    exit 1
fi
upver=${pkgver%%-*}
upver=${upver#*:}
dest=$cache/ucx-$pkgver
tree=$dest/ucx-$upver

if [ -f "$tree/.ucx-gaudi-complete" ]; then
    echo "$tree"
    exit 0
fi

if ! command -v dpkg-source >/dev/null; then
    log "dpkg-source is missing (apt-get install dpkg-dev)"
    exit 1
fi

aptdir=$cache/apt
rm -rf "$aptdir" "$dest"
mkdir -p "$aptdir/sources" "$aptdir/lists/partial" "$dest"

# deb-src twins of the system's deb entries (deb822 and one-line formats)
for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    sed -e 's/^Types:.*/Types: deb-src/' "$f" \
        > "$aptdir/sources/$(basename "$f")"
done
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -n -e 's/^deb[[:space:]]/deb-src /p' "$f" \
        > "$aptdir/sources/$(basename "$f")"
done

aptopts=(-o "Dir::Etc::sourcelist=/dev/null"
         -o "Dir::Etc::sourceparts=$aptdir/sources"
         -o "Dir::State::Lists=$aptdir/lists"
         -o "APT::Get::List-Cleanup=0")

log "fetching source of ucx=$pkgver into $dest"
apt-get "${aptopts[@]}" -q update >&2
(cd "$dest" && apt-get "${aptopts[@]}" -q -y source "ucx=$pkgver" >&2)

if [ ! -f "$tree/src/uct/base/uct_md.h" ]; then
    log "unexpected source layout: $tree/src/uct/base/uct_md.h is missing"
    exit 1
fi
touch "$tree/.ucx-gaudi-complete"
echo "$tree"
