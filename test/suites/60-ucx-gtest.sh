# UCX 1.13.1's own uct gtest suites, instantiated for the Gaudi components
# (test/ucx_gtest), on the emulated node.
#
# Excluded, with the reason:
# - test_md.mem_type_detect_mds: UCX's fixture allocates the detected
#   memory type with mem_buffer, which is compiled for CUDA/HIP only
#   (test/gtest/common/mem_buffer.cc) and aborts for the ROCM slot.
. "$(dirname "$0")/lib.sh"

gtest=$GAUDI_UCX_BUILD/test/ucx_gtest/ucx_gtest
filter='gaudi_copy/test_md.*:gaudi_ipc/test_md.*:gaudi_cpy/*'
exclude='*mem_type_detect_mds*'

new_node
export HLSIM_NUM_DEVICES=2
on_node "$gtest" --gtest_filter="$filter-$exclude"
rc=$?
finish_dirs() { local d; for d in "${tmpdirs[@]}"; do rm -rf "$d"; done; }
finish_dirs
exit $rc
