# The op tables of both Gaudi components, as the UCX built against sees
# them: no op that UCX calls unconditionally is NULL (test/ops/
# gaudi_ops_test); and the dma-buf fd and offset gaudi_copy's mem_query
# gives network MDs for a slice of Gaudi memory (gaudi_dmabuf_test), also
# on the SynapseAI backend for the application's synDeviceMalloc tensors.
. "$(dirname "$0")/lib.sh"
out=$(mktemp); tmpdirs+=("$out")
total_p=0; total_f=0

# run one test program on the current node, adding its counts
run_prog() {
    on_node "$GAUDI_UCX_BUILD/test/ops/$1" > "$out" 2>&1
    rc=$?
    cat "$out"
    p=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$out")
    f=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$out")
    [ -n "$p" ] || { p=0; f=1; }
    [ $rc -eq 0 ] || [ "$f" -gt 0 ] || f=1
    total_p=$((total_p + p)); total_f=$((total_f + f))
}

new_node
export HLSIM_NUM_DEVICES=2
for prog in gaudi_ops_test gaudi_dmabuf_test; do
    run_prog $prog
done

for asic in gaudi3 gaudi2; do
    new_node
    echo "=== HLSIM_ASIC=$asic UCX_GAUDI_COPY_BACKEND=synapse"
    HLSIM_ASIC=$asic UCX_GAUDI_COPY_BACKEND=synapse \
        UCX_GAUDI_SYNAPSE_LIB=$synsim_lib \
        run_prog gaudi_dmabuf_test
done
# finish: page faults, hlsim totals, the summary line
npass=$total_p; nfail=$total_f
finish
