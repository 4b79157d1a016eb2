# DMA engine and gaudi_cpy transport tests (test/gtest/dma, test/gtest/copy)
# on the emulated node, once per ASIC model and driver flavour: Gaudi2 (user
# CBs, PDMA queues), Gaudi1 (kernel CBs, DMA_0_x/DMA_1_x), Gaudi3 (refusal
# only) on Habana's driver, Gaudi2 and Gaudi1 on the upstream and Linux 6.1
# drivers; then gaudi_cpy on the SynapseAI copy backend (the emulated
# libSynapse, test/emu/synsim) on Gaudi3 and Gaudi2.
# Prints gtest's own output, then one gtest-style summary over all runs for
# contrib/test.sh.
. "$(dirname "$0")/lib.sh"
emulator_only "the DMA gtests inject DMA errors, CS timeouts and resets, and gaudi_cpy_test requires the emulator"
# copies complete on the emulated engines, never in a poll: the in-flight
# paths (full ring and window, late completions, flush and teardown with
# copies outstanding) must have run
hlsim_covers_in_flight

dma_test=$GAUDI_UCX_BUILD/test/gtest/gaudi_dma_test
cpy_test=$GAUDI_UCX_BUILD/test/gtest/gaudi_cpy_test
reuse_test=$GAUDI_UCX_BUILD/test/gtest/gaudi_reuse_test

# run_asic [FLAVOUR:]ASIC GTEST FILTER (flavours: lib.sh with_flavour)
run_asic() {
    local asic=${1#*:} flavour=habana gtest=$2 filter=$3 log rc what
    case $1 in *:*) flavour=${1%%:*};; esac
    log=$(mktemp); tmpdirs+=("$log")
    new_node
    what="${UCX_GAUDI_COPY_BACKEND:-auto}"
    what+="${UCX_GAUDI_DEVICE_MEM:+ mem $UCX_GAUDI_DEVICE_MEM}"
    what+="${HLSIM_DMA_GBPS:+ model $HLSIM_DMA_GBPS GB/s}"
    echo "=== $flavour HLSIM_ASIC=$asic $what $(basename "$gtest")"
    # a short grace before the hard reset's SIGKILL and a short CS
    # timeout for the engine a DMA error stops (fault_*_kills)
    HLSIM_ASIC=$asic HLSIM_NUM_DEVICES=1 HLSIM_KILL_DELAY_MS=200 \
        HLSIM_TIMEOUT_LOCKED=1 \
        with_flavour "$flavour" \
        env LD_PRELOAD="$HLSIM_LIB" "$gtest" --gtest_filter="$filter" \
        > "$log" 2>&1
    rc=$?
    grep -v 'WAIT_CS of seq [0-9]* failed: Device or resource busy' "$log"
    gtest_add "$flavour $asic $what $(basename "$gtest")" "$log" "$rc"
}

# run_syn ASIC GTEST FILTER: run_asic on the SynapseAI copy backend
run_syn() {
    UCX_GAUDI_COPY_BACKEND=synapse UCX_GAUDI_SYNAPSE_LIB=$synsim_lib \
        run_asic "$@"
}

run_asic gaudi2 "$dma_test" '*'
run_asic gaudi1 "$dma_test" '*'
run_asic gaudi3 "$dma_test" '*asic_support:*packets'
# the completion poll bound, with a copy the engine model keeps in flight
for asic in gaudi2 gaudi1; do
    HLSIM_DMA_GBPS=0.5 run_asic $asic "$dma_test" '*poll_interval*'
done
run_asic gaudi2 "$cpy_test" '*'
run_asic gaudi1 "$cpy_test" '*'
run_asic gaudi3 "$cpy_test" '*no_transport_gaudi3'
# the upstream drivers (accel and Linux 6.1) have Gaudi1 and Gaudi2 only
for flavour in upstream legacy; do
    for asic in gaudi2 gaudi1; do
        run_asic "$flavour:$asic" "$dma_test" '*'
        run_asic "$flavour:$asic" "$cpy_test" '*'
    done
done

# SynapseAI backend: every gaudi_cpy test that is not about the kernel
# path (CS faults, CS counts of batching, the Gaudi3 refusal; the SynapseAI
# batching test synapse_one_event_per_batch runs here instead, and
# cpy_app_test: the application's own host maps).
syn_filter='*:-*faults:*no_transport_gaudi3'
syn_filter+=':*batch_completes_in_order:*batch_fault_fails_its_copies'
run_syn gaudi3 "$cpy_test" "$syn_filter"
run_syn gaudi2 "$cpy_test" "$syn_filter"
run_syn gaudi1 "$cpy_test" "$syn_filter"   # device memory: synDeviceMalloc
# device errors on SynapseAI: its failure handler, in child processes
run_syn gaudi3 "$cpy_test" '*synapse_faults'
run_syn gaudi2 "$cpy_test" '*synapse_faults'
# and with device memory from synDeviceMalloc (UCX_GAUDI_DEVICE_MEM)
UCX_GAUDI_DEVICE_MEM=synapse run_syn gaudi3 "$cpy_test" "$syn_filter"

# freed and reused registered host buffers: no DMA through a stale pin
# (docs/hlsim.md, "Pinned pages"), kernel backend (Gaudi2, Gaudi1; the
# upstream and Linux 6.1 drivers on Gaudi2) and SynapseAI (Gaudi2, Gaudi3)
run_asic gaudi2 "$reuse_test" '*'
run_asic gaudi1 "$reuse_test" '*'
run_asic upstream:gaudi2 "$reuse_test" '*'
run_asic legacy:gaudi2 "$reuse_test" '*'
run_syn gaudi2 "$reuse_test" '*'
run_syn gaudi3 "$reuse_test" '*'

# Gaudi3: ucx_info -d says why the transport is not offered
out=$(mktemp); tmpdirs+=("$out")
new_node
HLSIM_ASIC=gaudi3 HLSIM_NUM_DEVICES=1 on_node ucx_info -d > "$out" 2>&1
echo "=== HLSIM_ASIC=gaudi3 ucx_info -d"
if grep -q 'Gaudi3 has no user-visible command-submission DMA queue' "$out" &&
   grep -q '^# Memory domain: gaudi_copy$' "$out" &&
   ! grep -q 'Transport: gaudi_cpy' "$out"; then
    echo "[       OK ] ucx_info.gaudi3_reason"; gt_pass=$((gt_pass + 1))
else
    echo "[  FAILED  ] ucx_info.gaudi3_reason"; cat "$out"
    gt_fail=$((gt_fail + 1)); gt_failed+=("ucx_info gaudi3 reason")
fi

# Gaudi3 with SynapseAI: gaudi_cpy is offered, the diag line says why
new_node
HLSIM_ASIC=gaudi3 HLSIM_NUM_DEVICES=1 UCX_LOG_LEVEL=diag \
    UCX_GAUDI_SYNAPSE_LIB=$synsim_lib on_node ucx_info -d > "$out" 2>&1
echo "=== HLSIM_ASIC=gaudi3 UCX_GAUDI_SYNAPSE_LIB=synsim ucx_info -d"
if grep -q 'copy backend synapse (auto: Gaudi3 has no kernel DMA queue)' \
        "$out" && grep -q 'Transport: gaudi_cpy' "$out"; then
    echo "[       OK ] ucx_info.gaudi3_synapse"; gt_pass=$((gt_pass + 1))
else
    echo "[  FAILED  ] ucx_info.gaudi3_synapse"; cat "$out"
    gt_fail=$((gt_fail + 1)); gt_failed+=("ucx_info gaudi3 synapse")
fi

gtest_summary "all ASIC models and driver flavours"
