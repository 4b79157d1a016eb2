#!/bin/bash
#
# ucx-gaudi-check (src/tools/check): on every emulated driver flavour x
# ASIC, without and with SynapseAI, its answers (driver flavour, dma-buf
# export and op 99 import, copy transport, the path of MPI on one node,
# SynapseAI, exit status) are the ones the driver facts give, and --probe,
# which asks the driver itself, agrees with them. A device another process
# holds is reported with its pid and never opened, also by --probe; a BAR
# smaller than the DRAM is reported with its fix, so are a device that
# needs a reset and a module missing where the wrapper looks; a node
# without Gaudi (no device, no emulator) says so with exit status 2; and
# it runs without root.
#
. "$(dirname "$0")/lib.sh"
emulator_only "emulated flavours, ASICs and holders"

check=$GAUDI_UCX_BUILD/src/tools/check/ucx-gaudi-check
out=$(mktemp /tmp/gaudi-check.XXXXXX)
tmpdirs+=("$out")

# run_check [ENV=VALUE...] [-- ARGS]: the check on the current node; the
# output in $out, the exit status in $rc
run_check() {
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    [ "${1:-}" = -- ] && shift
    env "${envs[@]}" LD_PRELOAD="$HLSIM_LIB" timeout -k 5 60 \
        "$check" "$@" > "$out" 2>&1
    rc=$?
}

# expect_line NAME REGEX: the output of the last run has a matching line
expect_line() {
    if grep -Eq -- "$2" "$out"; then pass "$1"; else
        fail "$1" "no line matches /$2/"; sed 's/^/      /' "$out" | head -40
    fi
}

expect_rc() {
    if [ "$rc" -eq "$2" ]; then pass "$1: exit $rc"; else
        fail "$1" "exit $rc, expected $2"; sed 's/^/      /' "$out" | head -40
    fi
}

# flavour x ASIC x SynapseAI: the answers the driver facts give
for flavour in habana upstream legacy; do
    for asic in gaudi1 gaudi2 gaudi3; do
        for syn in no yes; do
            t="$flavour $asic synapse=$syn"
            lib=/nonexistent/libSynapse.so
            [ $syn = yes ] && lib=$synsim_lib
            new_node
            export HLSIM_ASIC=$asic HLSIM_NUM_DEVICES=2
            with_flavour $flavour run_check UCX_GAUDI_SYNAPSE_LIB="$lib"

            # facts 4.1: 6.1/6.2 exports only without DRAM VM (Gaudi1);
            # facts 4.3: op 99 only in Habana's driver
            export_ok=yes import_ok=no
            [ $flavour = legacy ] && [ $asic != gaudi1 ] && export_ok=no
            [ $flavour = habana ] && import_ok=yes
            copy_ok=yes
            [ $asic = gaudi3 ] && [ $syn = no ] && copy_ok=no
            case $flavour in
            habana)   drv="Habana's out-of-tree driver" ;;
            upstream) drv="upstream in-kernel accel driver" ;;
            legacy)   drv="upstream Linux 6.1/6.2 misc driver" ;;
            esac

            expect_line "$t: driver" "^  driver +$drv"
            expect_line "$t: dma-buf" \
                "^  dma-buf +export $export_ok, import \(op 99\) $import_ok"
            if [ $syn = yes ]; then
                expect_line "$t: SynapseAI" "^SynapseAI +found: .*libSynapse"
            else
                expect_line "$t: SynapseAI" "^SynapseAI +not found"
            fi
            if [ $copy_ok = no ]; then
                expect_line "$t: no copy" "^  Gaudi memory +NOT copyable"
                expect_line "$t: fix" "^    fix +install SynapseAI"
                expect_line "$t: unusable" "^usable: no"
                expect_rc "$t" 1
                continue
            fi
            expect_line "$t: copy" "^  Gaudi memory +gaudi_cpy"
            if [ $export_ok$import_ok = yesyes ]; then
                expect_line "$t: one node" "^  MPI, 1 node +gaudi_ipc"
            else
                expect_line "$t: one node" "^  MPI, 1 node +staged"
                expect_line "$t: why" "^  missing +(gaudi_ipc|dma-buf export)"
            fi
            expect_line "$t: two nodes" "^  MPI, 2 nodes +staged through host"
            expect_line "$t: usable" "^usable: yes \(2 of 2 devices free"
            expect_rc "$t" 0
            if grep -Eq 'ERROR|WARN' "$out"; then
                fail "$t: quiet" "$(grep -E 'ERROR|WARN' "$out" | head -3)"
            fi

            # the driver itself agrees (one device probed is enough)
            if [ $syn = no ]; then
                new_node
                with_flavour $flavour run_check HLSIM_NUM_DEVICES=1 \
                    UCX_GAUDI_SYNAPSE_LIB="$lib" -- --probe
                expect_line "$t: probe" "^  dma-buf +export $export_ok, \
import \(op 99\) $import_ok \(probed\)"
                case $flavour in
                habana)   id="Habana's out-of-tree driver" ;;
                upstream) id="in-kernel" ;;
                legacy)   id="without DRM identity, legacy ioctl codes" ;;
                esac
                expect_line "$t: identity" "^  identity +.*$id"
            fi
        done
    done
done
unset HLSIM_ASIC HLSIM_NUM_DEVICES

# Habana's driver built without DRM accel (HLSIM_DRM=0): still Habana's
new_node
run_check HLSIM_DRM=0 -- --probe
expect_line "habana without DRM: driver" "^  driver +Habana's out-of-tree"
expect_line "habana without DRM: op 99" "import \(op 99\) yes \(probed\)"

# A held device: its holder named, never opened (no probe), the other free
new_node
LD_PRELOAD="$HLSIM_LIB" bash -c 'exec 3<>/dev/accel/accel0 0</dev/null \
    1>/dev/null 2>&1; exec sleep 60' &
holder=$!
for _ in $(seq 50); do
    [ -e "/proc/$holder/fd/3" ] && break
    sleep 0.1
done
run_check -- --probe
expect_line "held: pid" "^  compute node +held by pid $holder \(sleep\)"
expect_line "held: other free" "^  compute node +free \(accel1\)"
if [ "$(grep -c '^  identity' "$out")" = 1 ]; then
    pass "held: only the free device probed"
else
    fail "held: only the free device probed" "$(grep -c identity "$out")"
fi
expect_line "held: one free" "^usable: yes \(1 of 2 devices free"
expect_rc "held" 0

# without root, the holder (root's) is seen through OPEN_STATS alone
if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null; then
    chmod -R a+rwX "$HLSIM_ROOT"
    setpriv --reuid=nobody --regid=nogroup --clear-groups \
        env HLSIM_ROOT="$HLSIM_ROOT" LD_PRELOAD="$HLSIM_LIB" "$check" \
        > "$out" 2>&1
    rc=$?
    expect_line "no root: holder of another user" \
        "^  compute node +held by a process of another user"
    expect_rc "no root" 0
else
    echo "SKIP no root: not root or no setpriv (not counted)"
fi

# both held: not usable now
LD_PRELOAD="$HLSIM_LIB" bash -c 'exec 3<>/dev/accel/accel1 0</dev/null \
    1>/dev/null 2>&1; exec sleep 60' &
holder2=$!
for _ in $(seq 50); do
    [ -e "/proc/$holder2/fd/3" ] && break
    sleep 0.1
done
run_check
expect_line "all held" "^usable: no \(0 of 2 devices free"
expect_rc "all held" 1
kill "$holder" "$holder2"
wait "$holder" "$holder2" 2> /dev/null

# the DRAM BAR smaller than the DRAM (facts 4.1, 9.6): said, with the fix
new_node
run_check HLSIM_DRAM_BAR_SIZE=8G
expect_line "small BAR" "PCI BAR 8192 MiB: covers part of it"
expect_line "small BAR: fix" "^    fix +BIOS: .*Resizable BAR"

# a device that needs a reset (set on the emulated node): not usable, and
# the fix is said
new_node
LD_PRELOAD="$HLSIM_LIB" HLSIM_NUM_DEVICES=1 python3 -c '
import ctypes
assert ctypes.CDLL(None).hlsim_set_device_status(0, 3) == 0'
run_check HLSIM_NUM_DEVICES=1
expect_line "needs reset" "^GAUDI_0 .* needs a reset$"
expect_line "needs reset: fix" "^    fix +reset the device"
expect_rc "needs reset" 1

# the module where the wrapper looks (lib.sh: the build tree), and not
new_node
run_check
expect_line "module found" "^module +$GAUDI_UCX_LIBDIR/libuct_gaudi.so$"
run_check GAUDI_UCX_LIBDIR=/nonexistent
expect_line "module missing" "^module +/nonexistent/libuct_gaudi.so NOT FOUND"
expect_line "module missing: fix" "^    fix +install the ucx-gaudi package"
expect_rc "module missing" 1

# no Gaudi: an emulated node with none, and no emulator at all
new_node
run_check HLSIM_NUM_DEVICES=0
expect_line "no device" "^Gaudi +none on this node"
expect_rc "no device" 2
timeout -k 5 60 "$check" > "$out" 2>&1
rc=$?
expect_line "no emulator" "^Gaudi +none on this node"
expect_line "no emulator: driver" "^  missing +driver: the habanalabs"
expect_rc "no emulator" 2

"$check" --bogus > "$out" 2>&1
rc=$?
expect_rc "bad option" 3

finish
