/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * ucx_perftest allocator for Gaudi memory. Stock ucx_perftest never
 * dlopen()s allocator modules (its module list is empty), so this library
 * is preloaded (ucx-gaudi-run) and fills the allocator slot of the Gaudi
 * memory type from its constructor. All device access goes through the
 * plugin (libuct_gaudi): the CPU never touches Gaudi memory.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <tools/perf/lib/libperf_int.h>
#include <uct/gaudi/api/uct_gaudi.h>
#include <ucs/debug/log.h>
#include <string.h>


/* Weak: the library is preloaded into every process the wrapper starts,
 * and only ucx_perftest defines the table */
extern const ucx_perf_allocator_t *ucx_perf_mem_type_allocators[]
    __attribute__((weak));


static ucs_status_t ucx_perf_gaudi_init(ucx_perf_context_t *perf)
{
    /* The plugin picks the process's device (first free one when several
     * ucx_perftest processes share a node) */
    return UCS_OK;
}

static ucs_status_t ucx_perf_gaudi_uct_alloc(const ucx_perf_context_t *perf,
                                            size_t length, unsigned flags,
                                            uct_allocated_memory_t *alloc_mem)
{
    ucs_status_t status;

    status = uct_gaudi_mem_alloc(length, &alloc_mem->address);
    if (status != UCS_OK) {
        ucs_error("gaudi perftest: failed to allocate %zu bytes of Gaudi"
                  " memory: %s", length, ucs_status_string(status));
        return status;
    }

    status = uct_md_mem_reg(perf->uct.md, alloc_mem->address, length, flags,
                            &alloc_mem->memh);
    if (status != UCS_OK) {
        ucs_error("gaudi perftest: failed to register %zu bytes of Gaudi"
                  " memory: %s", length, ucs_status_string(status));
        uct_gaudi_mem_free(alloc_mem->address);
        return status;
    }

    alloc_mem->mem_type = uct_gaudi_memory_type();
    alloc_mem->md       = perf->uct.md;
    alloc_mem->method   = UCT_ALLOC_METHOD_LAST;
    alloc_mem->length   = length;
    return UCS_OK;
}

static void ucx_perf_gaudi_uct_free(const ucx_perf_context_t *perf,
                                    uct_allocated_memory_t *alloc_mem)
{
    ucs_status_t status;

    status = uct_md_mem_dereg(perf->uct.md, alloc_mem->memh);
    if (status != UCS_OK) {
        ucs_error("gaudi perftest: failed to deregister %p: %s",
                  alloc_mem->address, ucs_status_string(status));
    }

    status = uct_gaudi_mem_free(alloc_mem->address);
    if (status != UCS_OK) {
        ucs_error("gaudi perftest: failed to free %p: %s",
                  alloc_mem->address, ucs_status_string(status));
    }
}

static void ucx_perf_gaudi_memcpy(void *dst, ucs_memory_type_t dst_mem_type,
                                  const void *src,
                                  ucs_memory_type_t src_mem_type,
                                  size_t count)
{
    ucs_status_t status;

    status = uct_gaudi_memcpy(dst, src, count);
    if (status != UCS_OK) {
        ucs_error("gaudi perftest: failed to copy %zu bytes %p -> %p: %s",
                  count, src, dst, ucs_status_string(status));
    }
}

static void *ucx_perf_gaudi_memset(void *dst, int value, size_t count)
{
    ucs_status_t status;

    status = uct_gaudi_memset(dst, value, count);
    if (status != UCS_OK) {
        ucs_error("gaudi perftest: failed to set %zu bytes at %p: %s",
                  count, dst, ucs_status_string(status));
    }

    return dst;
}

static ucx_perf_allocator_t ucx_perf_gaudi_allocator = {
    .init      = ucx_perf_gaudi_init,
    .uct_alloc = ucx_perf_gaudi_uct_alloc,
    .uct_free  = ucx_perf_gaudi_uct_free,
    .memcpy    = ucx_perf_gaudi_memcpy,
    .memset    = ucx_perf_gaudi_memset
};

UCS_STATIC_INIT {
    if (ucx_perf_mem_type_allocators == NULL) {
        return; /* not ucx_perftest */
    }

    ucx_perf_gaudi_allocator.mem_type = uct_gaudi_memory_type();
    ucx_perf_mem_type_allocators[ucx_perf_gaudi_allocator.mem_type] =
            &ucx_perf_gaudi_allocator;
}

UCS_STATIC_CLEANUP {
    if (ucx_perf_mem_type_allocators != NULL) {
        ucx_perf_mem_type_allocators[ucx_perf_gaudi_allocator.mem_type] = NULL;
    }
}
