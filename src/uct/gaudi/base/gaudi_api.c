/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The plugin's public C API (api/uct_gaudi.h), over the memory layer.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/mem/gaudi_mem.h>
#include <uct/gaudi/dev/gaudi_device.h>
#include <uct/gaudi/dma/gaudi_dma.h>

#include <ucm/event/event.h>

#include <uct/gaudi/api/uct_gaudi.h>
#include <uct/gaudi/base/gaudi_uct_compat.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <string.h>


/* The public API's heap reference, kept for the life of the process so
 * that allocations outlive every UCX context */
static pthread_mutex_t uct_gaudi_api_heap_lock = PTHREAD_MUTEX_INITIALIZER;
static uct_gaudi_heap_t *uct_gaudi_api_heap_ref = NULL;

/* The API's own DMA engine of a device context; its lock serializes the
 * synchronous copies on that device only */
typedef struct uct_gaudi_api_engine {
    pthread_mutex_t lock;
    uct_gaudi_ctx_t *ctx;
    uct_gaudi_dma_t *dma;
} uct_gaudi_api_engine_t;

/* by the device's node minor */
static uct_gaudi_api_engine_t uct_gaudi_api_engines[GAUDI_HL_MAX_MINOR] = {
    [0 ... GAUDI_HL_MAX_MINOR - 1] = {.lock = PTHREAD_MUTEX_INITIALIZER}
};


static ucs_status_t uct_gaudi_api_heap(uct_gaudi_heap_t **heap_p)
{
    ucs_status_t status = UCS_OK;

    pthread_mutex_lock(&uct_gaudi_api_heap_lock);
    if (uct_gaudi_api_heap_ref == NULL) {
        status = (uct_gaudi_device_info() == NULL) ? UCS_ERR_NO_DEVICE :
                 uct_gaudi_heap_get(NULL, &uct_gaudi_api_heap_ref);
    }
    *heap_p = uct_gaudi_api_heap_ref;
    pthread_mutex_unlock(&uct_gaudi_api_heap_lock);
    return status;
}

ucs_memory_type_t uct_gaudi_memory_type(void)
{
    return UCT_GAUDI_MEMORY_TYPE;
}

ucs_status_t uct_gaudi_mem_alloc(size_t length, void **ptr_p)
{
    uct_gaudi_heap_t *heap;
    uct_gaudi_buf_t *buf;
    ucs_status_t status;

    if (ptr_p == NULL) {
        ucs_error("uct_gaudi_mem_alloc: NULL result pointer");
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_gaudi_api_heap(&heap);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gaudi_heap_alloc(heap, &length, &buf);
    if (status != UCS_OK) {
        return status;
    }

    *ptr_p = (void*)buf->memh.address;
    return UCS_OK;
}

/*
 * Tell UCX that [ptr, +length) is about to be freed, so that caches holding
 * registrations of it (UCP's registration cache, the IPC export of
 * gaudi_ipc) drop them first: the driver refuses to unmap memory whose
 * dma-buf is still exported (facts 3.3). Called without the heap lock,
 * because the handlers deregister through the MDs.
 */
static void uct_gaudi_api_dispatch_free(uct_gaudi_heap_t *heap,
                                        void *ptr)
{
    size_t length = uct_gaudi_heap_buf_size(heap, (uintptr_t)ptr);
    ucm_event_t event;

    if (length == 0) {
        return;
    }

    event.mem_type.address  = ptr;
    event.mem_type.size     = length;
    event.mem_type.mem_type = UCT_GAUDI_MEMORY_TYPE;
    ucm_event_dispatch(UCM_EVENT_MEM_TYPE_FREE, &event);
}

ucs_status_t uct_gaudi_mem_free(void *ptr)
{
    uct_gaudi_heap_t *heap = uct_gaudi_heap_peek();
    ucs_status_t status    = UCS_ERR_INVALID_ADDR;

    if (heap != NULL) {
        uct_gaudi_api_dispatch_free(heap, ptr);
        status = uct_gaudi_heap_free_ptr(heap, (uintptr_t)ptr);
    }

    if (status == UCS_ERR_INVALID_ADDR) {
        ucs_error("uct_gaudi_mem_free(%p): not a live Gaudi allocation "
                  "(double free, or not the pointer the allocation returned)",
                  ptr);
        return UCS_ERR_INVALID_ADDR;
    }
    return status;
}

ucs_status_t uct_gaudi_dmabuf_get(const void *ptr, size_t length, int *fd_p,
                                  uint64_t *offset_p)
{
    uct_gaudi_heap_t *heap = uct_gaudi_heap_peek();

    if ((fd_p == NULL) || (offset_p == NULL)) {
        ucs_error("uct_gaudi_dmabuf_get: NULL output pointer");
        return UCS_ERR_INVALID_PARAM;
    }
    if (heap == NULL) {
        ucs_error("uct_gaudi_dmabuf_get(%p, %zu): no Gaudi memory is "
                  "allocated in this process", ptr, length);
        return UCS_ERR_INVALID_ADDR;
    }

    return uct_gaudi_heap_dmabuf(heap, (uintptr_t)ptr, length, fd_p,
                                 offset_p);
}

ucs_status_t uct_gaudi_counters_get(uct_gaudi_counters_t *counters)
{
    uct_gaudi_heap_t *heap = uct_gaudi_heap_peek();

    if (counters == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }

    if (heap == NULL) {
        memset(counters, 0, sizeof(*counters));
    } else {
        memcpy(counters, &heap->counters, sizeof(*counters)); /* racy reads are fine */
    }
    return UCS_OK;
}


/*
 * The API's engine of the heap's device, created at its first copy, with
 * its lock held (uct_gaudi_api_engine_unlock)
 */
static ucs_status_t uct_gaudi_api_engine_lock(uct_gaudi_heap_t *heap,
                                              uct_gaudi_api_engine_t **engine_p)
{
    uct_gaudi_api_engine_t *engine;
    uct_gaudi_dma_params_t params;
    const char *reason;
    ucs_status_t status;
    uct_gaudi_ctx_t *ctx;

    /* a side is Gaudi memory: its device is taken, or borrowed now */
    status = uct_gaudi_heap_take(heap, 0, 0, "uct_gaudi_memcpy");
    if (status != UCS_OK) {
        return status;
    }

    ctx    = uct_gaudi_heap_ctx(heap);
    engine = &uct_gaudi_api_engines[ctx->info->minor];
    pthread_mutex_lock(&engine->lock);
    if (engine->dma == NULL) {
        status = uct_gaudi_dma_check(ctx, &reason);
        if (status != UCS_OK) {
            ucs_error("gaudi %s: copies to and from device memory are not "
                      "available: %s", ctx->info->name, reason);
            goto err_unlock;
        }

        uct_gaudi_dma_params_default(ctx, &params);
        status = uct_gaudi_dma_create(ctx, &params, &engine->dma);
        if (status != UCS_OK) {
            goto err_unlock;
        }
        engine->ctx = ctx;
    }

    *engine_p = engine;
    return UCS_OK;

err_unlock:
    pthread_mutex_unlock(&engine->lock);
    return status;
}

static void uct_gaudi_api_engine_unlock(uct_gaudi_api_engine_t *engine)
{
    pthread_mutex_unlock(&engine->lock);
}

ucs_status_t uct_gaudi_memcpy(void *dst, const void *src, size_t length)
{
    uct_gaudi_dma_end_t dst_end, src_end;
    uct_gaudi_api_engine_t *engine;
    uct_gaudi_heap_t *heap;
    ucs_status_t status;

    if (length == 0) {
        return UCS_OK;
    }

    if ((dst == NULL) || (src == NULL)) {
        ucs_error("uct_gaudi_memcpy(%p, %p, %zu): NULL pointer", dst, src,
                  length);
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_gaudi_api_heap(&heap);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gaudi_heap_dma_end(heap, dst, length, "uct_gaudi_memcpy",
                                    &dst_end);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gaudi_heap_dma_end(heap, src, length, "uct_gaudi_memcpy",
                                    &src_end);
    if (status != UCS_OK) {
        return status;
    }

    if ((dst_end.host != NULL) && (src_end.host != NULL)) {
        memmove(dst, src, length);
        return UCS_OK;
    }

    status = uct_gaudi_api_engine_lock(heap, &engine);
    if (status != UCS_OK) {
        return status;
    }

    /* a host side is staged through the engine's pre-mapped bounce
     * buffer: it needs no registration */
    status = uct_gaudi_dma_copy_sync(engine->dma, &dst_end, &src_end, length,
                                     "uct_gaudi_memcpy");
    uct_gaudi_api_engine_unlock(engine);
    return status;
}

ucs_status_t uct_gaudi_memset(void *ptr, int value, size_t length)
{
    uct_gaudi_dma_end_t end;
    uct_gaudi_api_engine_t *engine;
    uct_gaudi_heap_t *heap;
    ucs_status_t status;

    if (length == 0) {
        return UCS_OK;
    }

    status = uct_gaudi_api_heap(&heap);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gaudi_heap_dma_end(heap, ptr, length, "uct_gaudi_memset",
                                    &end);
    if (status != UCS_OK) {
        return status;
    }

    if (end.host != NULL) {
        memset(ptr, value, length);
        return UCS_OK;
    }

    /* the engine fills device memory itself: no host pattern buffer */
    status = uct_gaudi_api_engine_lock(heap, &engine);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gaudi_dma_fill(engine->dma, end.dma_addr, value, length,
                                "uct_gaudi_memset");
    uct_gaudi_api_engine_unlock(engine);
    return status;
}

UCS_STATIC_CLEANUP {
    uct_gaudi_heap_t *heap = uct_gaudi_heap_peek();
    uct_gaudi_api_engine_t *engine;

    for (engine = uct_gaudi_api_engines;
         engine < uct_gaudi_api_engines + GAUDI_HL_MAX_MINOR; ++engine) {
        /* a fork child's engine is its parent's (CS ring, SynapseAI
         * streams and their threads): the child's exit leaves it alone */
        if ((engine->dma == NULL) || (heap == NULL) ||
            !uct_gaudi_ctx_owned(engine->ctx)) {
            /* nothing, or the parent's */
        } else if (!uct_gaudi_ctx_present(engine->ctx)) {
            /* the application released the device (and SynapseAI closed
             * its fd) before this exit: the engine's streams, events and
             * mappings went with it */
            ucs_debug("gaudi %s: copy engine left at exit: the device was "
                      "released by its owner", engine->ctx->info->name);
        } else {
            uct_gaudi_dma_destroy(engine->dma);
        }
        engine->dma = NULL;
    }
}
