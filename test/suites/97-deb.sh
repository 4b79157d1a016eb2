#!/bin/bash
#
# The Debian package (contrib/deb.sh): built out of tree without writing
# to the source tree, lintian-clean (no error, no warning), depending on
# exactly the installed libucx0, then installed into this machine with
# apt-get, used as a user would (ucx-gaudi-run ucx_info -d and a
# ucx_perftest run on an emulated node, ucx-gaudi-check, pkg-config and
# the header, the man pages), and removed with apt-get remove, after
# which none of its files and no dpkg record is left.
#
# Why the real system and not a throwaway root (dpkg --root, dpkg-deb -x):
# what is tested is what an administrator does, apt resolving Depends
# against the installed UCX and the wrapper finding the module where the
# package put it, which a relocated tree does not show. The suite leaves
# no trace: it refuses to run when a ucx-gaudi package is installed
# already, and removes its own on every exit (trap). It needs root (or
# sudo without a password), and is skipped without.
#
. "$(dirname "$0")/lib.sh"
emulator_only "installs a package into the system"

top=$(cd "$(dirname "$0")/../.." && pwd)
pkg=ucx-gaudi
sudo=
if [ "$(id -u)" -ne 0 ]; then
    if sudo -n true 2> /dev/null; then sudo="sudo -n"; else
        echo "SKIP: needs root or sudo to install a package (not counted)"
        exit 0
    fi
fi

installed() {
    dpkg-query -W -f='${db:Status-Status}' "$pkg" 2> /dev/null |
        grep -qv '^not-installed$'
}

if installed; then
    fail "no $pkg installed before" "$(dpkg-query -W $pkg); not touching it"
    finish
fi

work=$GAUDI_UCX_BUILD/deb
log=$(mktemp /tmp/gaudi-deb.XXXXXX)
tmpdirs+=("$log")

# 1. build, out of tree: the source tree is left as it was
src_state() { git -C "$top" status --porcelain --ignored 2> /dev/null |
              grep -v '^!! build' ; }
before=$(src_state)
if deb=$(nice "$top/contrib/deb.sh" "$work" 2> "$log") && [ -f "$deb" ]; then
    pass "contrib/deb.sh built $(basename "$deb")"
else
    fail "contrib/deb.sh" "no package"; tail -20 "$log"; finish
fi
if [ "$(src_state)" = "$before" ]; then
    pass "source tree unchanged by the package build"
else
    fail "source tree unchanged" "$(diff <(echo "$before") \
                                         <(src_state) | head -5)"
fi

# 2. lintian: no error, no warning
lintian "$deb" > "$log" 2>&1
if [ $? -eq 0 ] && ! grep -Eq '^[EW]: ' "$log"; then
    pass "lintian: no error or warning"
else
    fail "lintian" "$(grep -E '^[EW]: ' "$log" | head -5)"
fi

# 3. control: exactly the UCX built against
ucx_deb=$(dpkg-query -W -f='${Version}' libucx0)
if dpkg-deb -f "$deb" Depends | grep -q "libucx0 (= $ucx_deb)"; then
    pass "Depends: libucx0 (= $ucx_deb)"
else
    fail "Depends on the exact UCX" "$(dpkg-deb -f "$deb" Depends)"
fi

multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
moddir=/usr/lib/$multiarch/ucx
files=(/usr/bin/ucx-gaudi-run /usr/bin/ucx-gaudi-check
       "$moddir/libuct_gaudi.so" "$moddir/libuct_gaudi.so.0"
       "$moddir/libucx_perftest_gaudi.so.0"
       "/usr/lib/$multiarch/pkgconfig/ucx-gaudi.pc"
       /usr/include/uct/gaudi/api/uct_gaudi.h
       /usr/share/man/man1/ucx-gaudi-run.1.gz
       /usr/share/man/man1/ucx-gaudi-check.1.gz
       /usr/share/doc/ucx-gaudi/copyright)
contents=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\.||; s|/$||')
missing=
for f in "${files[@]}"; do
    grep -qx -- "$f" <<< "$contents" || missing="$missing $f"
done
if [ -z "$missing" ]; then pass "package holds module, tools, .pc, header, \
man pages, docs"; else fail "package contents" "missing:$missing"; fi

# what exists before, so that removal can be checked path by path
existed=()
while read -r f; do
    [ -n "$f" ] && [ -e "$f" ] && existed+=("$f")
done <<< "$contents"

# 4. install, with apt resolving Depends; removed on every exit
cleanup() {
    installed && $sudo env DEBIAN_FRONTEND=noninteractive \
        apt-get remove -y -q "$pkg" > /dev/null 2>&1
}
trap cleanup EXIT
if $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
       "$deb" > "$log" 2>&1 && installed; then
    pass "apt-get install ./$(basename "$deb")"
else
    fail "apt-get install" "$(tail -5 "$log")"; finish
fi

# 5. used as installed: no build tree anywhere in the environment
inst() { env -u GAUDI_UCX_LIBDIR PATH=/usr/bin:/bin "$@"; }
new_node
out=$(mktemp /tmp/gaudi-deb.XXXXXX)
tmpdirs+=("$out")
inst LD_PRELOAD="$HLSIM_LIB" timeout -k 5 120 \
    /usr/bin/ucx-gaudi-run ucx_info -d > "$out" 2>&1
for c in "Memory domain: gaudi_copy" "Memory domain: gaudi_ipc" \
         "Transport: gaudi_cpy" "Transport: gaudi_ipc"; do
    expect_match "installed ucx-gaudi-run ucx_info -d: $c" "$out" "$c"
done
expect_no_match "installed ucx_info -d: no error" "$out" "ERROR|WARN"

inst LD_PRELOAD="$HLSIM_LIB" UCX_GAUDI_DEVICE=0 timeout -k 5 120 \
    /usr/bin/ucx-gaudi-run ucx_perftest -l -t put_bw -D zcopy -d gaudi_0 \
    -x gaudi_cpy -m rocm -s 1048576 -n 20 > "$out" 2>&1
perftest_ok "installed ucx_perftest put_bw on gaudi_cpy (installed \
allocator)" "$out"

inst LD_PRELOAD="$HLSIM_LIB" timeout -k 5 60 /usr/bin/ucx-gaudi-check \
    > "$out" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q '^usable: yes' "$out" &&
   grep -Eq "^module +$moddir/libuct_gaudi.so$" "$out"; then
    pass "installed ucx-gaudi-check: the installed module, usable, exit 0"
else
    fail "installed ucx-gaudi-check" "exit $rc: $(tail -3 "$out")"
fi

module=$(pkg-config --variable=module ucx-gaudi)
if [ "$module" = "$moddir/libuct_gaudi.so" ] && [ -f "$module" ]; then
    pass "pkg-config module: $module"
else
    fail "pkg-config module" "'$module'"
fi
cat > "$out.c" <<'EOF'
#include <uct/gaudi/api/uct_gaudi.h>
int main(void)
{
    volatile void *p = (void*)&uct_gaudi_mem_free;
    return p == NULL;
}
EOF
tmpdirs+=("$out.c" "$out.bin")
if cc -o "$out.bin" "$out.c" $(pkg-config --cflags --libs ucx-gaudi) \
       > "$log" 2>&1; then
    pass "a program builds with pkg-config ucx-gaudi"
else
    fail "build with pkg-config ucx-gaudi" "$(head -5 "$log")"
fi
if gzip -t /usr/share/man/man1/ucx-gaudi-check.1.gz &&
   zcat /usr/share/man/man1/ucx-gaudi-check.1.gz | grep -q '^\.SH EXIT'; then
    pass "man page ucx-gaudi-check(1) installed"
else
    fail "man page" "unreadable"
fi

# 6. apt-get remove: no file, no directory of its own, no dpkg record
$sudo env DEBIAN_FRONTEND=noninteractive apt-get remove -y -q "$pkg" \
    > "$log" 2>&1
if installed; then
    fail "apt-get remove" "$(dpkg-query -W -f='${db:Status-Abbrev}' $pkg)"
else
    pass "apt-get remove: no dpkg record left"
fi
left=
while read -r f; do
    [ -n "$f" ] || continue
    [ -e "$f" ] || [ -L "$f" ] || continue
    printf '%s\n' "${existed[@]}" | grep -qx -- "$f" || left="$left $f"
done <<< "$contents"
if [ -z "$left" ]; then pass "apt-get remove: nothing left behind"; else
    fail "apt-get remove leaves nothing" "left:$left"
fi

finish
