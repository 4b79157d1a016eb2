# Stock ucx_info sees the Gaudi components on the emulated node
. "$(dirname "$0")/lib.sh"
out=$(mktemp); tmpdirs+=("$out")

# two Gaudi2 devices (the default node)
new_node
HLSIM_NUM_DEVICES=2 on_node ucx_info -d > "$out" 2>&1
rc=$?
[ $rc -eq 0 ] && pass "ucx_info -d exits 0" || fail "ucx_info -d exits 0" "exit $rc"
expect_match "gaudi_copy MD listed" "$out" '^# Memory domain: gaudi_copy$'
expect_match "gaudi_ipc MD listed" "$out" '^# Memory domain: gaudi_ipc$'
expect_match "gaudi_cpy transport listed" "$out" '^#      Transport: gaudi_cpy$'
expect_match "gaudi_ipc transport listed" "$out" '^#      Transport: gaudi_ipc$'
expect_match "accelerator device type" "$out" '^#           Type: accelerator$'
expect_match "system device GAUDI_n" "$out" '^#  System device: GAUDI_[0-9]+'
expect_no_match "no errors logged" "$out" 'UCX  (ERROR|WARN)'

# the driver's DRM identity at diag level, per flavour (libdrm)
new_node
HLSIM_NUM_DEVICES=1 UCX_LOG_LEVEL=diag on_node ucx_info -d > "$out" 2>&1
expect_match "diag: Habana's driver identified" "$out" \
    'gaudi accel0: driver habanalabs 1\.24\.1 \(20260305\), Habana.s out-of-tree driver'
new_node
HLSIM_NUM_DEVICES=1 HLSIM_FLAVOUR=upstream UCX_LOG_LEVEL=diag \
    on_node ucx_info -d > "$out" 2>&1
expect_match "diag: in-kernel driver identified" "$out" \
    "gaudi accel0: driver habanalabs $(uname -r | cut -d. -f1-2)\\.[0-9]+ \\(20190505\\), the in-kernel accel driver"
new_node
HLSIM_NUM_DEVICES=1 HLSIM_DRM=0 UCX_LOG_LEVEL=diag \
    on_node ucx_info -d > "$out" 2>&1
expect_match "diag: Habana's build without DRM accel identified" "$out" \
    'gaudi accel0: driver without DRM identity, DRM ioctl codes \(Habana.s out-of-tree driver built without DRM accel\)'
new_node
HLSIM_NUM_DEVICES=1 HLSIM_NODES=legacy UCX_LOG_LEVEL=diag \
    on_node ucx_info -d > "$out" 2>&1
expect_match "diag: legacy driver has no DRM identity" "$out" \
    'gaudi hl0: driver without DRM identity'
expect_no_match "diag: no errors on legacy nodes" "$out" 'UCX  (ERROR|WARN)'
new_node

# the configuration variables are visible
HLSIM_NUM_DEVICES=2 on_node ucx_info -c -f > "$out" 2>&1
expect_match "UCX_GAUDI_DEVICE in ucx_info -c" "$out" '^UCX_GAUDI_DEVICE='
expect_match "UCX_GAUDI_COPY_ variables in ucx_info -c" "$out" '^UCX_GAUDI_COPY_'
expect_match "UCX_GAUDI_COPY_BACKEND in ucx_info -c" "$out" \
    '^UCX_GAUDI_COPY_BACKEND=auto$'
expect_match "UCX_GAUDI_SYNAPSE_LIB in ucx_info -c" "$out" \
    '^UCX_GAUDI_SYNAPSE_LIB=libSynapse.so$'
expect_match "UCX_GAUDI_DEVICE_MEM in ucx_info -c" "$out" \
    '^UCX_GAUDI_DEVICE_MEM=auto$'
expect_match "UCX_GAUDI_COPY_DMA_QUEUES in ucx_info -c" "$out" \
    '^UCX_GAUDI_COPY_DMA_QUEUES=auto$'
expect_match "UCX_GAUDI_IPC_DMA_QUEUES in ucx_info -c" "$out" \
    '^UCX_GAUDI_IPC_DMA_QUEUES=auto$'

# without the module nothing Gaudi appears (stock UCX is untouched)
if LD_PRELOAD="$(in_device_mode || echo "$HLSIM_LIB")" ucx_info -d \
        > "$out" 2>&1; then
    expect_no_match "not loaded without the wrapper" "$out" 'gaudi'
else
    fail "not loaded without the wrapper" "ucx_info -d failed: $(tail -3 "$out")"
fi

# the rest needs emulated nodes of chosen shapes and drivers
if in_device_mode; then
    echo "skip: 0 devices, busy devices, Linux 6.1 driver (emulated nodes)"
    finish
    exit
fi

# no device at all: no Gaudi resources, no error, no crash
new_node
HLSIM_NUM_DEVICES=0 on_node ucx_info -d > "$out" 2>&1
rc=$?
[ $rc -eq 0 ] && pass "0 devices: exits 0" || fail "0 devices: exits 0" "exit $rc"
expect_no_match "0 devices: no gaudi MD" "$out" 'Memory domain: gaudi'

# Linux 6.1 with Gaudi2: no DMA-BUF export (facts 4.1); gaudi_ipc stays
# listed but registers nothing, and says why at DIAG level
new_node
HLSIM_NODES=legacy UCX_LOG_LEVEL=diag on_node ucx_info -d > "$out" 2>&1
expect_match "Linux 6.1: export disabled, reason given" "$out" \
    'gaudi_ipc: GAUDI_0 \(hl0\): registration disabled: the driver cannot export DMA-BUF'
expect_no_match "Linux 6.1: no errors logged" "$out" 'UCX  (ERROR|WARN)'
new_node
HLSIM_NODES=legacy HLSIM_ASIC=gaudi1 UCX_LOG_LEVEL=diag on_node ucx_info -d \
    > "$out" 2>&1
expect_no_match "Linux 6.1, Gaudi1: export kept" "$out" \
    'registration disabled'

# device 0 owned by another process: the first free one is taken
new_node
export HLSIM_NUM_DEVICES=2
ready=$(mktemp -u); tmpdirs+=("$ready")
LD_PRELOAD="$HLSIM_LIB" \
    bash -c 'exec 3<>/dev/accel/accel0; : > "$0"; sleep 20' "$ready" &
holder=$!
wait_file "$ready" "$holder" ||
    fail "device 0 held by another process" "the holder did not open it"
on_node ucx_info -d > "$out" 2>&1
expect_match "busy device 0: device 1 used" "$out" '^#  System device: GAUDI_1'

# explicitly selecting the busy device: a clear error, no resources
UCX_GAUDI_DEVICE=0 on_node ucx_info -d > "$out" 2>&1
rc=$?
[ $rc -eq 0 ] && pass "busy selected device: exits 0" ||
    fail "busy selected device: exits 0" "exit $rc"
expect_match "busy selected device: clear message" "$out" 'busy'
expect_no_match "busy selected device: no gaudi MD" "$out" 'Memory domain: gaudi'
kill $holder 2>/dev/null; wait $holder 2>/dev/null
unset HLSIM_NUM_DEVICES

finish
