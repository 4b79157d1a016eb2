/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The plugin's public C API (api/uct_gaudi.h), over the gaudi_copy heap.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gaudi_copy_mem.h"

#include <uct/gaudi/api/uct_gaudi.h>
#include <uct/gaudi/gaudi_compat.h>
#include <uct/gaudi/gaudi_device.h>
#include <ucs/debug/log.h>
#include <string.h>


static pthread_mutex_t uct_gaudi_api_lock = PTHREAD_MUTEX_INITIALIZER;
static uct_gaudi_copy_heap_t *uct_gaudi_api_heap = NULL;


/* The heap, with a reference kept for the life of the process */
static ucs_status_t uct_gaudi_api_heap_get(uct_gaudi_copy_heap_t **heap_p)
{
    uct_gaudi_ctx_t *ctx;
    ucs_status_t status = UCS_OK;

    pthread_mutex_lock(&uct_gaudi_api_lock);
    if (uct_gaudi_api_heap == NULL) {
        status = uct_gaudi_device_get(&ctx);
        if (status == UCS_OK) {
            status = uct_gaudi_copy_heap_get(ctx, &uct_gaudi_api_heap);
        }
    }
    *heap_p = uct_gaudi_api_heap;
    pthread_mutex_unlock(&uct_gaudi_api_lock);
    return status;
}

ucs_memory_type_t uct_gaudi_memory_type(void)
{
    return UCT_GAUDI_MEMORY_TYPE;
}

ucs_status_t uct_gaudi_mem_alloc(size_t length, void **ptr_p)
{
    uct_gaudi_copy_heap_t *heap;
    uct_gaudi_copy_buf_t *buf;
    ucs_status_t status;

    if (ptr_p == NULL) {
        ucs_error("uct_gaudi_mem_alloc: NULL result pointer");
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_gaudi_api_heap_get(&heap);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gaudi_copy_heap_alloc(heap, &length, &buf);
    if (status != UCS_OK) {
        return status;
    }

    *ptr_p = (void*)buf->memh.address;
    return UCS_OK;
}

ucs_status_t uct_gaudi_mem_free(void *ptr)
{
    uct_gaudi_copy_heap_t *heap = uct_gaudi_copy_heap_peek();
    uct_gaudi_copy_buf_t *buf   = NULL;
    ucs_status_t status;

    if (heap != NULL) {
        pthread_mutex_lock(&heap->lock);
        buf = uct_gaudi_copy_heap_buf_at(heap, (uintptr_t)ptr);
        if (buf != NULL) {
            status = uct_gaudi_copy_heap_free(heap, buf);
        }
        pthread_mutex_unlock(&heap->lock);
    }

    if (buf == NULL) {
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
    uct_gaudi_copy_heap_t *heap = uct_gaudi_copy_heap_peek();

    if ((fd_p == NULL) || (offset_p == NULL)) {
        ucs_error("uct_gaudi_dmabuf_get: NULL output pointer");
        return UCS_ERR_INVALID_PARAM;
    }
    if (heap == NULL) {
        ucs_error("uct_gaudi_dmabuf_get(%p, %zu): no Gaudi memory is "
                  "allocated in this process", ptr, length);
        return UCS_ERR_INVALID_ADDR;
    }

    return uct_gaudi_copy_heap_dmabuf(heap, (uintptr_t)ptr, length, fd_p,
                                      offset_p);
}

ucs_status_t uct_gaudi_counters_get(uct_gaudi_counters_t *counters)
{
    uct_gaudi_copy_heap_t *heap = uct_gaudi_copy_heap_peek();

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
