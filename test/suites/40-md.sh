# gaudi_copy memory domain gtests (test/md), once per ASIC model, each on a
# fresh emulated node. Prints both gtest runs, then one summary in gtest's
# format for the harness.
. "$(dirname "$0")/lib.sh"

# lib.sh defaults to reloc hooks; with them UCM 1.13.1 deadlocks installing
# its malloc hooks (ucm_malloc_install -> sbrk hook -> dlsym -> dlerror
# malloc -> ucm_dlmalloc lock) when the registration cache subscribes to
# VM_UNMAPPED. The rcache tests need those events: use UCX's default.
export UCX_MEM_MMAP_HOOK_MODE=bistro

gtest=$GAUDI_UCX_BUILD/test/md/gaudi_md_test
total_pass=0
total_fail=0
failed=()

for asic in gaudi2 gaudi1; do
    new_node
    log=$(mktemp); tmpdirs+=("$log")
    echo "=== HLSIM_ASIC=$asic"
    HLSIM_ASIC=$asic HLSIM_NUM_DEVICES=1 on_emulator "$gtest" 2>&1 | tee "$log"
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?\.$/\1/p' "$log" | tail -1)
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) tests\?, listed below:$/\1/p' \
            "$log" | tail -1)
    if [ -z "$p" ] && [ -z "$f" ]; then
        f=1   # crashed before its summary
        failed+=("$asic: no gtest summary")
    fi
    total_pass=$((total_pass + ${p:-0}))
    total_fail=$((total_fail + ${f:-0}))
    while read -r t; do
        failed+=("$asic: $t")
    done < <(sed -n 's/^\[  FAILED  \] \([^ ]*\) (.*$/\1/p' "$log")
done

finish_dirs() { local d; for d in "${tmpdirs[@]}"; do rm -rf "$d"; done; }
finish_dirs
echo "=== both models"
echo "[  PASSED  ] $total_pass tests."
if [ "$total_fail" -ne 0 ]; then
    echo "[  FAILED  ] $total_fail tests, listed below:"
    for t in "${failed[@]}"; do echo "[  FAILED  ] $t"; done
    exit 1
fi
exit 0
