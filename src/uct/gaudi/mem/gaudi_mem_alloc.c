/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Buffers of the device heap: allocation and free (placing buffers in
 * chunks), and resolution of device addresses through the allocation
 * table. "facts N.M" is a section of docs/driver-facts.md. Design:
 * docs/md.md.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/mem/gaudi_mem_int.h>

#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <unistd.h>


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

    if (add) {
        status = uct_gaudi_hl_mem_alloc(&heap->ctx->hl, size, 0, &handle);
    } else {
        status = uct_gaudi_hl_mem_free_size(&heap->ctx->hl, size);
    }
    return status;
}

/* Whether @a length bytes of device memory may be allocated at all */
static ucs_status_t uct_gaudi_heap_alloc_check(uct_gaudi_heap_t *heap,
                                               size_t length)
{
    const uct_gaudi_dev_info_t *info = heap->info;

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
    return UCS_OK;
}

/* A buffer of @a size bytes at @a off in @a chunk, with its own memh */
static void uct_gaudi_buf_init(uct_gaudi_buf_t *buf, uct_gaudi_chunk_t *chunk,
                               uint64_t off, uint64_t size)
{
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
}

/* Place @a buf (@a size bytes, @a length asked) in a chunk and record it in
 * the table and the registry; heap->lock held */
static ucs_status_t uct_gaudi_heap_alloc_locked(uct_gaudi_heap_t *heap,
                                                size_t length, uint64_t size,
                                                uct_gaudi_buf_t *buf)
{
    const uct_gaudi_dev_info_t *info = heap->info;
    uct_gaudi_chunk_t *chunk;
    ucs_status_t status;
    uint64_t off;

    uct_gaudi_heap_retry_deferred_fast(heap);
    status = uct_gaudi_heap_place(heap, size, &chunk, &off);
    if (status != UCS_OK) {
        ucs_error("gaudi %s (%s): failed to allocate %zu bytes of device "
                  "memory: %s", info->name, info->node_name, length,
                  ucs_status_string(status));
        return status;
    }

    status = uct_gaudi_heap_account(heap, size, 1);
    if (status != UCS_OK) {
        goto err_unplace;
    }

    uct_gaudi_buf_init(buf, chunk, off, size);
    status = ucs_pgtable_insert(&heap->bufs, &buf->super);
    if (status != UCS_OK) {
        ucs_error("gaudi %s: failed to record buffer 0x%" PRIx64 ": %s",
                  info->name, buf->super.start, ucs_status_string(status));
        (void)uct_gaudi_heap_account(heap, size, 0);
        goto err_unplace;
    }

    uct_gaudi_heap_memh_add(heap, &buf->memh);
    return UCS_OK;

err_unplace:
    uct_gaudi_heap_unplace(heap, chunk, off, size);
    return status;
}

ucs_status_t uct_gaudi_heap_alloc(uct_gaudi_heap_t *heap,
                                  size_t *length_p,
                                  uct_gaudi_buf_t **buf_p)
{
    size_t length = *length_p;
    uct_gaudi_buf_t *buf;
    ucs_status_t status;
    uint64_t size;

    /* the one operation that may open (or acquire) the device */
    status = uct_gaudi_heap_take(heap, 1, 0, "device memory allocation");
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gaudi_heap_alloc_check(heap, length);
    if (status != UCS_OK) {
        return status;
    }

    size = ucs_align_up_pow2(length, UCT_GAUDI_MEM_ALLOC_ALIGN);
    buf  = ucs_calloc(1, sizeof(*buf), "gaudi_heap_buf");
    if (buf == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    pthread_mutex_lock(&heap->lock);
    status = uct_gaudi_heap_alloc_locked(heap, length, size, buf);
    pthread_mutex_unlock(&heap->lock);
    if (status != UCS_OK) {
        ucs_free(buf);
        return status;
    }

    UCT_GAUDI_MEM_COUNTER_ADD(heap, alloc_count, 1);
    UCT_GAUDI_MEM_COUNTER_ADD(heap, alloc_bytes, size);
    ucs_trace("gaudi %s: allocated %zu bytes at 0x%" PRIx64,
              uct_gaudi_heap_name(heap), length, buf->super.start);
    *length_p = size;
    *buf_p    = buf;
    return UCS_OK;
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

ucs_status_t uct_gaudi_heap_free_memh(uct_gaudi_heap_t *heap, void *memh,
                                      size_t *length_p)
{
    uct_gaudi_memh_t *gmemh = memh;
    ucs_status_t status;

    pthread_mutex_lock(&heap->lock);
    if (!uct_gaudi_heap_memh_valid(heap, memh) ||
        (gmemh->kind != UCT_GAUDI_MEMH_ALLOC)) {
        status = UCS_ERR_INVALID_PARAM;
    } else {
        *length_p = gmemh->length;
        status    = uct_gaudi_heap_free(heap, gmemh->buf);
    }
    pthread_mutex_unlock(&heap->lock);
    return status;
}

ucs_status_t uct_gaudi_heap_free_ptr(uct_gaudi_heap_t *heap, uint64_t ptr)
{
    ucs_status_t status = UCS_ERR_INVALID_ADDR;
    uct_gaudi_buf_t *buf;

    pthread_mutex_lock(&heap->lock);
    buf = uct_gaudi_heap_buf_at(heap, ptr);
    if (buf != NULL) {
        status = uct_gaudi_heap_free(heap, buf);
    }
    pthread_mutex_unlock(&heap->lock);
    return status;
}

size_t uct_gaudi_heap_buf_size(uct_gaudi_heap_t *heap, uint64_t ptr)
{
    uct_gaudi_buf_t *buf;
    size_t size;

    pthread_mutex_lock(&heap->lock);
    buf  = uct_gaudi_heap_buf_at(heap, ptr);
    size = (buf != NULL) ? buf->size : 0;
    pthread_mutex_unlock(&heap->lock);
    return size;
}

uint64_t uct_gaudi_heap_dma_of(const uct_gaudi_heap_t *heap,
                               uint64_t ptr)
{
    return uct_gaudi_heap_is_gaudi1(heap) ?
           (ptr - UCT_GAUDI_MEM_G1_WINDOW) : ptr;
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
