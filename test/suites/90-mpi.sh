# Open MPI (Debian's, pml ucx) moves Gaudi buffers between two ranks, each
# on its own emulated device; data is verified by the program
# (test/mpi/gaudi_mpi_test.c). Run with the default memtype cache and with
# UCX_MEMTYPE_CACHE=n (detection through mem_query), and on the upstream
# driver flavour, where gaudi_ipc is unreachable.
. "$(dirname "$0")/lib.sh"
need_free_devices 2

prog=$GAUDI_UCX_BUILD/test/mpi/gaudi_mpi_test
total_pass=0
total_fail=0

run_mpi() {
    local name=$1; shift
    local log p f
    log=$(mktemp); tmpdirs+=("$log")
    new_node
    echo "=== $name"
    # (NP ranks on NDEV devices; the node is made by mpirun's emulator)
    HLSIM_NUM_DEVICES=${NDEV:-2} \
    LD_PRELOAD="$(in_device_mode || echo "$HLSIM_LIB")" timeout -k 10 600 \
        mpirun --allow-run-as-root --oversubscribe -np "${NP:-2}" \
        --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
        --mca osc ^ucx --mca btl ^openib,uct \
        -x HLSIM_ROOT -x HLSIM_NUM_DEVICES -x LD_PRELOAD -x GAUDI_UCX_LIBDIR \
        -x UCX_TLS="${TLS:-gaudi_cpy,gaudi_ipc,sm,self}" -x UCX_WARN_UNUSED_ENV_VARS=n \
        "$@" "$GAUDI_UCX_RUN" ${PROG:-$prog} > "$log" 2>&1
    rc=$?
    cat "$log"
    p=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$log")
    f=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$log")
    [ -n "$p" ] || { p=0; f=1; }
    [ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || f=1
    # NOERR=1: a fallback that must be silent (no UCX error lines)
    if [ -n "${NOERR:-}" ] && grep -q 'UCX  ERROR' "$log"; then
        echo "FAIL $name: UCX error lines in a silent fallback"
        f=$((f + 1))
    fi
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
    last_log=$log
}

run_mpi "memtype cache on (default)"
run_mpi "memtype cache off" -x UCX_MEMTYPE_CACHE=n
# the driver flavours below are the emulator's (device mode: skipped)
if in_device_mode; then
    PROG="$GAUDI_UCX_BUILD/test/mpi/gaudi_ucp_rma_test gg,hg,gh,hh" \
        run_mpi "UCP RMA, UCX_PROTO_ENABLE=y" -x UCX_PROTO_ENABLE=y
    npass=$total_pass; nfail=$total_fail
    finish
    exit
fi

# the upstream driver cannot import dma-bufs (no op 99, facts 4.3):
# gaudi_ipc is unreachable and UCP stages through host memory
HLSIM_FLAVOUR=upstream run_mpi "upstream driver (no gaudi_ipc)" \
    -x HLSIM_FLAVOUR
# Linux 6.1 (misc driver, /dev/hlN): no DMA-BUF export of Gaudi2 memory
# (facts 4.1): gaudi_ipc registers nothing and UCP stages through host
# memory, silently
HLSIM_NODES=legacy NOERR=1 run_mpi "Linux 6.1 driver, Gaudi2 (no export)" \
    -x HLSIM_NODES

# All-to-all of Gaudi buffers on 8 ranks, each on its own device (of 8),
# from point-to-point only (test/mpi/gaudi_a2a_test.c; MPI_Alltoall itself
# copies on the CPU in Open MPI 4.1 and cannot take them: README, "Using
# with MPI"); with gaudi_ipc (it must carry data) and without (staged)
a2a=$GAUDI_UCX_BUILD/test/mpi/gaudi_a2a_test
for ipc in yes no; do
    tls=gaudi_cpy,gaudi_ipc,sm,self
    [ $ipc = no ] && tls=gaudi_cpy,sm,self
    NP=8 NDEV=8 TLS=$tls PROG="$a2a --ipc $ipc" NOERR=1 \
        run_mpi "all-to-all, 8 ranks on 8 devices, UCX_TLS=$tls" \
        -x UCX_LOG_LEVEL=diag
    devs=$(grep -Eo 'gaudi GAUDI_[0-9]+: copy backend' "$last_log" |
           sort -u | wc -l)
    if [ "$devs" -ne 8 ]; then
        echo "FAIL all-to-all, UCX_TLS=$tls: $devs devices taken, not 8"
        total_fail=$((total_fail + 1))
    fi
done

# UCP RMA (ucp_put_nbx/ucp_get_nbx) on Gaudi and host buffers, all four
# local/remote pairs, data verified (test/mpi/gaudi_ucp_rma_test.c). UCX
# 1.13's default protocols copy RMA they cannot offload with the CPU,
# which must not touch device memory: its new protocols are needed
# (README, "Using with ucx_perftest").
rma="$GAUDI_UCX_BUILD/test/mpi/gaudi_ucp_rma_test gg,hg,gh,hh"
PROG=$rma run_mpi "UCP RMA, UCX_PROTO_ENABLE=y" -x UCX_PROTO_ENABLE=y
PROG="${rma% *} hh" run_mpi "UCP RMA, host buffers, default protocols"
HLSIM_FLAVOUR=upstream PROG=$rma run_mpi \
    "UCP RMA, UCX_PROTO_ENABLE=y, upstream driver (no gaudi_ipc)" \
    -x UCX_PROTO_ENABLE=y -x HLSIM_FLAVOUR
# ucp_mem_map of Gaudi memory registers on every MD that claims it: on
# Linux 6.1 with Gaudi2 gaudi_ipc must not (its export would fail)
HLSIM_NODES=legacy NOERR=1 PROG=$rma run_mpi \
    "UCP RMA, UCX_PROTO_ENABLE=y, Linux 6.1 driver, Gaudi2 (no export)" \
    -x UCX_PROTO_ENABLE=y -x HLSIM_NODES

# Device faults during UCP RMA (UCX_PROTO_ENABLE=y, Gaudi to Gaudi): each
# emulator fault the process survives, injected into rank 0 at a put or a
# get, must reach the program as a failed request ("ERROR request"), never
# abort the process (UCX 1.13's get protocols assert on a synchronous
# failure) or deliver wrong data. The counts place the fault in the put
# phase (6, import: 3) or in the get phase (38) of "gg". A CS timeout is
# survivable with reset_on_lockup=0; a DMA error and a reset are hard
# resets, in which the driver kills the device's user (test/emu/hlsim).
# The SynapseAI copy backend (emulated libSynapse): Gaudi3 (auto) and
# Gaudi2 (explicit), the MPI test and UCP RMA
# (HLSIM_ASIC also for mpirun: the first process on a node records it)
for run in auto:gaudi3 synapse:gaudi2; do
    export HLSIM_ASIC=${run#*:}
    # (zero copy on gaudi_ipc, off by default on SynapseAI: docs/ipc.md,
    # "SynapseAI and imported buffers"; the emulated engines read imports)
    syn_env=(-x HLSIM_ASIC -x UCX_GAUDI_COPY_BACKEND="${run%%:*}"
             -x UCX_GAUDI_SYNAPSE_LIB="$synsim_lib"
             -x UCX_GAUDI_IPC_SYNAPSE_IMPORT=y)
    run_mpi "SynapseAI backend, $HLSIM_ASIC" "${syn_env[@]}" \
        -x UCX_LOG_LEVEL=diag
    # (the line of the take, not the expectation an open MD logs)
    if [ "$(grep -Ec 'gaudi GAUDI_[0-9]+: copy backend synapse' \
            "$last_log")" -ne 2 ]; then
        echo "FAIL SynapseAI backend, $HLSIM_ASIC: not both ranks on it"
        total_fail=$((total_fail + 1))
    fi
    PROG=$rma run_mpi \
        "UCP RMA, UCX_PROTO_ENABLE=y, SynapseAI backend, $HLSIM_ASIC" \
        -x UCX_PROTO_ENABLE=y "${syn_env[@]}"
    unset HLSIM_ASIC
done

# An application that uses SynapseAI itself (links libSynapse, allocates
# with synDeviceMalloc, copies on its own stream) and MPI at once: the
# module finds SynapseAI loaded and borrows its device (auto)
for asic in gaudi3 gaudi2; do
    HLSIM_ASIC=$asic PROG=$GAUDI_UCX_BUILD/test/mpi/gaudi_syn_mpi_test \
        run_mpi "SynapseAI application and MPI, $asic" -x HLSIM_ASIC \
        -x UCX_LOG_LEVEL=diag
    taken='gaudi GAUDI_[0-9]+: copy backend synapse \(auto: libSynapse.so is'
    if [ "$(grep -Ec "$taken loaded" "$last_log")" -ne 2 ]; then
        echo "FAIL SynapseAI application, $asic: not both ranks on its device"
        total_fail=$((total_fail + 1))
    fi
done

# (rank 0's first REG_DMABUF is the import probe at its first transfer,
# the second its first import)
faults_dir=$(cd "$(dirname "$0")" && pwd)
for fault in cs:6:EIO cs:38:EIO mem_reg_dmabuf:2:EINVAL \
             cs_timeout:6:ETIMEDOUT cs_timeout:38:ETIMEDOUT; do
    PROG="$faults_dir/rank0-faults.sh ${rma% *} gg --faults" \
        run_mpi "UCP RMA with fault $fault" \
        -x UCX_PROTO_ENABLE=y -x RMA_FAULTS="$fault" \
        -x HLSIM_RESET_ON_LOCKUP=0
    if ! grep -q '^ERROR request' "$last_log" ||
       grep -q "Assertion" "$last_log"; then
        echo "FAIL UCP RMA with fault $fault: no failed request, or an abort"
        total_fail=$((total_fail + 1))
    fi
done

# finish: page faults, hlsim totals, the summary line
npass=$total_pass; nfail=$total_fail
finish
