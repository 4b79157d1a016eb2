/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Internals of the device heap shared by its files (mem/gaudi_mem_*.c):
 * chunks and their free lists, deferred release, the device take. Not for
 * other layers: they use gaudi_mem.h. The unit tests of test/gtest/mem
 * call these directly.
 *
 * Locking: heap->lock guards the heap's own data (chunk lists, the table
 * of buffers, the registry, take state) and is taken only here, inside
 * mem/'s functions. The device calls under it take no lock of the device
 * context: the driver's MEMORY ioctl (ALLOC, FREE, MAP, UNMAP, EXPORT) is
 * safe from many threads, its state being locked inside (K612 memory.c:
 * 173, 360 vm->idr_lock; 539, 642 va_range->lock; 1185, 1352 mmu_lock;
 * 1218, 1289, 1795 ctx->mem_hash_lock; K61 memory.c:171, 360, 1207, 1238,
 * 1297, 1359), and so are synDeviceMalloc/Free (emulated under synsim's
 * lock, test/emu/synsim/synsim_devmem.c:142, 167).
 */

#ifndef UCT_GAUDI_MEM_INT_H_
#define UCT_GAUDI_MEM_INT_H_

#include <uct/gaudi/mem/gaudi_mem.h>

#include <inttypes.h>

BEGIN_C_DECLS

/* A free range of a chunk */
typedef struct uct_gaudi_extent {
    ucs_list_link_t list;
    uint64_t        offset;
    uint64_t        length;
} uct_gaudi_extent_t;


static inline int uct_gaudi_heap_is_gaudi1(const uct_gaudi_heap_t *heap)
{
    return heap->info->asic == UCT_GAUDI_ASIC_GAUDI1;
}

/* Gaudi1 with driver memory: one chunk over the user DRAM range, whose
 * ALLOC only counts bytes (facts 3.2) */
static inline int uct_gaudi_heap_ranged(const uct_gaudi_heap_t *heap)
{
    return uct_gaudi_heap_is_gaudi1(heap) &&
           (heap->device_mem == UCT_GAUDI_DEVICE_MEM_DRIVER);
}


/* Chunks (gaudi_mem_chunk.c); heap->lock held unless said otherwise */

/* Free lists: first fit, sorted by offset, coalesced. take: the offset of
 * @a size bytes, else UCS_ERR_NO_MEMORY; give: back, merged with its
 * neighbours (UCS_ERR_NO_MEMORY: no host memory for a new extent) */
ucs_status_t uct_gaudi_chunk_take(uct_gaudi_chunk_t *chunk,
                                  uint64_t size, uint64_t *off_p);

ucs_status_t uct_gaudi_chunk_give(uct_gaudi_chunk_t *chunk,
                                  uint64_t off, uint64_t size);

/* A chunk's bookkeeping only: [ptr, +size) free, DMA address @a dma */
uct_gaudi_chunk_t *
uct_gaudi_chunk_new(uint64_t ptr, uint64_t dma, uint64_t size);

void uct_gaudi_chunk_delete(uct_gaudi_chunk_t *chunk);

/* Remember a dma-buf file exported from a SynapseAI chunk; 0 or -1 */
int uct_gaudi_chunk_note_export(uct_gaudi_chunk_t *chunk, int fd);

/* A new chunk of device memory (the device taken), in heap->chunks */
ucs_status_t uct_gaudi_chunk_create(uct_gaudi_heap_t *heap,
                                    uint64_t size, int dedicated,
                                    uct_gaudi_chunk_t **chunk_p);

/* An empty chunk goes back, or to heap->deferred or heap->retained */
void uct_gaudi_chunk_destroy(uct_gaudi_heap_t *heap,
                             uct_gaudi_chunk_t *chunk);

/* Retry the releases of heap->deferred, heap->retained; owner only */
void uct_gaudi_heap_retry_deferred(uct_gaudi_heap_t *heap);

void uct_gaudi_heap_retry_retained(uct_gaudi_heap_t *heap);

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

/* Teardown: the deferred chunks, after a short grace period */
void uct_gaudi_heap_drop_deferred(uct_gaudi_heap_t *heap);

/* Whether @a addr is inside one of the heap's chunks (any list) */
int uct_gaudi_heap_in_chunk(uct_gaudi_heap_t *heap, uint64_t addr);


/* Lifetime (gaudi_mem_heap.c) and device take (gaudi_mem_take.c) */

/* Window and chunk size of the heap's device (Gaudi1: its one chunk) */
ucs_status_t uct_gaudi_heap_layout(uct_gaudi_heap_t *heap);

/* Make @a ctx the heap's device; heap->lock held or the heap not shared */
ucs_status_t uct_gaudi_heap_attach(uct_gaudi_heap_t *heap,
                                   uct_gaudi_ctx_t *ctx);

/* Drop the heap's own SynapseAI reference (after its chunks) */
void uct_gaudi_heap_unborrow_syn(uct_gaudi_heap_t *heap);


/* Buffers and the registry (gaudi_mem_alloc.c, gaudi_mem_heap.c);
 * heap->lock held */

/* Free a buffer (validated by the caller) */
ucs_status_t uct_gaudi_heap_free(uct_gaudi_heap_t *heap,
                                 uct_gaudi_buf_t *buf);

/* Buffer whose first byte is @a ptr, or NULL */
uct_gaudi_buf_t *uct_gaudi_heap_buf_at(uct_gaudi_heap_t *heap,
                                       uint64_t ptr);

void uct_gaudi_heap_memh_add(uct_gaudi_heap_t *heap,
                             uct_gaudi_memh_t *memh);

void uct_gaudi_heap_memh_del(uct_gaudi_heap_t *heap,
                             uct_gaudi_memh_t *memh);

/* Whether @a memh is live */
int uct_gaudi_heap_memh_valid(uct_gaudi_heap_t *heap,
                              const void *memh);

END_C_DECLS

#endif
