/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * DMA engine per-ASIC backends: which queues carry host DMA, how command
 * buffers are provided and how a CS chunk names them.
 * Gaudi1 (facts 5.3): kernel CBs (CB CREATE + mmap) on the external PCI-DMA
 *   queues DMA_0_x / DMA_1_x; the driver copies the CB at submit.
 * Gaudi2 (facts 5.4): user CBs in host memory mapped with MAP USERPTR on
 *   PDMA_0_0, PDMA_0_1, PDMA_1_0 (the only PDMA queues left to users); the
 *   QMAN reads the CB at run time, so it lives until the CS is done.
 * Gaudi3 (facts 6): no user-visible CS queue.
 * On both, queues x_0..x_3 are the streams of one DMA engine (facts 5.7):
 * a copy split over two streams of an engine is no faster than on one.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/dma/gaudi_dma_cs.h>
#include <uct/gaudi/dev/gaudi_dev.h>

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/sys.h>
#include <string.h>


static const uct_gaudi_dma_asic_t uct_gaudi_dma_asic_gaudi1 = {
    .name         = "Gaudi1",
    .gen          = GAUDI_PKT_GEN_GAUDI1,
    /* two PCI-DMA engines first, then their second streams */
    .num_queues   = 4,
    .num_engines  = 2,
    .queues       = { GAUDI_QUEUE_ID_DMA_0_0, GAUDI_QUEUE_ID_DMA_1_0,
                      GAUDI_QUEUE_ID_DMA_0_1, GAUDI_QUEUE_ID_DMA_1_1 },
    .max_pending  = GAUDI_HL_GAUDI1_MAX_PENDING_CS,
    .def_inflight = 255,
    .user_cb      = 0
};

static const uct_gaudi_dma_asic_t uct_gaudi_dma_asic_gaudi2 = {
    .name         = "Gaudi2",
    .gen          = GAUDI_PKT_GEN_GAUDI2,
    .num_queues   = 3,
    .num_engines  = 2,   /* PDMA0 (two streams), PDMA1 */
    .queues       = { GAUDI2_QUEUE_ID_PDMA_0_0, GAUDI2_QUEUE_ID_PDMA_1_0,
                      GAUDI2_QUEUE_ID_PDMA_0_1 },
    .max_pending  = GAUDI_HL_GAUDI2_MAX_PENDING_CS,
    /* the 64-CS window minus the synchronous slot */
    .def_inflight = GAUDI_HL_GAUDI2_MAX_PENDING_CS - 1,
    .user_cb      = 1
};


const uct_gaudi_dma_asic_t *
uct_gaudi_dma_asic_get(uct_gaudi_asic_t asic, const char **reason_p)
{
    if (uct_gaudi_asic_kernel_dma(asic, reason_p) != UCS_OK) {
        return NULL;
    }

    return (asic == UCT_GAUDI_ASIC_GAUDI1) ? &uct_gaudi_dma_asic_gaudi1 :
           &uct_gaudi_dma_asic_gaudi2;
}

/* Gaudi1: one kernel CB per queue, created and mmapped once (facts 5.1) */
static ucs_status_t uct_gaudi_dma_kcb_init(uct_gaudi_dma_cs_t *dma)
{
    const uct_gaudi_hl_t *hl = &dma->super.ctx->hl;
    ucs_status_t status;
    unsigned q;

    dma->kcb_map_size = ucs_align_up(dma->super.params.cb_size,
                                     ucs_get_page_size());
    for (q = 0; q < dma->num_queues; q++) {
        status = uct_gaudi_hl_cb_create(hl, dma->super.params.cb_size, 0,
                                        &dma->kcb_handle[q]);
        if (status != UCS_OK) {
            return status;
        }

        status = uct_gaudi_hl_cb_mmap(hl, dma->kcb_handle[q],
                                      dma->kcb_map_size, &dma->kcb_ptr[q]);
        if (status != UCS_OK) {
            uct_gaudi_hl_cb_destroy(hl, dma->kcb_handle[q]);
            dma->kcb_handle[q] = 0;
            return status;
        }
    }

    return UCS_OK;
}

static void uct_gaudi_dma_kcb_cleanup(uct_gaudi_dma_cs_t *dma)
{
    const uct_gaudi_hl_t *hl = &dma->super.ctx->hl;
    unsigned q;

    for (q = 0; q < UCT_GAUDI_DMA_MAX_QUEUES; q++) {
        if (dma->kcb_ptr[q] != NULL) {
            uct_gaudi_hl_cb_munmap(hl, dma->kcb_ptr[q], dma->kcb_map_size);
            dma->kcb_ptr[q] = NULL;
        }
        if (dma->kcb_handle[q] != 0) {
            uct_gaudi_hl_cb_destroy(hl, dma->kcb_handle[q]);
            dma->kcb_handle[q] = 0;
        }
    }
}

/*
 * The host area: [user CBs of every slot (Gaudi2 only)][bounce buffer],
 * page aligned and mapped once with MAP USERPTR (facts 3.3, 5.4 (a)).
 */
static ucs_status_t uct_gaudi_dma_area_init(uct_gaudi_dma_cs_t *dma)
{
    size_t cb_bytes = 0;
    ucs_status_t status;
    unsigned i, q;
    int ret;

    if (dma->asic->user_cb) {
        cb_bytes = (size_t)(dma->super.num_slots + 1) * dma->num_queues *
                   dma->super.params.cb_size;
    }

    dma->host_area_size = ucs_align_up(cb_bytes + dma->super.params.bounce_size,
                                       ucs_get_page_size());
    ret = ucs_posix_memalign(&dma->host_area, ucs_get_page_size(),
                             dma->host_area_size, "gaudi_dma_area");
    if (ret != 0) {
        ucs_error("%s: failed to allocate %zu bytes of DMA command buffers",
                  dma->super.name, dma->host_area_size);
        dma->host_area = NULL;
        return UCS_ERR_NO_MEMORY;
    }
    uct_gaudi_numa_place(dma->super.ctx, dma->host_area, dma->host_area_size,
                         "DMA command and bounce buffers");
    memset(dma->host_area, 0, dma->host_area_size);

    status = uct_gaudi_hl_mem_map_host(&dma->super.ctx->hl, dma->host_area,
                                       dma->host_area_size, 0,
                                       &dma->host_area_dma);
    if (status != UCS_OK) {
        ucs_free(dma->host_area);
        dma->host_area = NULL;
        return status;
    }

    if (dma->asic->user_cb) {
        for (i = 0; i <= dma->super.num_slots; i++) {
            for (q = 0; q < dma->num_queues; q++) {
                size_t off = ((size_t)i * dma->num_queues + q) *
                             dma->super.params.cb_size;

                dma->slots[i].cb_host[q] = UCS_PTR_BYTE_OFFSET(dma->host_area,
                                                               off);
                dma->slots[i].cb_dma[q]  = dma->host_area_dma + off;
            }
        }
    }

    dma->super.bounce     = UCS_PTR_BYTE_OFFSET(dma->host_area, cb_bytes);
    dma->bounce_dma = dma->host_area_dma + cb_bytes;
    return UCS_OK;
}

ucs_status_t uct_gaudi_dma_mem_init(uct_gaudi_dma_cs_t *dma)
{
    ucs_status_t status;
    unsigned i, q;

    status = uct_gaudi_dma_area_init(dma);
    if (status != UCS_OK) {
        return status;
    }

    if (!dma->asic->user_cb) {
        status = uct_gaudi_dma_kcb_init(dma);
        if (status != UCS_OK) {
            uct_gaudi_dma_mem_cleanup(dma);
            return status;
        }

        for (i = 0; i <= dma->super.num_slots; i++) {
            for (q = 0; q < dma->num_queues; q++) {
                dma->slots[i].cb_host[q] = dma->kcb_ptr[q];
                dma->slots[i].cb_dma[q]  = dma->kcb_handle[q];
            }
        }
    }

    return UCS_OK;
}

/*
 * Copies still run at teardown: give back what the device no longer reads,
 * so that no CB stays mapped when the device is closed (a live mapping
 * keeps the context, and the driver kills the closer with its reset,
 * docs/base.md). Gaudi1's kernel CBs were parsed into the driver's own
 * copy at submission (facts 5.3); the host area (Gaudi2 user CBs, bounce
 * buffer) may still be read and is leaked, mapped.
 */
void uct_gaudi_dma_mem_abandon(uct_gaudi_dma_cs_t *dma)
{
    uct_gaudi_dma_kcb_cleanup(dma);
}

void uct_gaudi_dma_mem_cleanup(uct_gaudi_dma_cs_t *dma)
{
    uct_gaudi_dma_kcb_cleanup(dma);

    if (dma->host_area != NULL) {
        uct_gaudi_hl_mem_unmap(&dma->super.ctx->hl, dma->host_area_dma);
        ucs_free(dma->host_area);
        dma->host_area = NULL;
    }
}

void uct_gaudi_dma_fill_chunk(const uct_gaudi_dma_cs_t *dma,
                              const uct_gaudi_dma_slot_t *slot, unsigned q,
                              uint32_t size, struct hl_cs_chunk *chunk)
{
    memset(chunk, 0, sizeof(*chunk));
    /* Gaudi2 queues take only user CBs, named by device VA; Gaudi1 takes
     * the kernel CB handle (facts 5.2 step 5) */
    chunk->cb_handle      = slot->cb_dma[q];
    chunk->queue_index    = dma->asic->queues[q];
    chunk->cb_size        = size;
    chunk->cs_chunk_flags = dma->asic->user_cb ?
                            HL_CS_CHUNK_FLAGS_USER_ALLOC_CB : 0;
}
