# GPUDirect RDMA on an emulated NIC (test/suites/gdr.sh, docs/gdr.md):
# the NIC registers the module's dma-bufs and moves Gaudi memory NIC-to-HBM
# between two emulated nodes. Needs a UCX with dma-buf registration (UCT
# and UCP, UCX >= 1.14); on the installed UCX without it, the suite says
# so and the runs are those of test/suites/ucx-version.sh on the upstream
# releases.
. "$(dirname "$0")/lib.sh"
emulator_only "the NIC is emulated"
. "$(dirname "$0")/gdr.sh"

ver=$(ucx_info -v 2>/dev/null | sed -n -e 's/^# Library version: //p' \
      -e 's/^# Version //p' -e 's/^# UCT version=\([^ ]*\).*/\1/p')
if ! gdr_available; then
    echo "SKIP (UCX ${ver:-?}): no dma-buf registration" \
         "(UCT_MD_FLAG_REG_DMABUF, UCX >= 1.14): the emulated NIC is not" \
         "built here; GPUDirect runs on the upstream releases" \
         "(test/suites/ucx-version.sh)"
    finish
    exit
fi

run() { on_node "$@"; }
gdr_mpi_env=(-x GAUDI_UCX_LIBDIR)
gdr_wrapper=("$GAUDI_UCX_RUN")
gdr_suite
finish
