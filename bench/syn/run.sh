#!/bin/bash
#
# The module's synchronous copies beside a framework's traffic on the
# SynapseAI backend (emulated libSynapse, which shares its queue sets
# between streams as SynapseAI does; docs/synapse.md, "Streams and
# queues"): for 1, 2 and 3 framework streams, the median and 90th
# percentile latency of the module's host -> device copies with the
# framework idle and busy, in one run each. Reports only, asserts nothing.
# Usage: bench/syn/run.sh [size [iterations [busy_bytes]]]
#   GAUDI_UCX_BUILD=<build dir> (default: the current directory)
#   HLSIM_ASIC (default gaudi3), HLSIM_DMA_GBPS (default 10: the copy time
#   comes from the engine model, not from the host's memcpy)
#
set -eu
build=${GAUDI_UCX_BUILD:-$PWD}
bench=$build/bench/gaudi_syn_queue_bench
[ -x "$bench" ] || make -C "$build/bench" gaudi_syn_queue_bench >/dev/null
root=$(mktemp -d /tmp/hlsim-bench.XXXXXX)
trap 'rm -rf "$root"' EXIT
synsim=$build/test/emu/synsim/.libs/libSynapse.so
for fw in 1 2 3; do
    echo "=== $fw framework stream(s)"
    HLSIM_ROOT=$root HLSIM_NUM_DEVICES=1 HLSIM_ASIC=${HLSIM_ASIC:-gaudi3} \
        HLSIM_DMA_GBPS=${HLSIM_DMA_GBPS:-10} UCX_MEM_MMAP_HOOK_MODE=bistro \
        UCX_GAUDI_SYNAPSE_LIB=$synsim \
        LD_PRELOAD="$build/test/emu/hlsim/.libs/libhlsim.so $build/src/uct/gaudi/.libs/libuct_gaudi.so" \
        "$bench" "$fw" "${1:-4096}" "${2:-200}" "${3:-16777216}"
done
