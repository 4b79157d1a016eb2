#!/bin/sh
# Run a command with HLSIM_FAULTS=$RMA_FAULTS in MPI rank 0 only (the
# initiator of test/mpi/gaudi_ucp_rma_test --faults); used by 90-mpi.sh
if [ "${OMPI_COMM_WORLD_RANK:-0}" = 0 ] && [ -n "${RMA_FAULTS:-}" ]; then
    HLSIM_FAULTS=$RMA_FAULTS
    export HLSIM_FAULTS
fi
exec "$@"
