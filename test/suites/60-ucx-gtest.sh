# UCX 1.13.1's own uct gtest suites, instantiated for the Gaudi components
# (test/gtest/ucx), on the emulated node, on the kernel and on the SynapseAI
# copy backend.
#
# Gaudi buffers come from UCX's mem_buffer, compiled with HAVE_ROCM over
# test/gtest/ucx/hip_gaudi.cc (Gaudi memory is the ROCM type on UCX 1.13).
#
# Excluded, with the reason:
# - test_md.mem_type_detect_mds: for non-CUDA memory types the 1.13.1 test
#   expects mem_query to echo the queried slice as base/length (ROCm's
#   behaviour), while gaudi_copy reports the whole allocation, as CUDA does
#   (docs/md.md; UCP feeds that range to its memtype cache).
# - gaudi_ipc/test_md.invalidate: registers malloc'd host memory on every
#   MD with UCT_MD_FLAG_INVALIDATE (1.13.1 skips only cuda_ipc by name);
#   gaudi_ipc registers Gaudi memory only. Its invalidation is tested on
#   Gaudi memory by gaudi_ipc_invalidate.stale_keys_fail (70-ipc.sh).
# Skipped by the suites themselves: p2p_mix ("skipping on non-host memory":
# gaudi_cpy does not access host memory as an MD), rkey_ptr/advise
# (capabilities not offered).
. "$(dirname "$0")/lib.sh"
need_free_devices 1

gtest=$GAUDI_UCX_BUILD/test/gtest/ucx/ucx_gtest
filter='gaudi_copy/test_md.*:gaudi_ipc/test_md.*:gaudi_cpy/*'
exclude='*mem_type_detect_mds*:gaudi_ipc/test_md.invalidate/*'

# Once on the default (Gaudi2, kernel backend), then on the SynapseAI copy
# backend (the emulated libSynapse): Gaudi3, where auto picks it, and
# Gaudi2 with UCX_GAUDI_COPY_BACKEND=synapse
export HLSIM_NUM_DEVICES=2
synsim_lib=$GAUDI_UCX_BUILD/test/synsim/.libs/libSynapse.so
for run in kernel:gaudi2 auto:gaudi3 synapse:gaudi2; do
    echo "=== UCX_GAUDI_COPY_BACKEND=${run%%:*} HLSIM_ASIC=${run#*:}"
    new_node
    log=$(mktemp); tmpdirs+=("$log")
    HLSIM_ASIC=${run#*:} UCX_GAUDI_COPY_BACKEND=${run%%:*} \
        UCX_GAUDI_SYNAPSE_LIB=$synsim_lib \
        on_node "$gtest" --gtest_filter="$filter-$exclude" 2>&1 | tee "$log"
    gtest_add "$run" "$log" "${PIPESTATUS[0]}"
done
gtest_summary "kernel and SynapseAI backends"
