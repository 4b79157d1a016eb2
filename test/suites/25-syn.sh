# The SynapseAI loader and wrappers of the base layer (gaudi_syn.c) against
# the emulated libSynapse (test/emu/synsim); each device test re-runs itself in
# a fresh process with its own emulated node
# (test/gtest/syn/gaudi_syn_test.cc)
. "$(dirname "$0")/lib.sh"
log=$(mktemp); tmpdirs+=("$log")
SYNSIM_LIB="$synsim_lib" \
    "$GAUDI_UCX_BUILD/test/gtest/gaudi_syn_test" > "$log" 2>&1
rc=$?
cat "$log"
gtest_add gaudi_syn_test "$log" "$rc"
gtest_summary "gaudi_syn_test"
