/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * DMA engine front end: picks the backend of a device and dispatches the
 * engine interface (gaudi_dma.h) to it; what every backend shares (limits,
 * bounce staging, the choice of copy by side) lives here once.
 * Backends: gaudi_dma_cs.c (kernel command submission), gaudi_dma_syn.c
 * (SynapseAI streams).
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/dma/gaudi_dma_batch.h>

#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <string.h>


/* The backend that copies for @a ctx, chosen with its device */
static const uct_gaudi_dma_ops_t *
uct_gaudi_dma_ops_of(const uct_gaudi_ctx_t *ctx)
{
    return (ctx->backend == UCT_GAUDI_BACKEND_SYNAPSE) ?
           &uct_gaudi_dma_syn_ops : &uct_gaudi_dma_cs_ops;
}

const char *uct_gaudi_dma_backend_name(const uct_gaudi_ctx_t *ctx)
{
    return uct_gaudi_dma_ops_of(ctx)->name;
}

void uct_gaudi_dma_init_base(uct_gaudi_dma_t *dma,
                             const uct_gaudi_dma_ops_t *ops,
                             uct_gaudi_ctx_t *ctx)
{
    dma->ops        = ops;
    dma->ctx        = ctx;
    dma->ring_head  = 0;
    dma->ring_count = 0;
    ucs_snprintf_zero(dma->name, sizeof(dma->name), "gaudi %s (%s)",
                      ctx->info->name, ctx->hl.name);
}

ucs_status_t uct_gaudi_dma_check_xfers(const uct_gaudi_dma_t *dma,
                                       const uct_gaudi_dma_xfer_t *xfers,
                                       unsigned count, const char *name)
{
    unsigned max_xfers = dma->ops->max_xfers(dma);
    size_t total       = 0;
    unsigned i;

    if (count > max_xfers) {
        ucs_error("%s: %s of %u transfers exceeds the limit of %u", dma->name,
                  name, count, max_xfers);
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    for (i = 0; i < count; i++) {
        total += xfers[i].length;
        if ((xfers[i].length > UCT_GAUDI_DMA_MAX_COPY) ||
            (total > UCT_GAUDI_DMA_MAX_COPY)) {
            ucs_error("%s: %s of more than %lu bytes is not supported",
                      dma->name, name, UCT_GAUDI_DMA_MAX_COPY);
            return UCS_ERR_EXCEEDS_LIMIT;
        }
    }

    return UCS_OK;
}

ucs_status_t uct_gaudi_dma_check(const uct_gaudi_ctx_t *ctx,
                                 const char **reason_p)
{
    return uct_gaudi_dma_ops_of(ctx)->check(ctx, reason_p);
}

ucs_status_t uct_gaudi_dma_check_expected(uct_gaudi_asic_t asic,
                                          uct_gaudi_backend_t backend,
                                          const char **reason_p)
{
    *reason_p = NULL;
    return (backend == UCT_GAUDI_BACKEND_SYNAPSE) ? UCS_OK :
           uct_gaudi_asic_kernel_dma(asic, reason_p);
}

unsigned uct_gaudi_dma_max_xfers_of(uct_gaudi_backend_t backend,
                                    size_t cb_size)
{
    return ((backend == UCT_GAUDI_BACKEND_SYNAPSE) ? &uct_gaudi_dma_syn_ops :
            &uct_gaudi_dma_cs_ops)->xfers_of(cb_size);
}

void uct_gaudi_dma_params_default(const uct_gaudi_ctx_t *ctx,
                                  uct_gaudi_dma_params_t *params)
{
    uct_gaudi_dma_ops_of(ctx)->params_default(ctx, params);
    params->max_batch = UCT_GAUDI_DMA_DEF_BATCH;
}

ucs_status_t uct_gaudi_dma_create(uct_gaudi_ctx_t *ctx,
                                  const uct_gaudi_dma_params_t *params,
                                  uct_gaudi_dma_t **dma_p)
{
    uct_gaudi_dma_params_t def;
    uct_gaudi_dma_t *dma;
    ucs_status_t status;

    status = uct_gaudi_dma_ops_of(ctx)->create(ctx, params, &dma);
    if (status != UCS_OK) {
        return status;
    }

    /* the front end's own tunables, whatever the backend kept */
    uct_gaudi_dma_ops_of(ctx)->params_default(ctx, &def);
    dma->params.max_batch     = params->max_batch;
    dma->params.poll_interval = params->poll_interval;
    dma->params.batch_bytes   = (params->batch_bytes != 0) ?
                                params->batch_bytes : def.batch_bytes;
    status = uct_gaudi_dma_batch_init(dma);
    if (status != UCS_OK) {
        dma->ops->destroy(dma);
        return status;
    }

    *dma_p = dma;
    return UCS_OK;
}

void uct_gaudi_dma_destroy(uct_gaudi_dma_t *dma)
{
    uct_gaudi_dma_batch_cleanup(dma);
    dma->ops->destroy(dma);
}

const char *uct_gaudi_dma_dev_name(const uct_gaudi_dma_t *dma)
{
    return dma->name;
}

ucs_status_t uct_gaudi_dma_submit(uct_gaudi_dma_t *dma,
                                  const uct_gaudi_dma_xfer_t *xfers,
                                  unsigned count, const char *name,
                                  uct_gaudi_dma_comp_cb_t cb, void *arg)
{
    return uct_gaudi_dma_batch_submit(dma, xfers, count, name, cb, arg);
}

unsigned uct_gaudi_dma_progress(uct_gaudi_dma_t *dma, unsigned max)
{
    return uct_gaudi_dma_batch_progress(dma, max);
}

void uct_gaudi_dma_doorbell(uct_gaudi_dma_t *dma)
{
    uct_gaudi_dma_batch_doorbell(dma);
}

unsigned uct_gaudi_dma_inflight(const uct_gaudi_dma_t *dma)
{
    return dma->batches->inflight;
}

unsigned uct_gaudi_dma_max_inflight(const uct_gaudi_dma_t *dma)
{
    return dma->batches->num * dma->batches->max_ops;
}

int uct_gaudi_dma_can_submit(const uct_gaudi_dma_t *dma)
{
    return uct_gaudi_dma_batch_can_submit(dma);
}

ucs_status_t uct_gaudi_dma_quiesce(uct_gaudi_dma_t *dma)
{
    return uct_gaudi_dma_batch_quiesce(dma);
}

unsigned uct_gaudi_dma_max_xfers(const uct_gaudi_dma_t *dma)
{
    return dma->ops->max_xfers(dma);
}

ucs_status_t uct_gaudi_dma_copy(uct_gaudi_dma_t *dma,
                                const uct_gaudi_dma_xfer_t *xfers,
                                unsigned count, const char *name)
{
    ucs_status_t status;

    status = uct_gaudi_dma_check_xfers(dma, xfers, count, name);
    if (status != UCS_OK) {
        return status;
    }

    return dma->ops->copy(dma, xfers, count, name);
}

ucs_status_t uct_gaudi_dma_fill(uct_gaudi_dma_t *dma, uint64_t dma_addr,
                                int value, size_t length, const char *name)
{
    uct_gaudi_dma_xfer_t xfer = {.dst = dma_addr, .length = length};
    ucs_status_t status;

    status = uct_gaudi_dma_check_xfers(dma, &xfer, 1, name);
    if (status != UCS_OK) {
        return status;
    }

    return dma->ops->fill(dma, dma_addr, value, length, name);
}

void *uct_gaudi_dma_bounce(const uct_gaudi_dma_t *dma, size_t *size_p)
{
    *size_p = dma->params.bounce_size;
    return dma->bounce;
}

ucs_status_t uct_gaudi_dma_bounce_copy(uct_gaudi_dma_t *dma, int to_device,
                                       uint64_t dma_addr, size_t length,
                                       const char *name)
{
    ucs_assert(length <= dma->params.bounce_size);
    return dma->ops->bounce_copy(dma, to_device, dma_addr, length, name);
}

ucs_status_t uct_gaudi_dma_short(uct_gaudi_dma_t *dma, int to_device,
                                 void *host, uint64_t dma_addr,
                                 size_t length, const char *name)
{
    ucs_status_t status;
    size_t off, len;

    /* bounce-sized steps: the bounce buffer is mapped once, so the hot
     * path neither registers nor looks up the host buffer */
    for (off = 0; off < length; off += len) {
        len = ucs_min(length - off, dma->params.bounce_size);
        if (to_device) {
            memcpy(dma->bounce, UCS_PTR_BYTE_OFFSET(host, off), len);
        }

        status = uct_gaudi_dma_bounce_copy(dma, to_device, dma_addr + off,
                                           len, name);
        if (status != UCS_OK) {
            return status;
        }

        if (!to_device) {
            memcpy(UCS_PTR_BYTE_OFFSET(host, off), dma->bounce, len);
        }
    }

    return UCS_OK;
}

ucs_status_t uct_gaudi_dma_copy_sync(uct_gaudi_dma_t *dma,
                                     const uct_gaudi_dma_end_t *dst,
                                     const uct_gaudi_dma_end_t *src,
                                     size_t length, const char *name)
{
    uct_gaudi_dma_xfer_t xfer;

    if (length == 0) {
        return UCS_OK;
    } else if ((dst->host != NULL) && (src->host != NULL)) {
        memmove(dst->host, src->host, length);
        return UCS_OK;
    } else if (src->host != NULL) {
        return uct_gaudi_dma_short(dma, 1, src->host, dst->dma_addr, length,
                                   name);
    } else if (dst->host != NULL) {
        return uct_gaudi_dma_short(dma, 0, dst->host, src->dma_addr, length,
                                   name);
    }

    /* both device memory: host sides went through the bounce buffer */
    xfer.src    = src->dma_addr;
    xfer.dst    = dst->dma_addr;
    xfer.length = length;
    xfer.flags  = 0;
    return uct_gaudi_dma_copy(dma, &xfer, 1, name);
}
