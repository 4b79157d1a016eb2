# The emulated libSynapse's own tests (test/emu/synsim/test_synsim.c), on the
# habanalabs emulator: every call of the API subset, what it rejects,
# ordering per stream, events, and a process borrowing its device fd
. "$(dirname "$0")/lib.sh"
new_node
LD_PRELOAD="$HLSIM_LIB" "$GAUDI_UCX_BUILD/test/emu/synsim/test_synsim"
rc=$?
for d in "${tmpdirs[@]}"; do rm -rf "$d"; done
exit $rc
