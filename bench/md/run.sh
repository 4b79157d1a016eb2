#!/bin/bash
#
# gaudi_copy registration benchmark on the emulated node: mem_reg+mem_dereg
# cost with an rcache hit, a miss and the rcache off, in one run, and the
# hit/miss ratio (goal <= 5%). Reports only, asserts nothing.
# Usage: bench/md/run.sh [iterations [buffer_bytes]]
#   GAUDI_UCX_BUILD=<build dir> (default: the current directory)
#
set -eu
build=${GAUDI_UCX_BUILD:-$PWD}
bench=$build/bench/gaudi_md_bench
[ -x "$bench" ] || make -C "$build/bench" gaudi_md_bench >/dev/null
root=$(mktemp -d /tmp/hlsim-bench.XXXXXX)
trap 'rm -rf "$root"' EXIT
# the module is preloaded (the linker drops an unreferenced DT_NEEDED);
# bistro: UCM's reloc mode deadlocks installing its malloc hooks (docs/md.md)
HLSIM_ROOT=$root HLSIM_NUM_DEVICES=1 UCX_MEM_MMAP_HOOK_MODE=bistro \
    LD_PRELOAD="$build/test/emu/hlsim/.libs/libhlsim.so $build/src/uct/gaudi/.libs/libuct_gaudi.so" \
    "$bench" "$@"
