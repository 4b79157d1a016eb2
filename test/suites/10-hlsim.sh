# The habanalabs emulator's own tests (test/emu/hlsim/test_hlsim.c), their
# nodes (one a test, on tmpfs where possible, as cb_raw_mmap needs) read
# for the suite's hlsim totals: the tests provoke MMU page faults and DMAs
# through stale pins on purpose, and poll copies in flight
. "$(dirname "$0")/lib.sh"
emulator_only "tests the emulator itself"
hlsim_provokes page_faults stale_pin_dmas
hlsim_covers_in_flight
run_test_program test_hlsim \
    "$GAUDI_UCX_BUILD/test/emu/hlsim/test_hlsim"
