# The habanalabs emulator's own tests (test/emu/hlsim/test_hlsim.c)
. "$(dirname "$0")/lib.sh"
emulator_only "tests the emulator itself"
new_node
LD_PRELOAD="$HLSIM_LIB" "$GAUDI_UCX_BUILD/test/emu/hlsim/test_hlsim"
rc=$?
for d in "${tmpdirs[@]}"; do rm -rf "$d"; done
exit $rc
