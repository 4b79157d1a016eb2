#!/bin/bash
#
# Build the Debian binary package ucx-gaudi for the installed UCX, out of
# tree (the source tree is not written to), and print the path of the
# .deb on stdout. Usage: contrib/deb.sh [WORKDIR]  (default <repo>/build/deb)
#
# The package holds the module and the ucx_perftest allocator in the
# directory the wrapper and UCX >= 1.22 load them from (<libdir>/ucx),
# ucx-gaudi-run, ucx-gaudi-check, the pkg-config file, the public header,
# the man pages and the docs. It depends on exactly the libucx0 it was
# built against: the module is compiled against that release's internals.
# DEBFULLNAME / DEBEMAIL set the Maintainer field.
#
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$top/build/deb}
jobs=${JOBS:-$(nproc)}
pkg=ucx-gaudi
debrev=1

ucx_src=$("$top/contrib/setup.sh")
if [ ! -x "$top/configure" ] || [ "$top/configure.ac" -nt "$top/configure" ]
then
    (cd "$top" && ./autogen.sh) >&2
fi

arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
ucx_deb=$(dpkg-query -W -f='${Version}' libucx0)
libdir=/usr/lib/$multiarch

mkdir -p "$work"
work=$(cd "$work" && pwd)
case "$work/" in
"$top"/build/*) ;;
"$top"/*) echo "deb.sh: $work is in the source tree" >&2; exit 1 ;;
esac
build=$work/build
root=$work/root
rm -rf "$root"
mkdir -p "$build" "$root"

# configure again when the prefix is not the package's (a reused dir)
cd "$build"
if [ ! -f Makefile ] || [ "$top/configure" -nt config.status ] ||
   ! grep -q "^prefix = /usr$" Makefile ||
   ! grep -q "^LDFLAGS = -Wl,--no-as-needed$" Makefile; then
    # every library a binary links is NEEDED (Debian's gcc links
    # --as-needed, which drops libc from the perftest allocator)
    "$top/configure" --with-ucx-src="$ucx_src" --prefix=/usr \
        --libdir="$libdir" --mandir=/usr/share/man \
        LDFLAGS="-Wl,--no-as-needed" >&2
fi
make -j"$jobs" >&2
make install DESTDIR="$root" >&2
version=$(sed -n 's/^PACKAGE_VERSION = //p' Makefile)

# what Debian keeps out of a package: libtool archives; symbols and notes
find "$root" -name '*.la' -delete
find "$root$libdir/ucx" -name '*.so.*' -type f -exec \
    strip --strip-unneeded --remove-section=.comment \
          --remove-section=.note {} +
strip --remove-section=.comment --remove-section=.note \
    "$root/usr/bin/ucx-gaudi-check"
chmod 0644 "$root$libdir"/ucx/*.so.*.*
# the allocator finds the module next to it, wherever the tree is
chrpath -r '$ORIGIN' "$root$libdir"/ucx/libucx_perftest_gaudi.so.0.0.0 >&2
gzip -9n "$root"/usr/share/man/man1/*.1

doc=$root/usr/share/doc/$pkg
mkdir -p "$doc/docs"
install -m 0644 "$top/README.md" "$doc/"
install -m 0644 "$top"/docs/*.md "$doc/docs/"
find "$doc" -name '*.md' -size +4k -exec gzip -9n {} +
cat > "$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: ucx-gaudi
Comment: The source files say "Copyright (C) ucx-gaudi contributors. See
 COPYING for license."; the source tree has no COPYING file yet.

Files: *
Copyright: 2026 ucx-gaudi contributors
License: unspecified
 No license has been published with the source yet.
EOF
chmod 0644 "$doc/copyright"
name=${DEBFULLNAME:-ucx-gaudi maintainers}
maint="$name <${DEBEMAIL:-ucx-gaudi@users.noreply.github.com}>"
cat > "$work/changelog" <<EOF
$pkg ($version-$debrev) unstable; urgency=medium

  * Built from the source tree against UCX $ucx_deb (libucx0).

 -- $maint  $(date -R)
EOF
gzip -9nc "$work/changelog" > "$doc/changelog.Debian.gz"
chmod 0644 "$doc/changelog.Debian.gz"
# built for a site's nodes, not uploaded to Debian: no ITP bug to close
mkdir -p "$root/usr/share/lintian/overrides"
echo "$pkg: initial-upload-closes-no-bugs" \
    > "$root/usr/share/lintian/overrides/$pkg"
chmod 0644 "$root/usr/share/lintian/overrides/$pkg"

# the shared libraries the binaries need, from their ELF headers
mkdir -p "$work/shlibs/debian"
printf 'Source: %s\n\nPackage: %s\nArchitecture: any\n' "$pkg" "$pkg" \
    > "$work/shlibs/debian/control"
shlibs=$(cd "$work/shlibs" &&
         dpkg-shlibdeps -O --ignore-missing-info \
             -l"$root$libdir/ucx" -e "$root/usr/bin/ucx-gaudi-check" \
             -e "$root$libdir"/ucx/libuct_gaudi.so.0 \
             -e "$root$libdir"/ucx/libucx_perftest_gaudi.so.0 |
         sed -n 's/^shlibs:Depends=//p')

mkdir -p "$root/DEBIAN"
cat > "$root/DEBIAN/control" <<EOF
Package: $pkg
Version: $version-$debrev
Architecture: $arch
Maintainer: $maint
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: libucx0 (= $ucx_deb), $shlibs
Recommends: ucx-utils
Section: libs
Priority: optional
Description: Intel Gaudi (HPU) transports for UCX
 An out-of-tree UCT module, libuct_gaudi.so, for the installed UCX, with
 two components: gaudi_copy (device memory, registration, DMA-BUF export,
 copies on the Gaudi DMA engines) and gaudi_ipc (device-to-device
 transfers between the processes of one node).
 .
 ucx-gaudi-run loads the module into UCX releases before 1.22;
 ucx-gaudi-check tells what the node's Gaudi devices give a job.
EOF

deb=$work/${pkg}_$version-${debrev}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >&2
echo "$deb"
