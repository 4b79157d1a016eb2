#!/bin/bash
#
# gaudi_ipc put/get zcopy bandwidth against a same-run memcpy, two
# processes on a fresh emulated node (two Gaudi2 devices, habana flavour).
#   bench/ipc/run.sh <build dir> [size [iters [depth]]]
# Method and results: docs/ipc.md.
#
set -eu
build=${1:?usage: $0 <build dir> [size [iters [depth]]]}
shift
root=$(mktemp -d /tmp/hlsim-bench.XXXXXX)
trap 'rm -rf "$root"' EXIT
export HLSIM_ROOT=$root HLSIM_NUM_DEVICES=2
# the program links the module's test build: no ucx-gaudi-run
LD_PRELOAD=$build/lib/libhlsim.so \
    "$build/test/gtest/gaudi_ipc_test" --bench "${@:-$((16 << 20))}"
