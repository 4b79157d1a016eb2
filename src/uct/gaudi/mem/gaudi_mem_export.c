/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * DMA-BUF export of device memory (facts 4.1): the module's buffers and
 * SynapseAI's memory on a shared fd. "facts N.M" is a section of
 * docs/driver-facts.md. Design: docs/md.md ("Export").
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/mem/gaudi_mem_int.h>
#include <uct/gaudi/syn/gaudi_syn.h>

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>


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
 * when nothing tells where the pool lies.
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

/* The driver's export of the pages enclosing @a buf (facts 4.1): of the
 * exact MAP VA of its chunk at a page-aligned offset (Gaudi2/3), or of its
 * physical pages (Gaudi1, offset 0) */
static ucs_status_t uct_gaudi_buf_export_pages(uct_gaudi_heap_t *heap,
                                               uct_gaudi_buf_t *buf,
                                               int *fd_p)
{
    uint64_t page = heap->host_page;
    uint64_t addr, off, start, end;
    ucs_status_t status;

    if (uct_gaudi_heap_is_gaudi1(heap)) {
        start = ucs_align_down(buf->memh.dma_base, page);
        end   = ucs_align_up(buf->memh.dma_base + buf->size, page);
        addr  = start;
        off   = 0;
        buf->dmabuf_offset = buf->memh.dma_base - start;
    } else {
        start = ucs_align_down(buf->offset, page);
        end   = ucs_min(ucs_align_up(buf->offset + buf->size, page),
                        buf->chunk->size);
        addr  = buf->chunk->ptr;
        off   = start;
        buf->dmabuf_offset = buf->offset - start;
    }

    status = uct_gaudi_hl_export_dmabuf(&heap->ctx->hl, addr, end - start,
                                        off, O_RDWR | O_CLOEXEC, fd_p);
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
              uct_gaudi_heap_name(heap), buf->super.start, *fd_p, addr, off,
              end - start);
    return UCS_OK;
}

/* Export the pages enclosing @a buf (facts 4.1); keep the fd in buf */
static ucs_status_t uct_gaudi_buf_export(uct_gaudi_heap_t *heap,
                                         uct_gaudi_buf_t *buf)
{
    ucs_status_t status;
    int fd;

    if (buf->chunk->syn && !uct_gaudi_heap_is_gaudi1(heap)) {
        /* a piece of SynapseAI's pool mapping, not a MAP of its own */
        status = uct_gaudi_heap_pool_export(heap, buf->super.start,
                                            buf->size, &fd,
                                            &buf->dmabuf_offset);
    } else {
        status = uct_gaudi_buf_export_pages(heap, buf, &fd);
    }
    if (status != UCS_OK) {
        return status;
    }

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

    status = uct_gaudi_heap_pool_export(heap, addr, len, fd_p, offset_p);
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
