# gaudi_ipc two-process gtests (test/gtest/ipc), each run on a fresh
# emulated node with three devices (importer, exporter, a second
# exporter): Gaudi2 and Gaudi1 (kernel CBs), each in
# the Habana flavour (op 99: transfers), the upstream flavour (no op 99:
# unreachable, clean failures) and the Linux 6.1 driver (no op 99; no
# export at all on Gaudi2). Gaudi3 has no DMA queue for gaudi_ipc's copies.
# Prints every gtest run, then one summary in gtest's format for the
# harness.
. "$(dirname "$0")/lib.sh"
emulator_only "the IPC gtests use the emulator's counters and switch driver flavours"
# copies complete on the emulated engines only: polls met them in flight
hlsim_covers_in_flight

gtest=$UCX_GAUDI_BUILD/test/gtest/gaudi_ipc_test

for run in gaudi2:habana gaudi2:upstream gaudi1:habana gaudi1:upstream \
           gaudi2:legacy gaudi1:legacy; do
    asic=${run%%:*}
    flavour=${run#*:}
    new_node
    log=$(mktemp); tmpdirs+=("$log")
    echo "=== HLSIM_ASIC=$asic flavour $flavour"
    HLSIM_ASIC=$asic HLSIM_NUM_DEVICES=3 with_flavour "$flavour" \
        on_emulator "$gtest" 2>&1 | tee "$log"
    gtest_add "$asic $flavour" "$log" "${PIPESTATUS[0]}"
done

# The SynapseAI copy backend (emulated libSynapse): Gaudi3, where auto
# picks it and the driver imports dma-bufs (op 99), and Gaudi2 with
# UCX_GAUDI_COPY_BACKEND=synapse; both processes of every test use it.
# Device memory is SynapseAI's there (synDeviceMalloc, pieces of its pool,
# exported through the pool's mapping, gaudi_ipc.synapse_tensors for the
# application's own tensors); Gaudi1, whose SynapseAI memory is physical,
# exports by physical address. The importing side copies from op-99 imports
# only with UCX_GAUDI_IPC_SYNAPSE_IMPORT=y (off by default on SynapseAI,
# docs/ipc.md), which these runs set: the emulated engines read imports.
for run in auto:gaudi3 synapse:gaudi2 synapse:gaudi1 auto:gaudi3:synapse; do
    IFS=: read -r backend asic mem <<< "$run"
    new_node
    log=$(mktemp); tmpdirs+=("$log")
    echo "=== UCX_GAUDI_COPY_BACKEND=$backend HLSIM_ASIC=$asic" \
         "UCX_GAUDI_DEVICE_MEM=${mem:-auto}"
    HLSIM_ASIC=$asic HLSIM_NUM_DEVICES=3 \
        UCX_GAUDI_COPY_BACKEND=$backend UCX_GAUDI_DEVICE_MEM=${mem:-auto} \
        UCX_GAUDI_SYNAPSE_LIB=$synsim_lib UCX_GAUDI_IPC_SYNAPSE_IMPORT=y \
        on_emulator "$gtest" 2>&1 | tee "$log"
    gtest_add "$asic $backend ${mem:-auto}" "$log" "${PIPESTATUS[0]}"
done

gtest_summary "all models and flavours"
