#!/bin/bash
#
# gaudi_cpy benchmark on the emulated node (docs/performance.md): zcopy
# bandwidth H2D/D2H/D2D at 64 KiB..16 MiB as a ratio to memcpy measured
# in the same run, put_short latency; with CALLGRIND=1 also host
# instructions per operation (valgrind --tool=callgrind).
# Usage: bench/dma/run.sh [total_mib [window]]
#   GAUDI_UCX_BUILD=<build dir> (default: the current directory)
#   HLSIM_DMA_GBPS=<GB/s per engine> to model engine bandwidth (default off)
#
set -eu
build=${GAUDI_UCX_BUILD:-$PWD}
bench=$build/test/gtest/dma/gaudi_dma_bench
[ -x "$bench" ] || make -C "$build/test/gtest/dma" gaudi_dma_bench >/dev/null
root=$(mktemp -d /tmp/hlsim-bench.XXXXXX)
trap 'rm -rf "$root"' EXIT
export HLSIM_ROOT=$root HLSIM_NUM_DEVICES=1
preload="$build/test/hlsim/.libs/libhlsim.so $build/src/uct/gaudi/.libs/libuct_gaudi.so"
echo "# $(nproc) CPUs, HLSIM_ASIC=${HLSIM_ASIC:-gaudi2}, HLSIM_DMA_GBPS=${HLSIM_DMA_GBPS:-0}"
LD_PRELOAD="$preload" "$bench" "$@"

# Inclusive instructions of function $2 in callgrind output $1
incl() {
    callgrind_annotate --inclusive=yes --threshold=100 --auto=no "$1" \
        2>/dev/null | awk -v f=":$2 " 'index($0, f) {
                                          gsub(",", "", $1)
                                          if ($1 + 0 > v) v = $1 + 0 }
                                      END { print v + 0 }'
}

if [ "${CALLGRIND:-0}" = 1 ]; then
    # A fixed number of operations. The emulator's engines copy on their
    # own threads (HLSIM_WAIT_RUNS=0), so progress counts the WAIT_CS
    # polls, not the emulated copy. "ioctls": the CS / WAIT_CS ioctls, the
    # module's wrapper and the emulator's in-process handling (a system
    # call into the driver on hardware); "module": the rest. How many polls
    # a copy takes depends on thread scheduling (valgrind runs one thread
    # at a time), hence instructions per progress call, and the ioctl
    # counts of a native run of the same operations.
    n=${CALLGRIND_OPS:-2048} size=${CALLGRIND_SIZE:-65536}
    win=${CALLGRIND_WINDOW:-16}
    echo "# native: $n put_zcopy of $size B, window $win; $n put_short 8 B"
    LD_PRELOAD="$preload" "$bench" count "$size" "$win" "$n" | grep ioctls
    echo "# callgrind: instructions per operation (HLSIM_WAIT_RUNS=0)"
    printf "%-24s %10s %10s %10s %8s\n" operation "instr/op" "ioctls" \
        "module" "calls"
    for op in zcopy short; do
        out=$root/cg.$op
        if [ $op = zcopy ]; then
            toggles=(--toggle-collect=uct_gaudi_copy_ep_put_zcopy
                     --toggle-collect=uct_gaudi_iface_progress)
        else
            toggles=(--toggle-collect=uct_gaudi_copy_ep_put_short)
        fi
        # the counts of this run come from the bench itself
        counts=$(HLSIM_WAIT_RUNS=0 LD_PRELOAD="$preload" valgrind \
            --tool=callgrind --callgrind-out-file="$out" "${toggles[@]}" \
            "$bench" count "$size" "$win" "$n" 2>/dev/null)
        ecs=$(incl "$out" uct_gaudi_hl_cs_submit)
        ewait=$(incl "$out" uct_gaudi_hl_cs_wait)
        if [ $op = zcopy ]; then
            post=$(incl "$out" uct_gaudi_copy_ep_put_zcopy)
            prog=$(incl "$out" uct_gaudi_iface_progress)
            nprog=$(echo "$counts" | awk '/progress calls/ { print $(NF - 2) }')
            nwait=$(echo "$counts" |
                awk '/ioctls per zcopy/ { print $NF * '"$n"' }')
            awk -v n=$n -v p=$post -v g=$prog -v np=$nprog -v ew=$ewait \
                -v ec=$ecs -v nw=$nwait 'BEGIN {
                f = "%-24s %10.0f %10.0f %10.0f %8.0f\n"
                printf f, "put_zcopy (post)", p / n, ec / n, (p - ec) / n, n
                printf f, "progress call", g / np, ew / np, (g - ew) / np, np
                printf "%-24s %10.0f (%.1f progress calls, %.1f WAIT_CS" \
                       " per zcopy)\n", "zcopy (post + progress)",
                       (p + g) / n, np / n, nw / n }'
        else
            post=$(incl "$out" uct_gaudi_copy_ep_put_short)
            awk -v n=$n -v p=$post -v e=$((ecs + ewait)) 'BEGIN {
                printf "%-24s %10.0f %10.0f %10.0f %8.0f\n", "put_short 8 B",
                       p / n, e / n, (p - e) / n, n }'
        fi
    done
fi
