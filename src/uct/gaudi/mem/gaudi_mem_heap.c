/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The device heap's lifetime: the process's one heap (its registry), its
 * layout on the device, creation and teardown, and the registry of live
 * memory handles. "facts N.M" is a section of docs/driver-facts.md.
 * Design: docs/md.md.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/mem/gaudi_mem_int.h>
#include <uct/gaudi/dev/gaudi_device.h>

#include <ucs/datastruct/khash.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/sys.h>
#include <unistd.h>


KHASH_SET_INIT_INT64(uct_gaudi_memh_set)

typedef khash_t(uct_gaudi_memh_set) uct_gaudi_memh_set_t;


static pthread_mutex_t uct_gaudi_heap_global_lock =
        PTHREAD_MUTEX_INITIALIZER;
static uct_gaudi_heap_t *uct_gaudi_heap_global = NULL;


const char *uct_gaudi_heap_name(const uct_gaudi_heap_t *heap)
{
    return heap->info->name;
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

ucs_status_t uct_gaudi_heap_layout(uct_gaudi_heap_t *heap)
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

/* The allocation table and the memh registry of a new heap */
static ucs_status_t uct_gaudi_heap_tables_init(uct_gaudi_heap_t *heap)
{
    ucs_status_t status;

    heap->registry = kh_init(uct_gaudi_memh_set);
    if (heap->registry == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = ucs_pgtable_init(&heap->bufs, uct_gaudi_heap_pgt_dir_alloc,
                              uct_gaudi_heap_pgt_dir_release);
    if (status != UCS_OK) {
        kh_destroy(uct_gaudi_memh_set, heap->registry);
    }
    return status;
}

static void uct_gaudi_heap_tables_cleanup(uct_gaudi_heap_t *heap)
{
    ucs_pgtable_cleanup(&heap->bufs);
    kh_destroy(uct_gaudi_memh_set, heap->registry);
}

/* A heap on @a ctx's device, or on @a info's, not taken yet (ctx NULL) */
static ucs_status_t uct_gaudi_heap_create(uct_gaudi_ctx_t *ctx,
                                          const uct_gaudi_dev_info_t *info,
                                          uct_gaudi_heap_t **heap_p)
{
    uct_gaudi_heap_t *heap;
    ucs_status_t status;

    heap = ucs_calloc(1, sizeof(*heap), "gaudi_heap");
    if (heap == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    heap->info = (ctx != NULL) ? ctx->info : info;

    pthread_mutex_init(&heap->lock, NULL);
    ucs_list_head_init(&heap->chunks);
    ucs_list_head_init(&heap->deferred);
    ucs_list_head_init(&heap->retained);
    heap->uuid        = ucs_generate_uuid((uintptr_t)heap);
    heap->host_page   = ucs_get_page_size();
    heap->open_status = UCS_OK;
    heap->device_mem  = UCT_GAUDI_DEVICE_MEM_AUTO;
    status            = uct_gaudi_heap_tables_init(heap);
    if (status != UCS_OK) {
        goto err_lock;
    }

    status = uct_gaudi_heap_layout(heap);
    if (status != UCS_OK) {
        goto err_tables;
    }

    if (ctx != NULL) {
        /* the heap's own reference */
        status = uct_gaudi_ctx_get(ctx->info->index, &ctx);
        if (status != UCS_OK) {
            goto err_tables;
        }
        status = uct_gaudi_heap_attach(heap, ctx);
        if (status != UCS_OK) {
            uct_gaudi_ctx_put(ctx);
            goto err_tables;
        }
    }

    ucs_debug("gaudi %s: memory window [0x%" PRIx64 ", 0x%" PRIx64 "), "
              "allocation chunk %" PRIu64 " bytes, device %s",
              heap->info->name, heap->win_start, heap->win_end,
              heap->chunk_size, (ctx != NULL) ? "taken" : "not taken yet");
    *heap_p = heap;
    return UCS_OK;

err_tables:
    uct_gaudi_heap_tables_cleanup(heap);
err_lock:
    pthread_mutex_destroy(&heap->lock);
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
    uct_gaudi_heap_tables_cleanup(heap);
    pthread_mutex_destroy(&heap->lock);
    if (heap->ctx != NULL) {
        uct_gaudi_ctx_put(heap->ctx);
    }
    ucs_free(heap);
}

ucs_status_t uct_gaudi_heap_get(uct_gaudi_ctx_t *ctx,
                                uct_gaudi_heap_t **heap_p)
{
    const uct_gaudi_dev_info_t *info = NULL;
    uct_gaudi_heap_t *heap;
    ucs_status_t status = UCS_OK;

    pthread_mutex_lock(&uct_gaudi_heap_global_lock);
    if ((uct_gaudi_heap_global == NULL) && (ctx == NULL)) {
        /* the expected device may take a scan of every device's control
         * node: found with the registry's lock released */
        pthread_mutex_unlock(&uct_gaudi_heap_global_lock);
        status = uct_gaudi_ctx_expected(&info);
        if (status != UCS_OK) {
            return status;
        }
        pthread_mutex_lock(&uct_gaudi_heap_global_lock);
    }
    heap = uct_gaudi_heap_global;
    if (heap == NULL) {
        /* ctx is taken (the caller's reference): no wait for a device */
        status = uct_gaudi_heap_create(ctx, info, &uct_gaudi_heap_global);
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

int uct_gaudi_heap_memh_get(uct_gaudi_heap_t *heap, const void *memh,
                            uct_gaudi_memh_t *copy)
{
    int valid;

    pthread_mutex_lock(&heap->lock);
    valid = uct_gaudi_heap_memh_valid(heap, memh);
    if (valid) {
        *copy = *(const uct_gaudi_memh_t*)memh;
    }
    pthread_mutex_unlock(&heap->lock);
    return valid;
}
