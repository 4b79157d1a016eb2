# UCX 1.13.1's own uct gtest suites: every suite UCX instantiates for its
# GPU transports or for every MD, instantiated for the Gaudi components
# (test/gtest/ucx), on the emulated node, on the kernel and on the
# SynapseAI copy backend. Gaudi buffers come from UCX's mem_buffer,
# compiled with HAVE_ROCM over test/gtest/ucx/hip_gaudi.cc (Gaudi memory
# is the ROCM type on UCX 1.13). The cases excluded, each with its reason,
# are listed by test/suites/ucx-gtest.sh and printed; cases a transport
# lacks the capability for are skipped by the suites themselves (e.g.
# atomics, active messages).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ucx-gtest.sh"
need_free_devices 1

# Once on the default (Gaudi2, kernel backend), then on the SynapseAI copy
# backend (the emulated libSynapse): Gaudi3, where auto picks it, and
# Gaudi2 with UCX_GAUDI_COPY_BACKEND=synapse
export HLSIM_NUM_DEVICES=2
export UCX_GAUDI_SYNAPSE_LIB=$synsim_lib
# gaudi_ipc copies imports on SynapseAI only when told (docs/ipc.md,
# "SynapseAI and imported buffers"); the emulated engines read them
export UCX_GAUDI_IPC_SYNAPSE_IMPORT=y
for run in kernel:gaudi2 auto:gaudi3 synapse:gaudi2; do
    echo "=== UCX_GAUDI_COPY_BACKEND=${run%%:*} HLSIM_ASIC=${run#*:}"
    new_node
    log=$(mktemp); tmpdirs+=("$log")
    HLSIM_ASIC=${run#*:} UCX_GAUDI_COPY_BACKEND=${run%%:*} \
        ucx_gtest_run "UCX 1.13.1 uct suites on Gaudi buffers ($run)" \
        "$log" on_node
    rc=$?
    cat "$log"
    gtest_add "$run" "$log" "$rc"
done
gtest_summary "kernel and SynapseAI backends"
