/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Chunks of the device heap: their free lists (extents), where their device
 * memory comes from and goes back to, and the release of empty chunks the
 * driver or an export still holds (deferred, retained; gaudi_mem.h).
 * "facts N.M" is a section of docs/driver-facts.md. Design: docs/md.md.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/mem/gaudi_mem_int.h>
#include <uct/gaudi/syn/gaudi_syn.h>

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>


/* Heap teardown waits at most this long for deferred chunks to become
 * releasable (a peer importer is often closing at the same time) */
#define UCT_GAUDI_HEAP_TEARDOWN_GRACE_MS  100
#define UCT_GAUDI_HEAP_TEARDOWN_STEP_MS   5

/* Chunk free lists: first fit, sorted by offset, coalesced */

ucs_status_t uct_gaudi_chunk_take(uct_gaudi_chunk_t *chunk,
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

ucs_status_t uct_gaudi_chunk_give(uct_gaudi_chunk_t *chunk,
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

uct_gaudi_chunk_t *
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

void uct_gaudi_chunk_delete(uct_gaudi_chunk_t *chunk)
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
int uct_gaudi_chunk_note_export(uct_gaudi_chunk_t *chunk, int fd)
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
 * ASIC), a piece of SynapseAI's pool.
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

/* Give a chunk's memory back to where it came from */
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

ucs_status_t uct_gaudi_chunk_create(uct_gaudi_heap_t *heap,
                                    uint64_t size, int dedicated,
                                    uct_gaudi_chunk_t **chunk_p)
{
    uct_gaudi_chunk_t *chunk;
    uint64_t handle, va;
    ucs_status_t status;
    int syn;

    status = uct_gaudi_chunk_provide(heap, size, &handle, &va, &syn);
    if (status != UCS_OK) {
        return status;
    }

    /* Gaudi1 (SynapseAI's memory): va is a physical address (facts 3.2) */
    chunk = uct_gaudi_chunk_new(uct_gaudi_heap_is_gaudi1(heap) ?
                                (UCT_GAUDI_MEM_G1_WINDOW + va) : va, va,
                                size);
    if (chunk == NULL) {
        uct_gaudi_chunk_unprovide(heap, syn, handle, va);
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
void uct_gaudi_chunk_destroy(uct_gaudi_heap_t *heap,
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
void uct_gaudi_heap_retry_deferred(uct_gaudi_heap_t *heap)
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
void uct_gaudi_heap_retry_retained(uct_gaudi_heap_t *heap)
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
void uct_gaudi_heap_drop_deferred(uct_gaudi_heap_t *heap)
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
int uct_gaudi_heap_in_chunk(uct_gaudi_heap_t *heap,
                            uint64_t addr)
{
    return uct_gaudi_chunk_list_has(&heap->chunks, addr) ||
           uct_gaudi_chunk_list_has(&heap->deferred, addr) ||
           uct_gaudi_chunk_list_has(&heap->retained, addr);
}
