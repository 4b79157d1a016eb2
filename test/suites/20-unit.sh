# Unit tests of the hl/ and dev/ layers (shim, driver identity, discovery,
# mapping table, selection, ownership, the context table under threads:
# test/gtest/{hl,dev}); each device
# test re-runs itself in a fresh process with its own emulated node
# (test/gtest/common/gaudi_unit.cc)
. "$(dirname "$0")/lib.sh"
emulator_only "each unit test runs on a fresh emulated node and uses its fault injection and device-status control"
log=$(mktemp); tmpdirs+=("$log")
"$GAUDI_UCX_BUILD/test/gtest/gaudi_unit" > "$log" 2>&1
rc=$?
cat "$log"
gtest_add gaudi_unit "$log" "$rc"

# the context table under threads, beside the emulated libSynapse
log=$(mktemp); tmpdirs+=("$log")
"$GAUDI_UCX_BUILD/test/gtest/gaudi_ctx_test" > "$log" 2>&1
rc=$?
cat "$log"
gtest_add gaudi_ctx_test "$log" "$rc"
gtest_summary "gaudi_unit and gaudi_ctx_test"
