/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Device memory heap of the memory layer. "facts N.M" is a section of
 * docs/driver-facts.md. Design and trade-offs: docs/md.md.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/mem/gaudi_mem.h>
#include <uct/gaudi/syn/gaudi_syn.h>
#include <uct/gaudi/dev/gaudi_device.h>

#include <ucs/datastruct/khash.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/sys.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


KHASH_SET_INIT_INT64(uct_gaudi_memh_set)

typedef khash_t(uct_gaudi_memh_set) uct_gaudi_memh_set_t;


/* A free range of a chunk */
typedef struct uct_gaudi_extent {
    ucs_list_link_t list;
    uint64_t        offset;
    uint64_t        length;
} uct_gaudi_extent_t;


/* Heap teardown waits at most this long for deferred chunks to become
 * releasable (a peer importer is often closing at the same time) */
#define UCT_GAUDI_HEAP_TEARDOWN_GRACE_MS  100
#define UCT_GAUDI_HEAP_TEARDOWN_STEP_MS   5


static pthread_mutex_t uct_gaudi_heap_global_lock =
        PTHREAD_MUTEX_INITIALIZER;
static uct_gaudi_heap_t *uct_gaudi_heap_global = NULL;


const char *uct_gaudi_heap_name(const uct_gaudi_heap_t *heap)
{
    return heap->info->name;
}

static int uct_gaudi_heap_is_gaudi1(const uct_gaudi_heap_t *heap)
{
    return heap->info->asic == UCT_GAUDI_ASIC_GAUDI1;
}

/* Gaudi1 with driver memory: one chunk over the user DRAM range, whose
 * ALLOC only counts bytes (facts 3.2) */
static int uct_gaudi_heap_ranged(const uct_gaudi_heap_t *heap)
{
    return uct_gaudi_heap_is_gaudi1(heap) &&
           (heap->device_mem == UCT_GAUDI_DEVICE_MEM_DRIVER);
}

int uct_gaudi_heap_can_alloc(const uct_gaudi_heap_t *heap)
{
    /* opened by us: no other allocator shares the context; or SynapseAI's
     * allocator, which knows what its owner uses; not taken yet: the
     * allocation opens it */
    return (heap->ctx == NULL) || !uct_gaudi_heap_ranged(heap) ||
           heap->ctx->hl.owns_fd;
}

int uct_gaudi_heap_owned(uct_gaudi_heap_t *heap, const char *op)
{
    if ((heap->ctx == NULL) || uct_gaudi_ctx_owned(heap->ctx)) {
        return 1;   /* not taken: nothing of a parent's to touch */
    }

    ucs_error("gaudi %s (%s): %s refused: the device context belongs to "
              "process %d, this process (%d) is a fork() child of it",
              heap->ctx->info->name, heap->ctx->info->node_name, op,
              (int)heap->ctx->pid, (int)getpid());
    return 0;
}


/* Page table directories of the allocation table */

static ucs_pgt_dir_t *uct_gaudi_heap_pgt_dir_alloc(const ucs_pgtable_t *pgt)
{
    void *ptr;

    if (ucs_posix_memalign(&ptr, ucs_max(sizeof(void*),
                                         UCS_PGT_ENTRY_MIN_ALIGN),
                           sizeof(ucs_pgt_dir_t), "gaudi_heap_pgt_dir") != 0) {
        return NULL;
    }
    return ptr;
}

static void uct_gaudi_heap_pgt_dir_release(const ucs_pgtable_t *pgt,
                                           ucs_pgt_dir_t *dir)
{
    ucs_free(dir);
}


/* Chunk free lists: first fit, sorted by offset, coalesced */

static ucs_status_t uct_gaudi_chunk_take(uct_gaudi_chunk_t *chunk,
                                         uint64_t size, uint64_t *off_p)
{
    uct_gaudi_extent_t *ext;

    ucs_list_for_each(ext, &chunk->free_list, list) {
        if (ext->length < size) {
            continue;
        }
        *off_p       = ext->offset;
        ext->offset += size;
        ext->length -= size;
        if (ext->length == 0) {
            ucs_list_del(&ext->list);
            ucs_free(ext);
        }
        chunk->used += size;
        chunk->nbufs++;
        return UCS_OK;
    }
    return UCS_ERR_NO_MEMORY;
}

static ucs_status_t uct_gaudi_chunk_give(uct_gaudi_chunk_t *chunk,
                                         uint64_t off, uint64_t size)
{
    uct_gaudi_extent_t *ext, *next, *prev = NULL, *new_ext;

    ucs_list_for_each(next, &chunk->free_list, list) {
        if (next->offset > off) {
            break;
        }
        prev = next;
    }

    if ((prev != NULL) && (prev->offset + prev->length == off)) {
        prev->length += size;                    /* merge with previous */
        ext           = prev;
    } else {
        new_ext = ucs_malloc(sizeof(*new_ext), "gaudi_heap_extent");
        if (new_ext == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        new_ext->offset = off;
        new_ext->length = size;
        if (prev == NULL) {
            ucs_list_add_head(&chunk->free_list, &new_ext->list);
        } else {
            ucs_list_insert_after(&prev->list, &new_ext->list);
        }
        ext = new_ext;
    }

    if (ext->list.next != &chunk->free_list) {          /* merge with next */
        next = ucs_list_next(&ext->list, uct_gaudi_extent_t, list);
        if (ext->offset + ext->length == next->offset) {
            ext->length += next->length;
            ucs_list_del(&next->list);
            ucs_free(next);
        }
    }

    chunk->used -= size;
    chunk->nbufs--;
    return UCS_OK;
}

static uct_gaudi_chunk_t *
uct_gaudi_chunk_new(uint64_t ptr, uint64_t dma, uint64_t size)
{
    uct_gaudi_chunk_t *chunk;
    uct_gaudi_extent_t *ext;

    chunk = ucs_calloc(1, sizeof(*chunk), "gaudi_heap_chunk");
    ext   = ucs_malloc(sizeof(*ext), "gaudi_heap_extent");
    if ((chunk == NULL) || (ext == NULL)) {
        ucs_free(chunk);
        ucs_free(ext);
        return NULL;
    }

    chunk->ptr  = ptr;
    chunk->dma  = dma;
    chunk->size = size;
    ucs_list_head_init(&chunk->free_list);
    ext->offset = 0;
    ext->length = size;
    ucs_list_add_tail(&chunk->free_list, &ext->list);
    return chunk;
}

static void uct_gaudi_chunk_delete(uct_gaudi_chunk_t *chunk)
{
    uct_gaudi_extent_t *ext, *tmp;

    ucs_list_for_each_safe(ext, tmp, &chunk->free_list, list) {
        ucs_free(ext);
    }
    ucs_free(chunk->export_ids);
    ucs_free(chunk);
}

/* Remember the dma-buf file @a fd exported from @a chunk (SynapseAI's):
 * its release waits until no fd of the file is open here. 0 or -1 (then
 * the chunk is kept for good) */
static int uct_gaudi_chunk_note_export(uct_gaudi_chunk_t *chunk, int fd)
{
    uint64_t *ids;
    struct stat st;

    if (fstat(fd, &st) < 0) {
        return -1;
    }
    ids = ucs_realloc(chunk->export_ids,
                      sizeof(*ids) * 2 * (chunk->num_exports + 1),
                      "gaudi_chunk_exports");
    if (ids == NULL) {
        return -1;
    }
    ids[2 * chunk->num_exports]     = st.st_dev;
    ids[2 * chunk->num_exports + 1] = st.st_ino;
    chunk->export_ids               = ids;
    ++chunk->num_exports;
    return 0;
}

/* Whether an fd of a dma-buf exported from @a chunk is open in this
 * process (the heap's, gaudi_ipc's, the application's); 1 if unknown */
static int uct_gaudi_chunk_exports_held(const uct_gaudi_chunk_t *chunk)
{
    struct dirent *de;
    struct stat st;
    unsigned i;
    int held = 0;
    DIR *dir;

    if (chunk->export_lost) {
        return 1;
    }
    dir = opendir("/proc/self/fd");
    if (dir == NULL) {
        return 1;
    }
    while (!held && ((de = readdir(dir)) != NULL)) {
        if ((de->d_name[0] == '.') ||
            (fstat(atoi(de->d_name), &st) < 0)) {
            continue;
        }
        for (i = 0; i < chunk->num_exports; ++i) {
            held |= (chunk->export_ids[2 * i] == st.st_dev) &&
                    (chunk->export_ids[2 * i + 1] == st.st_ino);
        }
    }
    closedir(dir);
    return held;
}


/*
 * Device memory of a new chunk: the driver's ALLOC of whole pages, then
 * MAP (Gaudi2/3, facts 3.2, 3.3), whose VA is exactly what a dma-buf
 * export takes (facts 4.1); or SynapseAI's allocator (*syn_p set, any
 * ASIC), a piece of SynapseAI's pool. With the ctx lock.
 */
static ucs_status_t uct_gaudi_chunk_provide(uct_gaudi_heap_t *heap,
                                            uint64_t size, uint64_t *handle_p,
                                            uint64_t *va_p, int *syn_p)
{
    const uct_gaudi_hl_t *hl = &heap->ctx->hl;
    ucs_status_t status;

    *syn_p = (heap->device_mem == UCT_GAUDI_DEVICE_MEM_SYNAPSE);
    if (*syn_p) {
        /* SynapseAI's pieces are 128-byte aligned (scal_base.h:705): one
         * page more makes a page-aligned chunk, so that an export of the
         * pages around a buffer never shares the framework's tensors
         * beside it; the piece's own address goes back to synDeviceFree */
        status = uct_gaudi_syn_device_malloc(heap->syn, heap->syn_device,
                                             size + heap->host_page,
                                             handle_p);
        *va_p  = ucs_align_up(*handle_p, heap->host_page);
        return status;
    }

    status = uct_gaudi_hl_mem_alloc(hl, size, 0, handle_p);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gaudi_hl_mem_map_device(hl, *handle_p, 0, va_p);
    if (status != UCS_OK) {
        (void)uct_gaudi_hl_mem_free(hl, *handle_p);
    }
    return status;
}

/* Give a chunk's memory back to where it came from (with the ctx lock) */
static void uct_gaudi_chunk_unprovide(uct_gaudi_heap_t *heap, int syn,
                                      uint64_t handle, uint64_t va)
{
    if (syn) {
        (void)uct_gaudi_syn_device_free(heap->syn, heap->syn_device,
                                        handle);
        return;
    }

    (void)uct_gaudi_hl_mem_unmap(&heap->ctx->hl, va);
    (void)uct_gaudi_hl_mem_free(&heap->ctx->hl, handle);
}

/* Once per process: where UCX's device memory comes from and what its
 * chunks take (the counters keep the running total) */
static void uct_gaudi_heap_log_held(uct_gaudi_heap_t *heap, int syn,
                                    uint64_t size)
{
    static int logged = 0;

    if (__atomic_exchange_n(&logged, 1, __ATOMIC_RELAXED)) {
        return;
    }
    ucs_diag("gaudi %s: UCX device allocations take %s in chunks of %" PRIu64
             " KiB%s; the first one now, %" PRIu64 " KiB (counters: "
             "chunk_bytes)", uct_gaudi_heap_name(heap), syn ?
             "SynapseAI's device memory (synDeviceMalloc)" :
             "the driver's DRAM pages (ALLOC + MAP)",
             heap->chunk_size >> 10, syn ?
             " (UCX_GAUDI_SYN_HEAP_CHUNK), given back when empty and no "
             "export of them is open" : " (the driver's page), small "
             "buffers sharing one", (size + (syn ? heap->host_page : 0)) >> 10);
}

static ucs_status_t uct_gaudi_chunk_create(uct_gaudi_heap_t *heap,
                                           uint64_t size, int dedicated,
                                           uct_gaudi_chunk_t **chunk_p)
{
    uct_gaudi_chunk_t *chunk;
    uint64_t handle, va;
    ucs_status_t status;
    int syn;

    pthread_mutex_lock(&heap->ctx->lock);
    status = uct_gaudi_chunk_provide(heap, size, &handle, &va, &syn);
    pthread_mutex_unlock(&heap->ctx->lock);
    if (status != UCS_OK) {
        return status;
    }

    /* Gaudi1 (SynapseAI's memory): va is a physical address (facts 3.2) */
    chunk = uct_gaudi_chunk_new(uct_gaudi_heap_is_gaudi1(heap) ?
                                (UCT_GAUDI_MEM_G1_WINDOW + va) : va, va,
                                size);
    if (chunk == NULL) {
        pthread_mutex_lock(&heap->ctx->lock);
        uct_gaudi_chunk_unprovide(heap, syn, handle, va);
        pthread_mutex_unlock(&heap->ctx->lock);
        return UCS_ERR_NO_MEMORY;
    }

    chunk->handle    = handle;
    chunk->mapped    = !syn;
    chunk->syn       = syn;
    chunk->dedicated = dedicated;
    ucs_list_add_tail(&heap->chunks, &chunk->list);
    UCT_GAUDI_MEM_COUNTER_ADD(heap, chunk_count, 1);
    UCT_GAUDI_MEM_COUNTER_ADD(heap, chunk_bytes, size + (syn ?
                                                         heap->host_page : 0));
    uct_gaudi_heap_log_held(heap, syn, size);
    ucs_debug("gaudi %s: new %s chunk of %" PRIu64 " bytes at 0x%" PRIx64
              " (%s %" PRIu64 ")", uct_gaudi_heap_name(heap),
              dedicated ? "dedicated" : "shared", size, chunk->ptr,
              syn ? "synDeviceMalloc" : "handle", handle);
    *chunk_p = chunk;
    return UCS_OK;
}

/*
 * UNMAP + FREE of a chunk (Gaudi2/3), resuming after a FREE that failed.
 * UNMAP fails with EINVAL while a dma-buf exported from the mapping is
 * alive anywhere (facts 3.3): the shim logs that at debug level only.
 */
static ucs_status_t uct_gaudi_chunk_release(uct_gaudi_heap_t *heap,
                                            uct_gaudi_chunk_t *chunk)
{
    const uct_gaudi_hl_t *hl = &heap->ctx->hl;
    ucs_status_t status      = UCS_OK;

    pthread_mutex_lock(&heap->ctx->lock);
    if (chunk->syn) {
        status = uct_gaudi_syn_device_free(heap->syn, heap->syn_device,
                                           chunk->handle);
    } else if (chunk->mapped) {
        status = uct_gaudi_hl_mem_unmap_exported(hl, chunk->ptr);
        if (status == UCS_OK) {
            chunk->mapped = 0;
        }
    }
    if ((status == UCS_OK) && !chunk->syn) {
        status = uct_gaudi_hl_mem_free(hl, chunk->handle);
    }
    pthread_mutex_unlock(&heap->ctx->lock);

    if (status == UCS_OK) {
        UCT_GAUDI_MEM_COUNTER_ADD(heap, chunk_count, -1);
        UCT_GAUDI_MEM_COUNTER_ADD(heap, chunk_bytes,
                                  -(chunk->size + (chunk->syn ?
                                                   heap->host_page : 0)));
    }
    return status;
}

/* An empty chunk (in heap->chunks) goes back to the driver, or, if the
 * driver refuses, to the deferred list (see gaudi_mem.h) */
static void uct_gaudi_chunk_destroy(uct_gaudi_heap_t *heap,
                                    uct_gaudi_chunk_t *chunk)
{
    ucs_status_t status;

    ucs_list_del(&chunk->list);
    if (chunk->syn && chunk->exported &&
        uct_gaudi_chunk_exports_held(chunk)) {
        /* see gaudi_mem.h: not back to SynapseAI while exported */
        ucs_list_add_tail(&heap->retained, &chunk->list);
        ucs_debug("gaudi %s: SynapseAI chunk 0x%" PRIx64 " (%" PRIu64
                  " bytes) is still exported: kept reserved, not freed",
                  uct_gaudi_heap_name(heap), chunk->ptr, chunk->size);
        return;
    }

    status = uct_gaudi_chunk_release(heap, chunk);
    if (status == UCS_OK) {
        uct_gaudi_chunk_delete(chunk);
        return;
    }

    chunk->release_tries = 1;
    ucs_list_add_tail(&heap->deferred, &chunk->list);
    UCT_GAUDI_MEM_COUNTER_ADD(heap, deferred_chunks, 1);
    ucs_debug("gaudi %s: release of device memory chunk 0x%" PRIx64
              " (%" PRIu64 " bytes) deferred: %s (%s); its range stays "
              "reserved until the driver lets it go",
              uct_gaudi_heap_name(heap), chunk->ptr, chunk->size,
              ucs_status_string(status), chunk->mapped ?
              "a dma-buf exported from it is still alive, e.g. imported by "
              "another process" : "FREE failed");
}

/* Retry the deferred releases; heap->lock held, owner process only */
static void uct_gaudi_heap_retry_deferred(uct_gaudi_heap_t *heap)
{
    uct_gaudi_chunk_t *chunk, *tmp;
    ucs_status_t status;

    ucs_list_for_each_safe(chunk, tmp, &heap->deferred, list) {
        status = uct_gaudi_chunk_release(heap, chunk);
        if (status != UCS_OK) {
            ++chunk->release_tries;
            ucs_trace("gaudi %s: deferred chunk 0x%" PRIx64 " still not "
                      "releasable (try %u): %s",
                      uct_gaudi_heap_name(heap), chunk->ptr,
                      chunk->release_tries, ucs_status_string(status));
            continue;
        }

        ucs_debug("gaudi %s: released deferred device memory chunk 0x%"
                  PRIx64 " (%" PRIu64 " bytes) after %u failed tries",
                  uct_gaudi_heap_name(heap), chunk->ptr, chunk->size,
                  chunk->release_tries);
        ucs_list_del(&chunk->list);
        UCT_GAUDI_MEM_COUNTER_ADD(heap, deferred_chunks, -1);
        uct_gaudi_chunk_delete(chunk);
    }
}

/* Retained SynapseAI chunks whose exports are all closed here go back to
 * SynapseAI (gaudi_mem.h); heap->lock held, owner process only */
static void uct_gaudi_heap_retry_retained(uct_gaudi_heap_t *heap)
{
    uct_gaudi_chunk_t *chunk, *tmp;

    ucs_list_for_each_safe(chunk, tmp, &heap->retained, list) {
        if (uct_gaudi_chunk_exports_held(chunk) ||
            (uct_gaudi_chunk_release(heap, chunk) != UCS_OK)) {
            continue;
        }
        ucs_debug("gaudi %s: SynapseAI chunk 0x%" PRIx64 " (%" PRIu64
                  " bytes): its exports are closed, given back",
                  uct_gaudi_heap_name(heap), chunk->ptr, chunk->size);
        ucs_list_del(&chunk->list);
        uct_gaudi_chunk_delete(chunk);
    }
}

static inline void
uct_gaudi_heap_retry_deferred_fast(uct_gaudi_heap_t *heap)
{
    if (ucs_unlikely(!ucs_list_is_empty(&heap->deferred)) &&
        uct_gaudi_ctx_owned(heap->ctx)) {
        uct_gaudi_heap_retry_deferred(heap);
    }
    if (ucs_unlikely(!ucs_list_is_empty(&heap->retained)) &&
        uct_gaudi_ctx_owned(heap->ctx)) {
        uct_gaudi_heap_retry_retained(heap);
    }
}

void uct_gaudi_heap_progress(uct_gaudi_heap_t *heap)
{
    /* unlocked peek at the counter: nothing to do in the common case */
    if (ucs_likely(__atomic_load_n(&heap->counters.deferred_chunks,
                                   __ATOMIC_RELAXED) == 0)) {
        return;
    }

    pthread_mutex_lock(&heap->lock);
    uct_gaudi_heap_retry_deferred_fast(heap);
    pthread_mutex_unlock(&heap->lock);
}

/* Teardown: give the deferred chunks a short grace period, then leave the
 * rest to the driver (freed when the device is closed, facts 3.2) */
static void uct_gaudi_heap_drop_deferred(uct_gaudi_heap_t *heap)
{
    struct timespec step = {0, UCT_GAUDI_HEAP_TEARDOWN_STEP_MS * 1000000l};
    uct_gaudi_chunk_t *chunk, *tmp;
    unsigned waited_ms;

    if (uct_gaudi_ctx_owned(heap->ctx)) {
        uct_gaudi_heap_retry_deferred(heap);
        for (waited_ms = 0; !ucs_list_is_empty(&heap->deferred) &&
                            (waited_ms < UCT_GAUDI_HEAP_TEARDOWN_GRACE_MS);
             waited_ms += UCT_GAUDI_HEAP_TEARDOWN_STEP_MS) {
            nanosleep(&step, NULL);
            uct_gaudi_heap_retry_deferred(heap);
        }
    }

    ucs_list_for_each_safe(chunk, tmp, &heap->deferred, list) {
        if (uct_gaudi_ctx_owned(heap->ctx)) {
            ucs_warn("gaudi %s: device memory chunk 0x%" PRIx64 " (%" PRIu64
                     " bytes) is still exported at teardown (a dma-buf of "
                     "it is open, e.g. imported by another process): not "
                     "released; the driver frees it when the device is "
                     "closed", uct_gaudi_heap_name(heap), chunk->ptr,
                     chunk->size);
        }
        ucs_list_del(&chunk->list);
        UCT_GAUDI_MEM_COUNTER_ADD(heap, deferred_chunks, -1);
        uct_gaudi_chunk_delete(chunk);
    }
}


/* Heap lifetime */

/*
 * Chunks of SynapseAI's memory: SynapseAI's allocator is 128-byte granular
 * (G3 scal_memory_pool.cpp:54-56, scal_base.h:705), so the chunk is ours,
 * UCX_GAUDI_SYN_HEAP_CHUNK (host pages), not the driver's DRAM page (768
 * MiB on Gaudi2, facts 3.4): a small UCX allocation takes at most one such
 * chunk (+ one page) of the framework's HBM. Never above the driver page.
 */
static void uct_gaudi_heap_syn_chunk(uct_gaudi_heap_t *heap)
{
    size_t want = uct_gaudi_global_config()->syn_heap_chunk;
    uint64_t page = heap->info->hw_ip.u61.dram_page_size;

    if ((page == 0) || uct_gaudi_heap_is_gaudi1(heap)) {
        page = UCT_GAUDI_MEM_G1_SYN_CHUNK;
    }
    heap->chunk_size = ucs_align_up(ucs_max(ucs_min(want, page), 1),
                                    heap->host_page);
}

static ucs_status_t uct_gaudi_heap_layout(uct_gaudi_heap_t *heap)
{
    const uct_gaudi_dev_info_t *info       = heap->info;
    const struct gaudi_hl_hw_ip_info *hw_ip = &info->hw_ip;
    uct_gaudi_chunk_t *chunk;

    if (hw_ip->u61.dram_size == 0) {
        ucs_error("gaudi %s (%s): the device reports no user DRAM",
                  info->name, info->node_name);
        return UCS_ERR_NO_DEVICE;
    }

    switch (info->asic) {
    case UCT_GAUDI_ASIC_GAUDI1:
        /* user space owns [dram_base, +dram_size) (facts 3.2): one chunk,
         * or SynapseAI's pieces of it */
        heap->win_start  = UCT_GAUDI_MEM_G1_WINDOW +
                           hw_ip->u61.dram_base_address;
        heap->win_end    = heap->win_start + hw_ip->u61.dram_size;
        if (!uct_gaudi_heap_ranged(heap)) {
            uct_gaudi_heap_syn_chunk(heap);
            return UCS_OK;
        }
        heap->chunk_size = hw_ip->u61.dram_size;
        chunk = uct_gaudi_chunk_new(heap->win_start,
                                    hw_ip->u61.dram_base_address,
                                    hw_ip->u61.dram_size);
        if (chunk == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        ucs_list_add_tail(&heap->chunks, &chunk->list);
        return UCS_OK;
    case UCT_GAUDI_ASIC_GAUDI2:
        heap->win_end = UCT_GAUDI_MEM_G2_VA_END;
        break;
    case UCT_GAUDI_ASIC_GAUDI3:
        heap->win_end = UCT_GAUDI_MEM_G3_VA_END;
        break;
    default:
        ucs_error("gaudi %s (%s): unknown ASIC, no memory support",
                  info->name, info->node_name);
        return UCS_ERR_UNSUPPORTED;
    }

    /* DRAM VA range (facts 2.3, 3.4); ALLOC granularity from INFO */
    heap->win_start  = hw_ip->u61.dram_base_address;
    heap->chunk_size = hw_ip->u61.device_mem_alloc_default_page_size ?
                       hw_ip->u61.device_mem_alloc_default_page_size :
                       hw_ip->u61.dram_page_size;
    if ((heap->chunk_size == 0) || (heap->win_end <= heap->win_start)) {
        ucs_error("gaudi %s (%s): unexpected DRAM layout: base 0x%" PRIx64
                  " page size %" PRIu64, info->name, info->node_name,
                  (uint64_t)hw_ip->u61.dram_base_address, heap->chunk_size);
        return UCS_ERR_UNSUPPORTED;
    }
    if (heap->device_mem == UCT_GAUDI_DEVICE_MEM_SYNAPSE) {
        uct_gaudi_heap_syn_chunk(heap);
    }
    return UCS_OK;
}

/*
 * SynapseAI's allocator for a kernel-backend context on SynapseAI's fd (a
 * framework process): the library the application loaded, its device the
 * one whose fd we borrowed. SCAL mapped all of the device's DRAM into its
 * pools at acquire (docs/synapse.md, "Device memory"), so the driver's
 * ALLOC finds none; SynapseAI's allocator is the only source there.
 * UCS_OK with heap->syn set, else heap->syn stays NULL.
 */
static ucs_status_t uct_gaudi_heap_borrow_syn(uct_gaudi_heap_t *heap,
                                              const uct_gaudi_ctx_t *ctx)
{
    const char *libname = uct_gaudi_global_config()->synapse_lib;
    uct_gaudi_syn_device_t device;
    uct_gaudi_syn_t *syn;
    ucs_status_t status;
    int fd;

    if (ctx->hl.owns_fd || strcmp(ctx->source, "SynapseAI") ||
        !uct_gaudi_syn_is_loaded(libname, &heap->syn_absent_at)) {
        return UCS_ERR_NO_DEVICE;
    }

    syn = ucs_calloc(1, sizeof(*syn), "gaudi heap syn");
    if (syn == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    status = uct_gaudi_syn_load(libname, uct_gaudi_device_minor_known, syn);
    if (status == UCS_OK) {
        status = uct_gaudi_syn_held_fd(syn, &fd, &device);
        if ((status == UCS_OK) && (fd != ctx->hl.fd)) {
            status = UCS_ERR_NO_DEVICE;
        }
        if (status != UCS_OK) {
            uct_gaudi_syn_unload(syn);
        }
    }
    if (status != UCS_OK) {
        ucs_free(syn);
        ucs_diag("gaudi %s: SynapseAI's allocator is not usable on its fd "
                 "(%s): device memory from the driver, which finds no DRAM "
                 "SCAL has not mapped", ctx->info->name,
                 ucs_status_string(status));
        return status;
    }

    heap->syn        = syn;
    heap->syn_device = device;
    heap->syn_own    = 1;
    return UCS_OK;
}

/* Drop the heap's own SynapseAI reference (after its chunks) */
static void uct_gaudi_heap_unborrow_syn(uct_gaudi_heap_t *heap)
{
    if (heap->syn_own) {
        uct_gaudi_syn_unload(heap->syn);
        ucs_free(heap->syn);
        heap->syn_own = 0;
    }
    heap->syn = NULL;
}

/*
 * Resolve UCX_GAUDI_DEVICE_MEM for the heap's device and backend. "auto":
 * SynapseAI's allocator whenever SynapseAI drives the device, or holds
 * the fd the kernel backend borrowed. On Gaudi2/3 SCAL mapped all free
 * DRAM at acquire (docs/synapse.md, "Device memory"), so the driver has
 * none left to ALLOC; on Gaudi1 the driver's ALLOC only counts bytes of
 * the DRAM SynapseAI places its buffers in (facts 3.2).
 */
static ucs_status_t uct_gaudi_heap_device_mem(uct_gaudi_heap_t *heap,
                                              const uct_gaudi_ctx_t *ctx)
{
    const uct_gaudi_dev_info_t *info = ctx->info;
    int value = uct_gaudi_global_config()->device_mem;

    heap->syn        = ctx->syn;
    heap->syn_device = ctx->syn_device;
    if ((ctx->syn == NULL) && (value != UCT_GAUDI_DEVICE_MEM_DRIVER) &&
        (uct_gaudi_heap_borrow_syn(heap, ctx) == UCS_OK) &&
        (value == UCT_GAUDI_DEVICE_MEM_AUTO)) {
        value = UCT_GAUDI_DEVICE_MEM_SYNAPSE;
    }

    if (heap->syn == NULL) {
        if (value == UCT_GAUDI_DEVICE_MEM_SYNAPSE) {
            ucs_error("gaudi %s (%s): UCX_GAUDI_DEVICE_MEM=synapse needs "
                      "SynapseAI's device (the synapse copy backend, or its "
                      "fd borrowed); this device has %s (%s)",
                      info->name, info->node_name,
                      uct_gaudi_backend_names[ctx->backend],
                      ctx->backend_why);
            return UCS_ERR_UNSUPPORTED;
        }
        value = UCT_GAUDI_DEVICE_MEM_DRIVER;
    } else if (value == UCT_GAUDI_DEVICE_MEM_AUTO) {
        value = UCT_GAUDI_DEVICE_MEM_SYNAPSE;
    }

    heap->device_mem = value;
    ucs_debug("gaudi %s: device memory from %s", info->name,
              (value == UCT_GAUDI_DEVICE_MEM_DRIVER) ? "the driver" :
              "synDeviceMalloc");
    return UCS_OK;
}

/*
 * Make @a ctx (a reference the heap keeps) the heap's device; heap->lock
 * held or the heap not shared yet. The device is the one the application
 * or the selection gave, so it may differ from the expected one, though
 * never in ASIC (one kind per node): the window stays.
 */
static ucs_status_t uct_gaudi_heap_attach(uct_gaudi_heap_t *heap,
                                          uct_gaudi_ctx_t *ctx)
{
    const uct_gaudi_dev_info_t *expected = heap->info;
    ucs_status_t status;

    if (ctx->info->asic != expected->asic) {
        ucs_error("gaudi %s: the device taken is a %s, the memory layer "
                  "was set up for %s, a %s", ctx->info->name,
                  uct_gaudi_asic_name(ctx->info->asic), expected->name,
                  uct_gaudi_asic_name(expected->asic));
        return UCS_ERR_UNSUPPORTED;
    }

    heap->info = ctx->info;
    status     = uct_gaudi_heap_device_mem(heap, ctx);
    if (status == UCS_OK) {
        status = uct_gaudi_heap_layout(heap);   /* Gaudi1's driver range */
    }
    if (status != UCS_OK) {
        uct_gaudi_heap_unborrow_syn(heap);
        heap->info = expected;
        return status;
    }

    /* readers that find it (uct_gaudi_heap_ctx) see it complete */
    __atomic_store_n(&heap->ctx, ctx, __ATOMIC_RELEASE);

    if (ctx->info != expected) {
        ucs_diag("gaudi: the device in use is %s (%s), not %s expected "
                 "when UCX started", ctx->info->name, ctx->source,
                 expected->name);
    }
    ucs_debug("gaudi %s: device taken for memory (%s)", ctx->info->name,
              ctx->source);
    if (!uct_gaudi_heap_can_alloc(heap)) {
        ucs_diag("gaudi %s (%s): device memory allocation disabled: Gaudi1 "
                 "with the fd from %s, whose owner uses the same DRAM (the "
                 "driver's ALLOC only counts bytes; SynapseAI's allocator "
                 "is used on the synapse copy backend)", ctx->info->name,
                 ctx->info->node_name, ctx->source);
    }
    return UCS_OK;
}

/*
 * Whether our own open may take the device (UCX_GAUDI_ALLOC_ACQUIRE): not
 * in a framework process before the framework acquired it, as SynapseAI
 * gives a process one device and its second acquire fails with
 * synDeviceAlreadyAcquired (osal_linux.cpp:146-150); the refusal is
 * logged once, with the fix, and is not sticky: once the framework holds
 * the device, allocations borrow it.
 */
static ucs_status_t uct_gaudi_heap_may_open(uct_gaudi_heap_t *heap)
{
    int mode = uct_gaudi_global_config()->alloc_acquire;
    int log;

    if ((mode == UCS_YES) ||
        ((mode == UCS_TRY) && !uct_gaudi_ctx_app_synapse())) {
        return UCS_OK;
    }

    pthread_mutex_lock(&heap->lock);
    log               = !heap->take_logged;
    heap->take_logged = 1;
    pthread_mutex_unlock(&heap->lock);
    if (log) {
        ucs_error("gaudi %s (%s): device memory allocation refused: no "
                  "device is in use yet and %s; acquire the device first "
                  "(e.g. move a tensor to 'hpu' before UCX allocates) or "
                  "set UCX_GAUDI_ALLOC_ACQUIRE=yes", heap->info->name,
                  heap->info->node_name, (mode == UCS_NO) ?
                  "UCX_GAUDI_ALLOC_ACQUIRE=no" :
                  "the application loaded SynapseAI, which acquires the "
                  "process's only device at its own init (an acquire by "
                  "UCX now would make it fail)");
    }
    return UCS_ERR_NO_DEVICE;
}

/* A reference on the process's device: the application's, else with
 * @a may_open our own open, tried once per process */
static ucs_status_t uct_gaudi_heap_take_ctx(uct_gaudi_heap_t *heap,
                                            int may_open,
                                            uct_gaudi_ctx_t **ctx_p)
{
    ucs_status_t status;

    status = uct_gaudi_ctx_borrow(ctx_p);
    if ((status != UCS_ERR_NO_DEVICE) || !may_open) {
        return status;
    }

    status = uct_gaudi_heap_may_open(heap);
    if (status != UCS_OK) {
        return status;
    }

    pthread_mutex_lock(&heap->lock);
    status = heap->open_status;
    pthread_mutex_unlock(&heap->lock);
    if (status != UCS_OK) {
        return status;   /* our open failed before: not waited out again */
    }

    status = uct_gaudi_ctx_get(-1, ctx_p);
    if (status != UCS_OK) {
        pthread_mutex_lock(&heap->lock);
        heap->open_status = status;
        pthread_mutex_unlock(&heap->lock);
    }
    return status;
}

ucs_status_t uct_gaudi_heap_take(uct_gaudi_heap_t *heap, int may_open,
                                 int quiet, const char *op)
{
    uct_gaudi_ctx_t *ctx;
    ucs_status_t status;
    int log;

    if (ucs_likely(uct_gaudi_heap_ctx(heap) != NULL)) {
        return UCS_OK;
    }

    /* without heap->lock: an open waits out a device in reset */
    status = uct_gaudi_heap_take_ctx(heap, may_open, &ctx);

    pthread_mutex_lock(&heap->lock);
    if (heap->ctx != NULL) {
        /* another thread took it meanwhile: the same context */
        if (status == UCS_OK) {
            uct_gaudi_ctx_put(ctx);
        }
        status = UCS_OK;
    } else if (status == UCS_OK) {
        status = uct_gaudi_heap_attach(heap, ctx);
        if (status != UCS_OK) {
            uct_gaudi_ctx_put(ctx);
        }
    }

    log = (status != UCS_OK) && !quiet && !heap->take_logged;
    if (log) {
        heap->take_logged = 1;
    }
    pthread_mutex_unlock(&heap->lock);

    if (log) {
        ucs_error("gaudi %s (%s): %s: %s", heap->info->name,
                  heap->info->node_name, op,
                  (status == UCS_ERR_NO_DEVICE) ?
                  "no Gaudi device is in use in this process: the "
                  "application holds none (SynapseAI has not acquired "
                  "one) and UCX opens one only to allocate device memory" :
                  ucs_status_string(status));
    } else if (status != UCS_OK) {
        ucs_debug("gaudi %s: %s: device not taken: %s", heap->info->name,
                  op, ucs_status_string(status));
    }
    return status;
}

static ucs_status_t uct_gaudi_heap_create(uct_gaudi_ctx_t *ctx,
                                          uct_gaudi_heap_t **heap_p)
{
    uct_gaudi_heap_t *heap;
    ucs_status_t status;

    heap = ucs_calloc(1, sizeof(*heap), "gaudi_heap");
    if (heap == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    if (ctx != NULL) {
        heap->info = ctx->info;
    } else {
        status = uct_gaudi_ctx_expected(&heap->info);
        if (status != UCS_OK) {
            goto err_free;
        }
    }

    pthread_mutex_init(&heap->lock, NULL);
    ucs_list_head_init(&heap->chunks);
    ucs_list_head_init(&heap->deferred);
    ucs_list_head_init(&heap->retained);
    heap->uuid        = ucs_generate_uuid((uintptr_t)heap);
    heap->host_page   = ucs_get_page_size();
    heap->open_status = UCS_OK;
    heap->device_mem  = UCT_GAUDI_DEVICE_MEM_AUTO;
    heap->registry    = kh_init(uct_gaudi_memh_set);
    if (heap->registry == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err_lock;
    }

    status = ucs_pgtable_init(&heap->bufs, uct_gaudi_heap_pgt_dir_alloc,
                              uct_gaudi_heap_pgt_dir_release);
    if (status != UCS_OK) {
        goto err_registry;
    }

    status = uct_gaudi_heap_layout(heap);
    if (status != UCS_OK) {
        goto err_pgt;
    }

    if (ctx != NULL) {
        /* the heap's own reference */
        status = uct_gaudi_ctx_get(ctx->info->index, &ctx);
        if (status != UCS_OK) {
            goto err_pgt;
        }
        status = uct_gaudi_heap_attach(heap, ctx);
        if (status != UCS_OK) {
            uct_gaudi_ctx_put(ctx);
            goto err_pgt;
        }
    }

    ucs_debug("gaudi %s: memory window [0x%" PRIx64 ", 0x%" PRIx64 "), "
              "allocation chunk %" PRIu64 " bytes, device %s",
              heap->info->name, heap->win_start, heap->win_end,
              heap->chunk_size, (ctx != NULL) ? "taken" : "not taken yet");
    *heap_p = heap;
    return UCS_OK;

err_pgt:
    ucs_pgtable_cleanup(&heap->bufs);
err_registry:
    kh_destroy(uct_gaudi_memh_set, heap->registry);
err_lock:
    pthread_mutex_destroy(&heap->lock);
err_free:
    ucs_free(heap);
    return status;
}

static void uct_gaudi_heap_destroy(uct_gaudi_heap_t *heap)
{
    uct_gaudi_chunk_t *chunk, *tmp;

    ucs_list_for_each_safe(chunk, tmp, &heap->chunks, list) {
        if (uct_gaudi_heap_ranged(heap)) {
            ucs_list_del(&chunk->list);
            uct_gaudi_chunk_delete(chunk);
        } else if (uct_gaudi_ctx_owned(heap->ctx)) {
            uct_gaudi_chunk_destroy(heap, chunk);
        } else {
            ucs_list_del(&chunk->list);   /* the parent's, not ours */
            uct_gaudi_chunk_delete(chunk);
        }
    }
    if (heap->ctx != NULL) {
        uct_gaudi_heap_drop_deferred(heap);
    }
    if ((heap->ctx != NULL) && uct_gaudi_ctx_owned(heap->ctx)) {
        uct_gaudi_heap_retry_retained(heap);
    }
    ucs_list_for_each_safe(chunk, tmp, &heap->retained, list) {
        /* left to SynapseAI's release of the device (gaudi_mem.h) */
        ucs_list_del(&chunk->list);
        uct_gaudi_chunk_delete(chunk);
    }
    uct_gaudi_heap_unborrow_syn(heap);
    ucs_pgtable_cleanup(&heap->bufs);
    kh_destroy(uct_gaudi_memh_set, heap->registry);
    pthread_mutex_destroy(&heap->lock);
    if (heap->ctx != NULL) {
        uct_gaudi_ctx_put(heap->ctx);
    }
    ucs_free(heap);
}

ucs_status_t uct_gaudi_heap_get(uct_gaudi_ctx_t *ctx,
                                uct_gaudi_heap_t **heap_p)
{
    uct_gaudi_heap_t *heap;
    ucs_status_t status = UCS_OK;

    pthread_mutex_lock(&uct_gaudi_heap_global_lock);
    heap = uct_gaudi_heap_global;
    if (heap == NULL) {
        status = uct_gaudi_heap_create(ctx, &uct_gaudi_heap_global);
    } else if ((ctx != NULL) && (heap->ctx != ctx)) {
        pthread_mutex_lock(&heap->lock);
        if (heap->ctx != NULL) {
            ucs_error("gaudi %s: this process already uses device %s for "
                      "memory", ctx->info->name, heap->ctx->info->name);
            status = UCS_ERR_ALREADY_EXISTS;
        } else {
            status = uct_gaudi_ctx_get(ctx->info->index, &ctx);
            if (status == UCS_OK) {
                status = uct_gaudi_heap_attach(heap, ctx);
                if (status != UCS_OK) {
                    uct_gaudi_ctx_put(ctx);
                }
            }
        }
        pthread_mutex_unlock(&heap->lock);
    }
    if (status == UCS_OK) {
        uct_gaudi_heap_global->refcount++;
        *heap_p = uct_gaudi_heap_global;
    }
    pthread_mutex_unlock(&uct_gaudi_heap_global_lock);
    return status;
}

ucs_status_t uct_gaudi_heap_md_get(uct_gaudi_heap_t **heap_p)
{
    ucs_status_t status;

    /* the device is not taken here (docs/base.md, "Ownership") */
    if (uct_gaudi_device_info() == NULL) {
        return UCS_ERR_NO_DEVICE;
    }

    status = uct_gaudi_heap_get(NULL, heap_p);
    if (status != UCS_OK) {
        return status;
    }

    /* but one the application holds already is borrowed (that opens
     * nothing), so that the MD describes it from the start */
    (void)uct_gaudi_heap_take(*heap_p, 0, 1, "memory domain open");
    return UCS_OK;
}

void uct_gaudi_heap_put(uct_gaudi_heap_t *heap)
{
    pthread_mutex_lock(&uct_gaudi_heap_global_lock);
    ucs_assert(heap->refcount > 0);
    /* Buffers outlive their MD (UCX allows it): keep the heap for them */
    if ((--heap->refcount == 0) && (heap->bufs.num_regions == 0)) {
        /* out of the registry, then destroyed without its lock: the
         * teardown may wait for deferred chunks (no sleep under a
         * process-wide lock, gaudi_process.h) */
        uct_gaudi_heap_global = NULL;
        pthread_mutex_unlock(&uct_gaudi_heap_global_lock);
        uct_gaudi_heap_destroy(heap);
        return;
    } else {
        /* the MD's ifaces are closed: their imports of our exports too, so
         * a freed chunk waiting for them goes now, not at the next heap
         * operation (the public API's heap lives on) */
        pthread_mutex_lock(&heap->lock);
        uct_gaudi_heap_retry_deferred_fast(heap);
        pthread_mutex_unlock(&heap->lock);
    }
    pthread_mutex_unlock(&uct_gaudi_heap_global_lock);
}

uct_gaudi_heap_t *uct_gaudi_heap_peek(void)
{
    return uct_gaudi_heap_global;
}


/* Allocation */

/* The smallest retained chunk (gaudi_mem.h) of at least @a size, back in
 * use; a larger one serves a shared chunk or one large buffer whole */
static uct_gaudi_chunk_t *uct_gaudi_heap_reuse(uct_gaudi_heap_t *heap,
                                               uint64_t size, int dedicated)
{
    uct_gaudi_chunk_t *chunk, *best = NULL;

    ucs_list_for_each(chunk, &heap->retained, list) {
        if ((chunk->size >= size) &&
            ((best == NULL) || (chunk->size < best->size))) {
            best = chunk;
        }
    }
    if (best == NULL) {
        return NULL;
    }

    ucs_list_del(&best->list);
    ucs_list_add_tail(&heap->chunks, &best->list);
    best->dedicated = dedicated;
    ucs_debug("gaudi %s: reusing retained SynapseAI chunk 0x%" PRIx64
              " (%" PRIu64 " bytes) for %" PRIu64 " bytes",
              uct_gaudi_heap_name(heap), best->ptr, best->size, size);
    return best;
}

/* Shared chunk with room for @a size, a retained one, or a new one */
static ucs_status_t
uct_gaudi_heap_place(uct_gaudi_heap_t *heap, uint64_t size,
                     uct_gaudi_chunk_t **chunk_p, uint64_t *off_p)
{
    uct_gaudi_chunk_t *chunk;
    uint64_t chunk_size;
    ucs_status_t status;
    int dedicated;

    if (!uct_gaudi_heap_ranged(heap)) {
        /* half a page or more: whole pages of its own, no fragmentation */
        dedicated = (size >= heap->chunk_size / 2);
        if (!dedicated) {
            ucs_list_for_each(chunk, &heap->chunks, list) {
                if (!chunk->dedicated &&
                    (uct_gaudi_chunk_take(chunk, size, off_p) == UCS_OK)) {
                    *chunk_p = chunk;
                    return UCS_OK;
                }
            }
        }

        chunk_size = ucs_align_up(size, (dedicated &&
                                         (heap->device_mem ==
                                          UCT_GAUDI_DEVICE_MEM_SYNAPSE)) ?
                                        heap->host_page : heap->chunk_size);
        chunk = uct_gaudi_heap_reuse(heap, chunk_size, dedicated);
        if (chunk == NULL) {
            status = uct_gaudi_chunk_create(heap, chunk_size, dedicated,
                                            &chunk);
            if (status != UCS_OK) {
                return status;
            }
        }
    } else {
        chunk = ucs_list_head(&heap->chunks, uct_gaudi_chunk_t, list);
    }

    status = uct_gaudi_chunk_take(chunk, size, off_p);
    if ((status != UCS_OK) && (chunk->nbufs == 0) &&
        !uct_gaudi_heap_ranged(heap)) {
        uct_gaudi_chunk_destroy(heap, chunk);
    }
    *chunk_p = chunk;
    return status;
}

static void uct_gaudi_heap_unplace(uct_gaudi_heap_t *heap,
                                   uct_gaudi_chunk_t *chunk,
                                   uint64_t off, uint64_t size)
{
    if (uct_gaudi_chunk_give(chunk, off, size) != UCS_OK) {
        ucs_error("gaudi %s: out of host memory: %" PRIu64 " bytes of "
                  "device memory are lost", uct_gaudi_heap_name(heap),
                  size);
        chunk->used -= size;
        chunk->nbufs--;
    }
    if ((chunk->nbufs == 0) && !uct_gaudi_heap_ranged(heap)) {
        uct_gaudi_chunk_destroy(heap, chunk);
    }
}

/* Gaudi1 ALLOC/FREE only keep the driver's usage accounting (facts 3.2) */
static ucs_status_t uct_gaudi_heap_account(uct_gaudi_heap_t *heap,
                                           uint64_t size, int add)
{
    uint64_t handle;
    ucs_status_t status;

    if (!uct_gaudi_heap_ranged(heap)) {
        return UCS_OK;
    }

    pthread_mutex_lock(&heap->ctx->lock);
    if (add) {
        status = uct_gaudi_hl_mem_alloc(&heap->ctx->hl, size, 0, &handle);
    } else {
        status = uct_gaudi_hl_mem_free_size(&heap->ctx->hl, size);
    }
    pthread_mutex_unlock(&heap->ctx->lock);
    return status;
}

ucs_status_t uct_gaudi_heap_alloc(uct_gaudi_heap_t *heap,
                                  size_t *length_p,
                                  uct_gaudi_buf_t **buf_p)
{
    const uct_gaudi_dev_info_t *info;
    size_t length = *length_p;
    uct_gaudi_chunk_t *chunk;
    uct_gaudi_buf_t *buf;
    uint64_t size, off;
    ucs_status_t status;

    /* the one operation that may open (or acquire) the device */
    status = uct_gaudi_heap_take(heap, 1, 0, "device memory allocation");
    if (status != UCS_OK) {
        return status;
    }

    info = heap->info;
    if (length == 0) {
        ucs_error("gaudi %s (%s): cannot allocate 0 bytes of device memory",
                  info->name, info->node_name);
        return UCS_ERR_INVALID_PARAM;
    }
    if (length > info->hw_ip.u61.dram_size) {
        ucs_error("gaudi %s (%s): cannot allocate %zu bytes: the device has "
                  "%" PRIu64 " bytes of user DRAM", info->name,
                  info->node_name, length, (uint64_t)info->hw_ip.u61.dram_size);
        return UCS_ERR_NO_MEMORY;
    }
    if (!uct_gaudi_heap_owned(heap, "device memory allocation")) {
        return UCS_ERR_NO_DEVICE;
    }
    if (!uct_gaudi_heap_can_alloc(heap)) {
        ucs_error("gaudi %s (%s): no device memory allocation on Gaudi1 with "
                  "the fd from %s: the driver's ALLOC only counts bytes and "
                  "the fd's owner places its buffers in the same DRAM, which "
                  "the driver cannot tell apart; allocate with the fd's owner "
                  "and register that memory instead, or let UCX open the "
                  "device", info->name, info->node_name, heap->ctx->source);
        return UCS_ERR_UNSUPPORTED;
    }

    size = ucs_align_up_pow2(length, UCT_GAUDI_MEM_ALLOC_ALIGN);
    buf  = ucs_calloc(1, sizeof(*buf), "gaudi_heap_buf");
    if (buf == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    pthread_mutex_lock(&heap->lock);
    uct_gaudi_heap_retry_deferred_fast(heap);
    status = uct_gaudi_heap_place(heap, size, &chunk, &off);
    if (status != UCS_OK) {
        ucs_error("gaudi %s (%s): failed to allocate %zu bytes of device "
                  "memory: %s", info->name, info->node_name, length,
                  ucs_status_string(status));
        goto err_unlock;
    }

    status = uct_gaudi_heap_account(heap, size, 1);
    if (status != UCS_OK) {
        goto err_unplace;
    }

    buf->super.start   = chunk->ptr + off;
    buf->super.end     = buf->super.start + size;
    buf->chunk         = chunk;
    buf->offset        = off;
    buf->size          = size;
    buf->dmabuf_fd     = -1;
    buf->memh.tag      = UCT_GAUDI_MEMH_TAG;
    buf->memh.kind     = UCT_GAUDI_MEMH_ALLOC;
    buf->memh.address  = buf->super.start;
    buf->memh.length   = size;
    buf->memh.dma_base = chunk->dma + off;
    buf->memh.buf      = buf;

    status = ucs_pgtable_insert(&heap->bufs, &buf->super);
    if (status != UCS_OK) {
        ucs_error("gaudi %s: failed to record buffer 0x%" PRIx64 ": %s",
                  info->name, buf->super.start, ucs_status_string(status));
        (void)uct_gaudi_heap_account(heap, size, 0);
        goto err_unplace;
    }

    uct_gaudi_heap_memh_add(heap, &buf->memh);
    pthread_mutex_unlock(&heap->lock);

    UCT_GAUDI_MEM_COUNTER_ADD(heap, alloc_count, 1);
    UCT_GAUDI_MEM_COUNTER_ADD(heap, alloc_bytes, size);
    ucs_trace("gaudi %s: allocated %zu bytes at 0x%" PRIx64, info->name,
              length, buf->super.start);
    *length_p = size;
    *buf_p    = buf;
    return UCS_OK;

err_unplace:
    uct_gaudi_heap_unplace(heap, chunk, off, size);
err_unlock:
    pthread_mutex_unlock(&heap->lock);
    ucs_free(buf);
    return status;
}

static void uct_gaudi_buf_close_dmabuf(uct_gaudi_heap_t *heap,
                                       uct_gaudi_buf_t *buf)
{
    if (buf->dmabuf_fd >= 0) {
        close(buf->dmabuf_fd);
        buf->dmabuf_fd = -1;
        UCT_GAUDI_MEM_COUNTER_ADD(heap, dmabuf_open, -1);
    }
}

ucs_status_t uct_gaudi_heap_free(uct_gaudi_heap_t *heap,
                                 uct_gaudi_buf_t *buf)
{
    int owned = (uct_gaudi_ctx_owned(heap->ctx));
    ucs_status_t status;

    /* the caller validated buf (registry) with heap->lock held */
    uct_gaudi_heap_memh_del(heap, &buf->memh);
    status = ucs_pgtable_remove(&heap->bufs, &buf->super);
    ucs_assert_always(status == UCS_OK);
    uct_gaudi_buf_close_dmabuf(heap, buf);
    buf->memh.tag = 0;

    if (owned) {
        /* older deferred chunks first: the one this free may defer has
         * just been tried */
        uct_gaudi_heap_retry_deferred_fast(heap);
        (void)uct_gaudi_heap_account(heap, buf->size, 0);
        uct_gaudi_heap_unplace(heap, buf->chunk, buf->offset, buf->size);
    } else {
        /* fork child: forget the buffer, never touch the parent's device */
        ucs_debug("gaudi %s: fork child drops buffer 0x%" PRIx64
                  " without driver calls", uct_gaudi_heap_name(heap),
                  buf->super.start);
    }

    UCT_GAUDI_MEM_COUNTER_ADD(heap, free_count, 1);
    UCT_GAUDI_MEM_COUNTER_ADD(heap, alloc_bytes, -buf->size);
    ucs_free(buf);
    return UCS_OK;
}

uct_gaudi_buf_t *uct_gaudi_heap_buf_at(uct_gaudi_heap_t *heap,
                                       uint64_t ptr)
{
    ucs_pgt_region_t *region = ucs_pgtable_lookup(&heap->bufs, ptr);

    if ((region == NULL) || (region->start != ptr)) {
        return NULL;
    }
    return ucs_derived_of(region, uct_gaudi_buf_t);
}

uint64_t uct_gaudi_heap_dma_of(const uct_gaudi_heap_t *heap,
                               uint64_t ptr)
{
    return uct_gaudi_heap_is_gaudi1(heap) ?
           (ptr - UCT_GAUDI_MEM_G1_WINDOW) : ptr;
}

static int uct_gaudi_chunk_list_has(ucs_list_link_t *list, uint64_t addr)
{
    uct_gaudi_chunk_t *chunk;

    ucs_list_for_each(chunk, list, list) {
        if ((addr >= chunk->ptr) && (addr - chunk->ptr < chunk->size)) {
            return 1;
        }
    }
    return 0;
}

/* Whether @a addr is inside one of our chunks (freed or not, deferred and
 * retained ones included) */
static int uct_gaudi_heap_in_chunk(uct_gaudi_heap_t *heap,
                                   uint64_t addr)
{
    return uct_gaudi_chunk_list_has(&heap->chunks, addr) ||
           uct_gaudi_chunk_list_has(&heap->deferred, addr) ||
           uct_gaudi_chunk_list_has(&heap->retained, addr);
}

ucs_status_t uct_gaudi_heap_resolve(uct_gaudi_heap_t *heap,
                                    uint64_t addr, size_t len,
                                    uct_gaudi_dev_range_t *range)
{
    ucs_pgt_region_t *region;
    uct_gaudi_buf_t *buf;
    ucs_status_t status = UCS_OK;

    /* device memory the process has at all: its device is taken, or the
     * application holds one (its memory, e.g. synDeviceMalloc's) */
    if (uct_gaudi_heap_take(heap, 0, 1, "device memory") != UCS_OK) {
        return UCS_ERR_INVALID_ADDR;
    }

    pthread_mutex_lock(&heap->lock);
    region = ucs_pgtable_lookup(&heap->bufs, addr);
    if (region != NULL) {
        buf = ucs_derived_of(region, uct_gaudi_buf_t);
        if (len > region->end - addr) {
            status = UCS_ERR_INVALID_ADDR;  /* runs past the allocation */
        } else {
            range->base     = region->start;
            range->length   = buf->size;
            range->dma_base = buf->memh.dma_base;
            range->buf      = buf;
        }
    } else if (uct_gaudi_heap_is_gaudi1(heap) ||
               uct_gaudi_heap_in_chunk(heap, addr) ||
               heap->ctx->hl.owns_fd) {
        /* Not allocated: freed, or no other allocator shares this context
         * (we opened the device ourselves) */
        status = UCS_ERR_INVALID_ADDR;
    } else {
        /* DRAM VA of the application's allocator on the shared fd */
        range->base     = addr;
        range->length   = len;
        range->dma_base = uct_gaudi_heap_dma_of(heap, addr);
        range->buf      = NULL;
    }
    pthread_mutex_unlock(&heap->lock);
    return status;
}

ucs_status_t uct_gaudi_heap_dma_addr(uct_gaudi_heap_t *heap, const void *ptr,
                                     size_t len, uint64_t *dma_addr_p)
{
    uct_gaudi_dev_range_t range;
    ucs_status_t status;

    status = uct_gaudi_heap_resolve(heap, (uintptr_t)ptr, len, &range);
    if (status != UCS_OK) {
        ucs_error("gaudi %s: device range %p length %zu is not inside one "
                  "live allocation", uct_gaudi_heap_name(heap), ptr, len);
        return status;
    }

    *dma_addr_p = range.dma_base + ((uintptr_t)ptr - range.base);
    return UCS_OK;
}

ucs_status_t uct_gaudi_heap_dma_end(uct_gaudi_heap_t *heap, const void *ptr,
                                    size_t len, const char *op,
                                    uct_gaudi_dma_end_t *end)
{
    if (!uct_gaudi_heap_touches_window(heap, (uintptr_t)ptr, len)) {
        end->host = (void*)ptr;
        return UCS_OK;
    }

    if (!uct_gaudi_heap_in_window(heap, (uintptr_t)ptr, len)) {
        ucs_error("gaudi %s: %s: range %p..+%zu is partly Gaudi memory",
                  uct_gaudi_heap_name(heap), op, ptr, len);
        return UCS_ERR_INVALID_ADDR;
    }

    end->host = NULL;
    return uct_gaudi_heap_dma_addr(heap, ptr, len, &end->dma_addr);
}


/* Registry */

void uct_gaudi_heap_memh_add(uct_gaudi_heap_t *heap,
                             uct_gaudi_memh_t *memh)
{
    int ret;

    kh_put(uct_gaudi_memh_set, heap->registry, (uintptr_t)memh, &ret);
    if (ret < 0) {
        ucs_warn("gaudi %s: out of memory: memory handle %p is not checked",
                 uct_gaudi_heap_name(heap), memh);
    }
}

void uct_gaudi_heap_memh_del(uct_gaudi_heap_t *heap,
                             uct_gaudi_memh_t *memh)
{
    uct_gaudi_memh_set_t *set = heap->registry;
    khiter_t it;

    it = kh_get(uct_gaudi_memh_set, set, (uintptr_t)memh);
    if (it != kh_end(set)) {
        kh_del(uct_gaudi_memh_set, set, it);
    }
}

int uct_gaudi_heap_memh_valid(uct_gaudi_heap_t *heap,
                              const void *memh)
{
    uct_gaudi_memh_set_t *set = heap->registry;

    return (memh != NULL) &&
           (kh_get(uct_gaudi_memh_set, set, (uintptr_t)memh) !=
            kh_end(set)) &&
           (((const uct_gaudi_memh_t*)memh)->tag ==
            UCT_GAUDI_MEMH_TAG);
}


/* DMA-BUF export */

/* Whether the DRAM PCI BAR is known not to cover the whole DRAM */
static int uct_gaudi_heap_bar_limited(const uct_gaudi_heap_t *heap)
{
    const uct_gaudi_dev_info_t *info = heap->info;

    return (info->dram_bar_size != 0) &&
           (info->dram_bar_size < info->hw_ip.u61.dram_size);
}

/*
 * Export of the pages around [addr, +len), a piece of SynapseAI's pool on
 * Gaudi2/3: the pool is one driver mapping made at acquire, and the driver
 * exports a page-aligned range of a mapping given by its MAP VA (facts
 * 4.1). *offset_p: of @a addr in the dma-buf. UCS_ERR_UNSUPPORTED (debug)
 * when nothing tells where the pool lies. With the ctx lock.
 */
static ucs_status_t uct_gaudi_heap_pool_export(uct_gaudi_heap_t *heap,
                                               uint64_t addr, size_t len,
                                               int *fd_p, uint64_t *offset_p)
{
    uint64_t page = heap->host_page;
    uct_gaudi_syn_pool_t pool;
    uint64_t start, end;
    ucs_status_t status;

    if (uct_gaudi_heap_is_gaudi1(heap) ||
        (uct_gaudi_syn_pool_find(heap->syn, heap->ctx->hl.fd, addr, len,
                                 &pool) != UCS_OK)) {
        ucs_debug("gaudi %s: 0x%" PRIx64 "+%zu is device memory of unknown "
                  "origin (not the module's, not in SynapseAI's pool): no "
                  "dma-buf", uct_gaudi_heap_name(heap), addr, len);
        return UCS_ERR_UNSUPPORTED;
    }

    start = ucs_align_down(addr - pool.map_va, page);
    end   = ucs_align_up(addr + len - pool.map_va, page);
    status = uct_gaudi_hl_export_dmabuf(&heap->ctx->hl, pool.map_va,
                                        end - start, start,
                                        O_RDWR | O_CLOEXEC, fd_p);
    if (status != UCS_OK) {
        return status;
    }

    *offset_p = addr - pool.map_va - start;
    UCT_GAUDI_MEM_COUNTER_ADD(heap, dmabuf_exports, 1);
    ucs_debug("gaudi %s: exported 0x%" PRIx64 "+%zu as dma-buf fd %d (%s "
              "mapping 0x%" PRIx64 "+0x%" PRIx64 ", %" PRIu64 " bytes)",
              uct_gaudi_heap_name(heap), addr, len, *fd_p, pool.source,
              pool.map_va, start, end - start);
    return UCS_OK;
}

/* Export the pages enclosing @a buf (facts 4.1); keep the fd in buf */
static ucs_status_t uct_gaudi_buf_export(uct_gaudi_heap_t *heap,
                                         uct_gaudi_buf_t *buf)
{
    uint64_t page = heap->host_page;
    uint64_t addr, off, start, end;
    ucs_status_t status;
    int fd;

    if (buf->chunk->syn && !uct_gaudi_heap_is_gaudi1(heap)) {
        /* a piece of SynapseAI's pool mapping, not a MAP of its own */
        pthread_mutex_lock(&heap->ctx->lock);
        status = uct_gaudi_heap_pool_export(heap, buf->super.start,
                                            buf->size, &fd,
                                            &buf->dmabuf_offset);
        pthread_mutex_unlock(&heap->ctx->lock);
        if (status != UCS_OK) {
            return status;
        }
        goto out;
    }

    if (uct_gaudi_heap_is_gaudi1(heap)) {
        /* physical address, offset 0 */
        start = ucs_align_down(buf->memh.dma_base, page);
        end   = ucs_align_up(buf->memh.dma_base + buf->size, page);
        addr  = start;
        off   = 0;
        buf->dmabuf_offset = buf->memh.dma_base - start;
    } else {
        /* the exact MAP VA of the chunk, page-aligned offset and size */
        start = ucs_align_down(buf->offset, page);
        end   = ucs_min(ucs_align_up(buf->offset + buf->size, page),
                        buf->chunk->size);
        addr  = buf->chunk->ptr;
        off   = start;
        buf->dmabuf_offset = buf->offset - start;
    }

    pthread_mutex_lock(&heap->ctx->lock);
    status = uct_gaudi_hl_export_dmabuf(&heap->ctx->hl, addr, end - start,
                                        off, O_RDWR | O_CLOEXEC, &fd);
    pthread_mutex_unlock(&heap->ctx->lock);
    if ((status == UCS_ERR_INVALID_PARAM) && uct_gaudi_heap_bar_limited(heap)) {
        /* the driver checks every page of the allocation (facts 4.1) */
        ucs_error("gaudi %s: buffer 0x%" PRIx64 " cannot be exported: the "
                  "driver exports only device memory whose every page lies "
                  "inside the DRAM PCI BAR, which is %" PRIu64 " MiB of %"
                  PRIu64 " MiB here; memory beyond it cannot be shared with "
                  "other processes", uct_gaudi_heap_name(heap),
                  buf->super.start, heap->info->dram_bar_size >> 20,
                  (uint64_t)heap->info->hw_ip.u61.dram_size >> 20);
    }
    if (status != UCS_OK) {
        return status;
    }

    UCT_GAUDI_MEM_COUNTER_ADD(heap, dmabuf_exports, 1);
    ucs_debug("gaudi %s: exported buffer 0x%" PRIx64 " as dma-buf fd %d "
              "(export 0x%" PRIx64 "+0x%" PRIx64 ", %" PRIu64 " bytes)",
              uct_gaudi_heap_name(heap), buf->super.start, fd, addr, off,
              end - start);
out:
    if (buf->chunk->syn &&
        (uct_gaudi_chunk_note_export(buf->chunk, fd) != 0)) {
        buf->chunk->export_lost = 1;
    }
    buf->dmabuf_fd       = fd;
    buf->chunk->exported = 1;
    UCT_GAUDI_MEM_COUNTER_ADD(heap, dmabuf_open, 1);
    return UCS_OK;
}

/*
 * A dma-buf of device memory the process did not allocate through the
 * module: SynapseAI's, on the device fd the module shares with it. Freed
 * or stale addresses of the module's own chunks are not such memory.
 * With heap->lock.
 */
static ucs_status_t uct_gaudi_heap_foreign_dmabuf(uct_gaudi_heap_t *heap,
                                                  uint64_t addr, size_t len,
                                                  int *fd_p,
                                                  uint64_t *offset_p)
{
    const uct_gaudi_dev_info_t *info = heap->ctx->info;
    ucs_status_t status;

    if (!uct_gaudi_heap_in_window(heap, addr, len) ||
        uct_gaudi_heap_in_chunk(heap, addr) || heap->ctx->hl.owns_fd ||
        (ucs_pgtable_lookup(&heap->bufs, addr) != NULL)) {
        ucs_error("gaudi %s (%s): dma-buf export of [0x%" PRIx64 ", +%zu): "
                  "not inside one live device allocation of this process",
                  info->name, info->node_name, addr, len);
        return UCS_ERR_INVALID_ADDR;
    }

    pthread_mutex_lock(&heap->ctx->lock);
    status = uct_gaudi_heap_pool_export(heap, addr, len, fd_p, offset_p);
    pthread_mutex_unlock(&heap->ctx->lock);
    return status;
}

ucs_status_t uct_gaudi_heap_dmabuf(uct_gaudi_heap_t *heap,
                                   uint64_t addr, size_t len,
                                   int *fd_p, uint64_t *offset_p)
{
    const uct_gaudi_dev_info_t *info = heap->info;
    ucs_pgt_region_t *region;
    uct_gaudi_buf_t *buf;
    ucs_status_t status;
    int fd;

    if (len == 0) {
        ucs_error("gaudi %s (%s): dma-buf export of an empty range",
                  info->name, info->node_name);
        return UCS_ERR_INVALID_PARAM;
    }
    if (!uct_gaudi_heap_owned(heap, "dma-buf export")) {
        return UCS_ERR_NO_DEVICE;
    }

    pthread_mutex_lock(&heap->lock);
    region = ucs_pgtable_lookup(&heap->bufs, addr);
    if ((region == NULL) || (len > region->end - addr)) {
        status = uct_gaudi_heap_foreign_dmabuf(heap, addr, len, fd_p,
                                               offset_p);
        goto out;
    }

    buf = ucs_derived_of(region, uct_gaudi_buf_t);
    if (buf->dmabuf_fd < 0) {
        status = uct_gaudi_buf_export(heap, buf);
        if (status != UCS_OK) {
            goto out;
        }
    }

    fd = fcntl(buf->dmabuf_fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {
        ucs_error("gaudi %s: dup of dma-buf fd %d failed: %m", info->name,
                  buf->dmabuf_fd);
        status = UCS_ERR_NO_RESOURCE;
        goto out;
    }

    *fd_p     = fd;
    *offset_p = buf->dmabuf_offset + (addr - region->start);
    status    = UCS_OK;
out:
    pthread_mutex_unlock(&heap->lock);
    return status;
}

void uct_gaudi_heap_dmabuf_retire(uct_gaudi_heap_t *heap, uint64_t addr,
                                  int fd)
{
    struct stat kept, given;
    ucs_pgt_region_t *region;
    uct_gaudi_buf_t *buf;

    if (fstat(fd, &given) < 0) {
        return;
    }

    pthread_mutex_lock(&heap->lock);
    region = ucs_pgtable_lookup(&heap->bufs, addr);
    if (region != NULL) {
        buf = ucs_derived_of(region, uct_gaudi_buf_t);
        if ((buf->dmabuf_fd >= 0) && (fstat(buf->dmabuf_fd, &kept) == 0) &&
            (kept.st_ino == given.st_ino) && (kept.st_dev == given.st_dev)) {
            ucs_debug("gaudi %s: buffer 0x%" PRIx64 ": export fd %d "
                      "retired", uct_gaudi_heap_name(heap),
                      buf->super.start, buf->dmabuf_fd);
            close(buf->dmabuf_fd);
            buf->dmabuf_fd = -1;
        }
    }
    pthread_mutex_unlock(&heap->lock);
}
