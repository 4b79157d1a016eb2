# gaudi_ipc two-process gtests (test/ipc), each run on a fresh emulated node
# with two devices: Gaudi2 and Gaudi1 (kernel CBs), each in the Habana
# flavour (op 99: transfers) and the upstream flavour (no op 99:
# unreachable, clean failures). Prints every gtest run, then one summary in
# gtest's format for the harness.
. "$(dirname "$0")/lib.sh"

gtest=$UCX_GAUDI_BUILD/test/ipc/gaudi_ipc_test
total_pass=0
total_fail=0
failed=()

for run in gaudi2:habana gaudi2:upstream gaudi1:habana gaudi1:upstream; do
    asic=${run%%:*}
    flavour=${run#*:}
    new_node
    log=$(mktemp); tmpdirs+=("$log")
    echo "=== HLSIM_ASIC=$asic HLSIM_FLAVOUR=$flavour"
    HLSIM_ASIC=$asic HLSIM_FLAVOUR=$flavour HLSIM_NUM_DEVICES=2 \
        on_emulator "$gtest" 2>&1 | tee "$log"
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?\.$/\1/p' "$log" | tail -1)
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) tests\?, listed below:$/\1/p' \
            "$log" | tail -1)
    if [ -z "$p" ] && [ -z "$f" ]; then
        f=1   # crashed before its summary
        failed+=("$asic $flavour: no gtest summary")
    fi
    total_pass=$((total_pass + ${p:-0}))
    total_fail=$((total_fail + ${f:-0}))
    while read -r t; do
        failed+=("$asic $flavour: $t")
    done < <(sed -n 's/^\[  FAILED  \] \([^ ]*\) (.*$/\1/p' "$log")
done

for d in "${tmpdirs[@]}"; do rm -rf "$d"; done
echo "=== all models and flavours"
echo "[  PASSED  ] $total_pass tests."
if [ "$total_fail" -ne 0 ]; then
    echo "[  FAILED  ] $total_fail tests, listed below:"
    for t in "${failed[@]}"; do
        echo "[  FAILED  ] $t"
    done
    exit 1
fi
exit 0
