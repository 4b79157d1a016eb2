/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Public C API of the ucx-gaudi plugin (libuct_gaudi.so), installed as
 * <uct/gaudi/api/uct_gaudi.h>. For applications and NIC libraries that need
 * Gaudi device memory, or a DMA-BUF of it, through the plugin; UCX itself
 * does not need this header. Link with -luct_gaudi (or load the module
 * first, as the ucx-gaudi-run wrapper does). Documentation: docs/md.md.
 *
 * Every function works on the device this process uses (UCX_GAUDI_DEVICE
 * etc.), opening it on first use, and is thread-safe. Errors are also
 * logged through UCX's log (UCX_LOG_LEVEL).
 */

#ifndef UCT_GAUDI_API_H_
#define UCT_GAUDI_API_H_

#include <ucs/type/status.h>
#include <ucs/memory/memory_type.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this API: bumped on incompatible changes */
#define UCT_GAUDI_API_VERSION 1


/**
 * The UCX memory type under which Gaudi memory is reported (UCX < 1.21 has
 * none of its own; the plugin then uses the otherwise unused ROCM slot).
 * Pass it as ucp_mem_map's memory_type or UCP_OP_ATTR_FIELD_MEMORY_TYPE.
 */
ucs_memory_type_t uct_gaudi_memory_type(void);


/**
 * Allocate @a length bytes of device memory (rounded up to 256 bytes).
 * @a *ptr_p receives a Gaudi pointer: a device address that the CPU must
 * never dereference; UCX recognizes it as Gaudi memory.
 *
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for 0 bytes or a NULL @a ptr_p;
 *         UCS_ERR_NO_MEMORY when the device cannot satisfy it;
 *         UCS_ERR_NO_DEVICE when no device is usable.
 */
ucs_status_t uct_gaudi_mem_alloc(size_t length, void **ptr_p);


/**
 * Free memory of uct_gaudi_mem_alloc(), or of the gaudi_copy memory domain
 * (uct_md_mem_alloc / ucp_mem_map ALLOCATE) when its handle is no longer
 * used. @a ptr must be the pointer the allocation returned.
 *
 * @return UCS_OK; UCS_ERR_INVALID_ADDR if @a ptr is not a live allocation
 *         (double free, NULL, interior pointer).
 */
ucs_status_t uct_gaudi_mem_free(void *ptr);


/**
 * A DMA-BUF of Gaudi memory, e.g. for ibv_reg_dmabuf_mr(pd, offset, length,
 * iova, fd, access): @a *fd_p receives a new file descriptor (close it when
 * done, and before freeing the memory) and @a *offset_p the offset of
 * @a ptr within it. [@a ptr, +@a length) must lie inside one allocation of
 * this process. The DMA-BUF covers the pages around the allocation; like
 * the driver's, it cannot be mmap()ed.
 *
 * @return UCS_OK; UCS_ERR_INVALID_ADDR if the range is not inside one
 *         allocation; UCS_ERR_INVALID_PARAM for a zero length or NULL
 *         outputs; a driver error (e.g. UCS_ERR_UNSUPPORTED on kernels
 *         without export for this ASIC).
 */
ucs_status_t uct_gaudi_dmabuf_get(const void *ptr, size_t length, int *fd_p,
                                  uint64_t *offset_p);


/**
 * Copy @a length bytes between any two of host and Gaudi memory of this
 * process's device, on the device's DMA engines; returns when the copy is
 * complete. Host-to-host is a plain memmove. A range that is not wholly
 * host memory or wholly inside one Gaudi allocation is refused.
 */
ucs_status_t uct_gaudi_memcpy(void *dst, const void *src, size_t length);


/**
 * Fill @a length bytes at @a ptr (host or Gaudi memory) with the byte
 * @a value; returns when done.
 */
ucs_status_t uct_gaudi_memset(void *ptr, int value, size_t length);


/* Process-wide counters of the gaudi_copy memory domain (diagnostics) */
typedef struct uct_gaudi_counters {
    uint64_t alloc_count;     /* device allocations made */
    uint64_t free_count;      /* device allocations freed */
    uint64_t alloc_bytes;     /* bytes of live device allocations */
    uint64_t chunk_count;     /* live driver allocations (ALLOC + MAP) */
    uint64_t chunk_bytes;     /* their bytes */
    uint64_t reg_count;       /* registrations made */
    uint64_t dereg_count;     /* registrations released */
    uint64_t rcache_hits;     /* host registrations served by the cache */
    uint64_t rcache_misses;   /* host registrations that pinned + mapped */
    uint64_t host_maps;       /* host MAP (USERPTR) calls */
    uint64_t host_unmaps;     /* host UNMAP calls */
    uint64_t dmabuf_exports;  /* DMA-BUF exports made */
    uint64_t dmabuf_open;     /* exported DMA-BUFs the plugin keeps open */
    uint64_t deferred_chunks; /* driver allocations with no buffer left
                                 whose release waits for a dma-buf of them
                                 to be closed (e.g. by an importing
                                 process); counted in chunk_count too */
} uct_gaudi_counters_t;

/**
 * Read the counters. All zero before the first use of the device memory.
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for NULL.
 */
ucs_status_t uct_gaudi_counters_get(uct_gaudi_counters_t *counters);

#ifdef __cplusplus
}
#endif

#endif
