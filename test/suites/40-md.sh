# The memory layer's own gtests (test/gtest/mem) and the gaudi_copy
# memory domain gtests (test/gtest/copy/gaudi_md_test.cc), once
# per ASIC model, each on a fresh emulated node. Prints both gtest runs,
# then one summary in gtest's format for the harness.
. "$(dirname "$0")/lib.sh"
emulator_only "the MD gtests use the emulator's fault injection and counters and re-exec themselves with it"

# lib.sh defaults to reloc hooks; with them UCM 1.13.1 deadlocks installing
# its malloc hooks (ucm_malloc_install -> sbrk hook -> dlsym -> dlerror
# malloc -> ucm_dlmalloc lock) when the registration cache subscribes to
# VM_UNMAPPED. The rcache tests need those events: use UCX's default.
export UCX_MEM_MMAP_HOOK_MODE=bistro

gtest=$GAUDI_UCX_BUILD/test/gtest/gaudi_md_test

# The memory layer's heap itself (test/gtest/mem/gaudi_mem_test.cc): chunk
# free lists, allocation, resolution, deferred release and teardown, on
# every driver flavour with the ASICs it has (as below, without the BAR
# runs)
for run in gaudi2 gaudi1 gaudi3 upstream:gaudi2 upstream:gaudi1 \
           legacy:gaudi2 legacy:gaudi1; do
    flavour=habana
    case $run in *:*) flavour=${run%%:*};; esac
    asic=${run#*:}
    new_node
    log=$(mktemp); tmpdirs+=("$log")
    echo "=== gaudi_mem_test $flavour HLSIM_ASIC=$asic"
    HLSIM_ASIC=$asic HLSIM_NUM_DEVICES=1 with_flavour "$flavour" \
        on_emulator "$GAUDI_UCX_BUILD/test/gtest/gaudi_mem_test" 2>&1 |
        tee "$log"
    gtest_add "mem-$run" "$log" "${PIPESTATUS[0]}"
done

# Every driver flavour with the ASICs it has (docs/hlsim.md): habana
# (default) x Gaudi1/2/3, upstream and legacy (Linux 6.1) x Gaudi1/2, each
# with the ASIC's real HBM and DRAM page (Gaudi2: 96 GiB, 768 MiB pages,
# not a power of two); -bar: a DRAM PCI BAR smaller than the DRAM (export
# tests only), 4 GiB on Gaudi2: the first four user pages (768 MiB to
# 3.75 GiB) lie inside it, as many as the export tests use at once, and
# the fifth straddles its end
for run in gaudi2 gaudi1 gaudi3 upstream:gaudi2 upstream:gaudi1 \
           legacy:gaudi2 legacy:gaudi1 gaudi2-bar gaudi1-bar; do
    flavour=habana
    case $run in *:*) flavour=${run%%:*};; esac
    asic=${run#*:}
    asic=${asic%%-*}
    page= bar= filter='*'
    case $run in
    gaudi2-bar) bar=4G filter='*dmabuf*';;
    *-bar)      bar=1G filter='*dmabuf*';;
    esac
    new_node
    log=$(mktemp); tmpdirs+=("$log")
    echo "=== $flavour HLSIM_ASIC=$asic HLSIM_DRAM_PAGE_SIZE=$page" \
        "HLSIM_DRAM_BAR_SIZE=$bar"
    HLSIM_ASIC=$asic HLSIM_NUM_DEVICES=1 HLSIM_DRAM_PAGE_SIZE=$page \
        HLSIM_DRAM_BAR_SIZE=$bar with_flavour "$flavour" \
        on_emulator "$gtest" --gtest_filter="$filter" 2>&1 | tee "$log"
    gtest_add "$run" "$log" "${PIPESTATUS[0]}"
done

# The SynapseAI copy backend (emulated libSynapse) on Gaudi3, Gaudi2 and
# Gaudi1: host registration is synHostMap, and the heap's chunks come from
# synDeviceMalloc (auto: SynapseAI's pool holds the DRAM). Not run there:
# the driver-level fault injections of MAP USERPTR and the freed-pointer
# registration (SynapseAI reports them with its own statuses), the
# borrowed-fd tests (a UCX_GAUDI_DEVICE_FD device cannot be SynapseAI's,
# docs/synapse.md), and the release-path test of driver chunks (chunk and
# fd counts after export cycles; the deferred-release tests are
# gaudi_mem_test's, driver memory only): an exported SynapseAI chunk is
# kept for reuse instead (docs/synapse.md, Memory; gaudi_syn_heap.* in
# 25-syn)
for asic in gaudi3 gaudi2 gaudi1; do
    new_node
    log=$(mktemp); tmpdirs+=("$log")
    echo "=== UCX_GAUDI_COPY_BACKEND=synapse HLSIM_ASIC=$asic"
    HLSIM_ASIC=$asic HLSIM_NUM_DEVICES=1 UCX_GAUDI_COPY_BACKEND=synapse \
        UCX_GAUDI_SYNAPSE_LIB=$synsim_lib \
        on_emulator "$gtest" \
        --gtest_filter='*:-*bad_input:*driver_faults:*borrowed_fd*:*stable_over*' \
        2>&1 | tee "$log"
    gtest_add "synapse:$asic" "$log" "${PIPESTATUS[0]}"
done

gtest_summary "all models and flavours"
