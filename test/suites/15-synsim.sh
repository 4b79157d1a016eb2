# The emulated libSynapse's own tests (test/emu/synsim/test_synsim.c), on the
# habanalabs emulator: every call of the API subset, what it rejects,
# ordering per stream, events, and a process borrowing its device fd
. "$(dirname "$0")/lib.sh"
# page_fault and reject_unmapped copy to unmapped addresses on purpose
hlsim_provokes page_faults
run_test_program test_synsim \
    "$GAUDI_UCX_BUILD/test/emu/synsim/test_synsim"
