# A framework process (PyTorch with vLLM's NIXL connector) on Gaudi:
# UCX starts first (MPI_Init with pml ucx, NIXL's UCP context), then the
# framework dlopen()s SynapseAI (the emulated one, test/emu/synsim), acquires
# its device and allocates synDeviceMalloc tensors and synHostMalloc
# pinned memory; MPI tag messages and NIXL's RMA pattern (PEER endpoints,
# ucp_mem_map without flags, put/get with the memh, flush) move the
# tensors, every byte checked through the application's stream; after UCX
# is gone its pinned buffers and device are still the application's
# (test/mpi/gaudi_fw_test.c, test/suites/framework.sh). Two ranks on one
# node (gaudi_ipc) and on two emulated nodes (tcp); Gaudi2 with both copy
# backends, Gaudi3 (SynapseAI).
. "$(dirname "$0")/lib.sh"
emulator_only "the emulated libSynapse and two emulated nodes"
. "$(dirname "$0")/framework.sh"
[ -x "$fw_prog" ] || { fail "gaudi_fw_test" "not built (mpicc missing?)"
                       finish; exit; }

fw_mpi_env=(-x GAUDI_UCX_LIBDIR)
fw_wrapper=("$GAUDI_UCX_RUN")

fw_run "one node, Gaudi2, kernel backend" 1 gaudi2 kernel
# On the SynapseAI backend gaudi_ipc copies peers' imported buffers only
# with UCX_GAUDI_IPC_SYNAPSE_IMPORT=y (docs/ipc.md, "SynapseAI and imported
# buffers"); the emulated libSynapse answers either way
# (SYNSIM_IMPORTED_VA=read|fault|error, docs/synapse.md). By default the
# ranks stage through host memory whatever the engine would do, and the
# framework's stream still checks every byte afterwards.
fw_env=(-x UCX_GAUDI_IPC_SYNAPSE_IMPORT=y)
fw_run "one node, Gaudi2, SynapseAI backend, imports enabled" 1 gaudi2 synapse
fw_run "one node, Gaudi3, imports enabled" 1 gaudi3 auto:synapse
fw_env=()
fw_local='!gaudi_ipc'
fw_run "one node, Gaudi3, default (host-staged)" 1 gaudi3 auto:synapse
for answer in fault error; do
    fw_env=(-x SYNSIM_IMPORTED_VA=$answer)
    fw_run "one node, Gaudi3, default, engine $answer on imported VAs" \
        1 gaudi3 auto:synapse
done
fw_env=()
fw_run "one node, Gaudi2, SynapseAI backend, default (host-staged)" \
    1 gaudi2 synapse
unset fw_local
fw_run "one node, Gaudi2, kernel backend, NIXL progress thread" \
    1 gaudi2 kernel --progress-thread
# the other order: the framework holds its device before UCX starts
fw_env=(-x UCX_GAUDI_IPC_SYNAPSE_IMPORT=y)
fw_run "one node, Gaudi2, framework first" 1 gaudi2 auto:synapse \
    --framework-first
fw_env=()
fw_run "two nodes over tcp, Gaudi2, kernel backend" 2 gaudi2 kernel
fw_run "two nodes over tcp, Gaudi3" 2 gaudi3 auto:synapse

finish
