#!/bin/bash
#
# gaudi_cpy benchmark on the emulated node (docs/performance.md): zcopy
# bandwidth H2D/D2H/D2D at 64 KiB..16 MiB as a ratio to memcpy measured
# in the same run (and to the engine model's limit when it is on), CS and
# WAIT_CS ioctls per zcopy, put_short latency; with CALLGRIND=1 also host
# instructions per operation (valgrind --tool=callgrind), before (one CS
# per copy, UCX_GAUDI_COPY_MAX_BATCH=1) and after (batches).
# Usage: bench/dma/run.sh [--backend kernel|synapse|all] [total_mib [window]]
#        bench/dma/run.sh --model [total_mib [window]]: the engine model
#   alone (HLSIM_DMA_GBPS, default 4): one engine kept busy with raw CS
#   ioctls, no module; the rate as a ratio to the model's
#   (bench/dma/hlsim_model_bench.c)
#   --backend: the copy backend (UCX_GAUDI_COPY_BACKEND; synapse uses the
#   emulated libSynapse of the build, test/emu/synsim); all: every backend the
#   ASIC has, one after the other (Gaudi2: kernel, synapse; Gaudi3:
#   synapse). Default: the module's own choice (auto).
#   GAUDI_BENCH_HOST=pinned: the host buffers are mapped by the application
#   with synHostMap first, as frameworks pin host tensors (SynapseAI backend
#   only; default: pageable memory, staged by that backend). CALLGRIND measures
#   the module's own choice.
#   GAUDI_UCX_BUILD=<build dir> (default: the current directory)
#   HLSIM_DMA_GBPS=<GB/s per engine> to model engine bandwidth (default off)
#
set -eu
backends=auto
build=${GAUDI_UCX_BUILD:-$PWD}
if [ "${1:-}" = --model ]; then
    shift
    model=$build/bench/hlsim_model_bench
    [ -x "$model" ] || make -C "$build/bench" hlsim_model_bench >/dev/null
    root=$(mktemp -d /tmp/hlsim-bench.XXXXXX)
    trap 'rm -rf "$root"' EXIT
    echo "# $(nproc) CPUs, load average $(cut -d' ' -f1 /proc/loadavg)"
    # the model, then the same path at a rate no host reaches: what the
    # host itself delivers now (its MB/s), the bound of the first
    for gbps in "${HLSIM_DMA_GBPS:-4}" 1000000; do
        rm -rf "${root:?}"/*
        HLSIM_ROOT=$root HLSIM_NUM_DEVICES=1 HLSIM_ASIC=gaudi2 \
            HLSIM_DMA_GBPS=$gbps \
            LD_PRELOAD=$build/test/emu/hlsim/.libs/libhlsim.so "$model" "$@"
    done
    exit
fi
if [ "${1:-}" = --backend ]; then
    backends=$2
    shift 2
fi
if [ "$backends" = all ]; then
    case ${HLSIM_ASIC:-gaudi2} in
    gaudi3) backends=synapse ;;
    *)      backends="kernel synapse" ;;
    esac
fi
bench=$build/bench/gaudi_dma_bench
[ -x "$bench" ] || make -C "$build/bench" gaudi_dma_bench >/dev/null
root=$(mktemp -d /tmp/hlsim-bench.XXXXXX)
trap 'rm -rf "$root"' EXIT
export HLSIM_ROOT=$root HLSIM_NUM_DEVICES=1
# valgrind refuses the MAP_SHARED view of a real Gaudi2's 96 GiB HBM
# (EINVAL, as in test/suites/95-valgrind.sh): under callgrind the node
# has 16 GiB; the copies measured use a few MiB of it
if [ "${CALLGRIND:-0}" = 1 ]; then
    export HLSIM_HBM_SIZE=${HLSIM_HBM_SIZE:-16G}
fi
export UCX_GAUDI_SYNAPSE_LIB=$build/test/emu/synsim/.libs/libSynapse.so
preload="$build/test/emu/hlsim/.libs/libhlsim.so $build/src/uct/gaudi/.libs/libuct_gaudi.so"
# with the engine model on, also the fraction of its limit: the sum over
# the DMA engines a copy may use (two on Gaudi1 and Gaudi2, whatever
# number of their streams it uses; docs/driver-facts.md 5.7). The bench's
# "MB/s" are MiB/s (UCS_MBYTE), the model's GB/s are 1e9 B/s.
gbps=${HLSIM_DMA_GBPS:-0}
engines=2
for backend in $backends; do
    [ "${CALLGRIND_ONLY:-0}" != 1 ] || break
    echo "# $(nproc) CPUs, HLSIM_ASIC=${HLSIM_ASIC:-gaudi2}," \
         "HLSIM_DMA_GBPS=${HLSIM_DMA_GBPS:-0}, copy backend $backend"
    # HLSIM_ENGINE_CLOCK: the engines' busy time (two clock reads a job)
    HLSIM_ENGINE_CLOCK=1 UCX_GAUDI_COPY_BACKEND=$backend \
        LD_PRELOAD="$preload" "$bench" "$@" |
        awk -v g="$gbps" -v q="$engines" '
            g > 0 && /^dir / { print $0 "   model"; next }
            g > 0 && /^(H2D|D2H|D2D) / {
                printf "%s %7.2f\n", $0, $3 / (g * q * 1e9 / 1048576); next }
            g > 0 && /^# zcopy/ { print; printf "# model: %s GB/s x %d " \
                "engines = %.0f MiB/s\n", g, q, g * q * 1e9 / 1048576; next }
            { print }'
done

# Inclusive instructions of function $2 in callgrind output $1 (from /,
# where callgrind_annotate names every file by its absolute path)
incl() {
    (cd / && callgrind_annotate --inclusive=yes --threshold=100 --auto=no \
        "$1" 2>/dev/null) | awk -v f=":$2 " 'index($0, f) {
                                          gsub(",", "", $1)
                                          if ($1 + 0 > v) v = $1 + 0 }
                                      END { print v + 0 }'
}

# Inclusive instructions of function $2 when called from function $3
incl_from() {
    (cd / && callgrind_annotate --tree=caller --threshold=100 "$1" \
        2>/dev/null) | awk -v f=":$2 " -v c=":$3 (" '
            /^$/ { v = 0 }
            / < / && index($0, c) { gsub(",", "", $1); v += $1 }
            /\* / && index($0, f) { print v + 0; found = 1; exit }
            END { if (!found) print 0 }'
}

if [ "${CALLGRIND:-0}" = 1 ]; then
    # A fixed number of operations under callgrind, with MAX_BATCH=1 (one
    # CS per copy) and the default batching; the counts of each run (CS
    # and WAIT_CS ioctls, progress calls) come from the bench itself.
    # Host instructions per operation, without the emulated engines' work
    # (CB parsing and the copy, hlsim_dma_run_job, which WAIT_CS runs in
    # the caller's thread when the engine is idle) and without the polls
    # that found the copy still running (how many there are depends on
    # thread scheduling; "busy" shows their cost): one poll per CS.
    # "ioctls": the CS / WAIT_CS ioctls (the module's wrapper and the
    # emulator's handling; a system call into the driver on hardware),
    # "module": the rest.
    n=${CALLGRIND_OPS:-2048} size=${CALLGRIND_SIZE:-65536}
    win=${CALLGRIND_WINDOW:-16}
    echo "# callgrind: $n put_zcopy of $size B (window $win), $n put_short 8 B"
    printf "%-6s %-10s %8s %8s %8s %7s %7s %8s %7s\n" batch operation \
        "instr/op" "ioctls" "module" "CS/op" "WAIT/op" "prog/op" "busy"
    for batch in ${CALLGRIND_BATCH:-1 32}; do
        for op in zcopy short; do
            out=$root/cg.$op.$batch
            if [ $op = zcopy ]; then
                toggles=(--toggle-collect=uct_gaudi_copy_ep_put_zcopy
                         --toggle-collect=uct_gaudi_iface_progress)
            else
                toggles=(--toggle-collect=uct_gaudi_copy_ep_put_short)
            fi
            counts=$(UCX_GAUDI_COPY_MAX_BATCH=$batch LD_PRELOAD="$preload" \
                valgrind --tool=callgrind --callgrind-out-file="$out" \
                "${toggles[@]}" "$bench" count "$size" "$win" "$n" \
                2>/dev/null)
            job=$(incl "$out" hlsim_dma_run_job)
            sub=$(incl "$out" uct_gaudi_hl_cs_submit)
            wait=$(incl "$out" uct_gaudi_hl_cs_wait)
            if [ $op = zcopy ]; then
                post=$(incl "$out" uct_gaudi_copy_ep_put_zcopy)
                prog=$(incl "$out" uct_gaudi_iface_progress)
                # the submissions from progress (the doorbell)
                kick=$(( $(incl "$out" uct_gaudi_dma_cs_submit) -
                         $(incl_from "$out" uct_gaudi_dma_batch_kick \
                                     uct_gaudi_dma_batch_submit) ))
                done=$(incl "$out" uct_gaudi_dma_batch_done)
                line=$(echo "$counts" | awk '/ioctls per zcopy/ {
                                                 print $(NF - 1), $NF }')
                nprog=$(echo "$counts" |
                    awk '/progress calls/ { print $(NF - 2) }')
                name="put_zcopy"
            else
                post=$(incl "$out" uct_gaudi_copy_ep_put_short)
                prog=0 kick=0 done=0 nprog=0
                line=$(echo "$counts" | awk '/ioctls per put_short/ {
                                                 print $(NF - 1), $NF }')
                name="put_short"
            fi
            echo "$line" | awk -v b=$batch -v o=$name -v n=$n -v P=$post \
                -v G=$prog -v J=$job -v S=$sub -v W=$wait -v K=$kick \
                -v D=$done -v np=$nprog '{
                ncs = $1 * n; nw = $2 * n
                w   = (nw > 0) ? (W - J) / nw : 0       # one poll
                # a progress call without its poll, submission, delivery
                oh  = (np > 0) ? (G - W - K - D) / np : 0
                # ioctls: every CS, one completing poll a CS; module: the
                # post, the submissions from progress and the deliveries
                # without their ioctls, one progress call a CS
                io  = S + ncs * w
                mod = (np > 0) ? P + K + D - S + ncs * oh : P - S - W
                printf "%-6s %-10s %8.0f %8.0f %8.0f %7.2f %7.2f %8.1f %7.0f\n",
                       b, o, (io + mod) / n, io / n, mod / n, $1, $2,
                       np / n, w + oh }'
        done
    done
fi
