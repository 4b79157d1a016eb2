/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/base/gaudi_iface.h>

#include <uct/gaudi/base/gaudi_uct_compat.h>

#include <ucs/arch/cpu.h>
#include <ucs/datastruct/mpool.inl>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#include <ucs/time/time.h>
#include <limits.h>
#include <string.h>


ucs_config_field_t uct_gaudi_iface_dma_config_table[] = {
    {"MAX_BATCH", "32",
     "Asynchronous copies posted while the engine is busy that share one\n"
     "command submission (1: one submission per copy)",
     ucs_offsetof(uct_gaudi_iface_dma_config_t, max_batch),
     UCS_CONFIG_TYPE_UINT},

    {"BATCH_BYTES", "auto",
     "A shared command submission goes once it holds this many bytes, so\n"
     "that several are in flight and both DMA engines still have work while\n"
     "the oldest is completed (inf: only MAX_BATCH limits it). auto: 512K\n"
     "on the kernel backend, inf on the synapse backend.",
     ucs_offsetof(uct_gaudi_iface_dma_config_t, batch_bytes),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"DMA_QUEUES", "auto",
     "DMA queues one submission spreads its copies over; auto: one per DMA\n"
     "engine (2). Up to all the ASIC leaves to users (Gaudi2 3, Gaudi1 4):\n"
     "further streams of the same engines, no more bandwidth. The synapse\n"
     "backend copies on one stream per engine and does not use it.",
     ucs_offsetof(uct_gaudi_iface_dma_config_t, dma_queues),
     UCS_CONFIG_TYPE_ULUNITS},

    {"POLL_INTERVAL", "auto",
     "Least time between two completion polls of the asynchronous copies\n"
     "(0: every progress call). auto: 1us on the kernel backend, where each\n"
     "poll is a WAIT_CS system call; 0 on the synapse backend.",
     ucs_offsetof(uct_gaudi_iface_dma_config_t, poll_interval),
     UCS_CONFIG_TYPE_TIME_UNITS},

    {NULL}
};


static ucs_mpool_ops_t uct_gaudi_iface_desc_mpool_ops = {
    .chunk_alloc   = ucs_mpool_chunk_malloc,
    .chunk_release = ucs_mpool_chunk_free,
    .obj_init      = NULL,
    .obj_cleanup   = NULL,
    .obj_str       = NULL
};


static UCS_F_ALWAYS_INLINE uct_gaudi_iface_t *
uct_gaudi_ep_iface(uct_ep_h tl_ep)
{
    return ucs_derived_of(tl_ep->iface, uct_gaudi_iface_t);
}


/* Completions and flushes */

static void uct_gaudi_iface_flushes_progress(uct_gaudi_iface_t *iface)
{
    uct_gaudi_iface_flush_t *flush;

    while (!ucs_queue_is_empty(&iface->flushes)) {
        flush = ucs_queue_head_elem_non_empty(&iface->flushes,
                                              uct_gaudi_iface_flush_t, queue);
        if (flush->target > iface->delivered) {
            break;
        }
        ucs_queue_pull_non_empty(&iface->flushes);
        uct_invoke_completion(flush->comp, UCS_OK);
        ucs_free(flush);
    }
}

/* Run pending requests while the ring has room; one that cannot post
 * goes back to the head of the queue */
static void uct_gaudi_iface_pending_progress(uct_gaudi_iface_t *iface)
{
    uct_gaudi_iface_pending_priv_t *priv;
    uct_pending_req_t *req;
    ucs_status_t status;

    while (!ucs_queue_is_empty(&iface->pending) &&
           uct_gaudi_dma_can_submit(iface->dma)) {
        priv = ucs_queue_pull_elem_non_empty(&iface->pending,
                                             uct_gaudi_iface_pending_priv_t,
                                             queue_elem);
        req  = ucs_container_of(priv, uct_pending_req_t, priv);
        --(*priv->num_pending);
        iface->dispatching = 1;
        status             = req->func(req);
        iface->dispatching = 0;
        if (status != UCS_OK) {
            ucs_queue_push_head(&iface->pending, &priv->queue_elem);
            ++(*priv->num_pending);
            break;
        }
    }
}

ucs_status_t uct_gaudi_iface_fail_later(uct_gaudi_iface_t *iface,
                                        uct_completion_t *comp,
                                        ucs_status_t status)
{
    uct_gaudi_iface_failed_t *failed;

    if ((comp == NULL) || (status == UCS_ERR_NO_RESOURCE)) {
        return status;
    }

    failed = ucs_malloc(sizeof(*failed), "gaudi_iface_failed");
    if (failed == NULL) {
        return status;
    }

    failed->comp   = comp;
    failed->status = status;
    ucs_queue_push(&iface->failed, &failed->queue);
    iface->submitted++; /* flushes wait for its delivery */
    return UCS_INPROGRESS;
}

/* The failures reported through completions; the number delivered */
static unsigned uct_gaudi_iface_failed_progress(uct_gaudi_iface_t *iface)
{
    uct_gaudi_iface_failed_t *failed;
    unsigned count = 0;

    while (!ucs_queue_is_empty(&iface->failed)) {
        failed = ucs_queue_pull_elem_non_empty(&iface->failed,
                                               uct_gaudi_iface_failed_t,
                                               queue);
        iface->delivered++;
        uct_invoke_completion(failed->comp, failed->status);
        ucs_free(failed);
        ++count;
    }

    if (count > 0) {
        uct_gaudi_iface_flushes_progress(iface);
    }
    return count;
}

/* Deliver the failures, up to max_poll completions, then the flushes they
 * satisfy, then the pending requests the ring has room for */
unsigned uct_gaudi_iface_progress(uct_iface_h tl_iface)
{
    uct_gaudi_iface_t *iface = ucs_derived_of(tl_iface, uct_gaudi_iface_t);
    unsigned count;

    count = ucs_queue_is_empty(&iface->failed) ? 0 :
            uct_gaudi_iface_failed_progress(iface);
    if (iface->dma == NULL) {
        return count;
    }

    count += uct_gaudi_dma_progress(iface->dma, iface->max_poll);
    if (iface->ops->periodic != NULL) {
        iface->ops->periodic(iface);
    }
    if (count > 0) {
        uct_gaudi_iface_flushes_progress(iface);
    } else if (iface->ops->idle != NULL) {
        iface->ops->idle(iface);
    }

    if (!ucs_queue_is_empty(&iface->pending)) {
        uct_gaudi_iface_pending_progress(iface);
        /* what the requests posted goes now, not at the next call */
        uct_gaudi_dma_doorbell(iface->dma);
    }

    return count;
}

/* DMA engine completion of an asynchronous copy */
static void uct_gaudi_iface_desc_complete(void *arg, ucs_status_t status)
{
    uct_gaudi_iface_desc_t *desc = arg;
    uct_gaudi_iface_t *iface     = desc->iface;
    uct_completion_t *comp       = desc->comp;

    if (iface->ops->desc_done != NULL) {
        status = iface->ops->desc_done(desc, status);
    }

    uct_gaudi_iface_desc_put(desc);
    iface->delivered++;
    if ((comp != NULL) && !iface->closing) {
        uct_invoke_completion(comp, status);
    }
}

/* Limits of put or get (distinct anonymous structs of uct_iface_attr_t) */
#define UCT_GAUDI_IFACE_RMA_CAP(_cap, _max_iov, _bounce) \
    do { \
        (_cap).max_short       = (_bounce); \
        (_cap).max_bcopy       = (_bounce); \
        (_cap).min_zcopy       = 0; \
        (_cap).max_zcopy       = UCT_GAUDI_DMA_MAX_COPY; \
        (_cap).opt_zcopy_align = 1; \
        (_cap).align_mtu       = 1; \
        (_cap).max_iov         = (_max_iov); \
    } while (0)

size_t uct_gaudi_iface_bounce_size(uct_gaudi_iface_t *iface)
{
    size_t bounce = 0;

    /* short: one bounce-buffer step; longer short ops still work
     * (bounce-sized steps, for UCP's memtype pack/unpack) but cost one CS
     * round trip each, which zcopy avoids. Before the engine exists: the
     * size it will have (both backends default to the same) */
    if (iface->dma != NULL) {
        (void)uct_gaudi_dma_bounce(iface->dma, &bounce);
    } else if (iface->no_dma == NULL) {
        bounce = (iface->dma_params.bounce_size != 0) ?
                 iface->dma_params.bounce_size :
                 UCT_GAUDI_IFACE_DEF_BOUNCE;
    }
    return bounce;
}

void uct_gaudi_iface_query(uct_gaudi_iface_t *iface, size_t max_iov,
                           uct_iface_attr_t *iface_attr)
{
    size_t bounce = uct_gaudi_iface_bounce_size(iface);

    uct_base_iface_query(&iface->super, iface_attr);

    iface_attr->ep_addr_len         = 0;
    /* short and bcopy are what UCP needs for a memtype EP and of an RMA
     * lane; zcopy for rndv pipelines */
    iface_attr->cap.flags           = UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                                      UCT_IFACE_FLAG_PUT_SHORT |
                                      UCT_IFACE_FLAG_GET_SHORT |
                                      UCT_IFACE_FLAG_PUT_BCOPY |
                                      UCT_IFACE_FLAG_GET_BCOPY |
                                      UCT_IFACE_FLAG_PUT_ZCOPY |
                                      UCT_IFACE_FLAG_GET_ZCOPY |
                                      UCT_IFACE_FLAG_PENDING |
                                      /* ep_check: the transport's */
                                      UCT_IFACE_FLAG_EP_CHECK |
                                      UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE;
    iface_attr->cap.event_flags     = 0;
    iface_attr->bandwidth.dedicated = 0;
    iface_attr->priority            = 0;

    UCT_GAUDI_IFACE_RMA_CAP(iface_attr->cap.put, max_iov, bounce);
    UCT_GAUDI_IFACE_RMA_CAP(iface_attr->cap.get, max_iov, bounce);
}

/* UCS_OK when all is delivered, else UCS_INPROGRESS with @a comp (if any)
 * called once the copies submitted so far are */
static ucs_status_t uct_gaudi_iface_flush_all(uct_gaudi_iface_t *iface,
                                              uct_completion_t *comp)
{
    uct_gaudi_iface_flush_t *flush;

    if (iface->delivered == iface->submitted) {
        UCT_TL_IFACE_STAT_FLUSH(&iface->super);
        return UCS_OK;
    }

    if (comp != NULL) {
        flush = ucs_malloc(sizeof(*flush), "gaudi_iface_flush");
        if (flush == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        flush->target = iface->submitted;
        flush->comp   = comp;
        ucs_queue_push(&iface->flushes, &flush->queue);
    }

    UCT_TL_IFACE_STAT_FLUSH_WAIT(&iface->super);
    return UCS_INPROGRESS;
}

/* UCT_FLUSH_FLAG_CANCEL is for endpoints only */
ucs_status_t uct_gaudi_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                   uct_completion_t *comp)
{
    uct_gaudi_iface_t *iface = ucs_derived_of(tl_iface, uct_gaudi_iface_t);

    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        return UCS_ERR_UNSUPPORTED;
    }

    return uct_gaudi_iface_flush_all(iface, comp);
}

/*
 * No event flags are reported: nothing can wake a sleeping caller, so the
 * iface is never armed and must be progressed (UCX 1.12's adaptive
 * progress arms every iface it deactivates, whatever its event flags, and
 * keeps progressing one that answers busy).
 */
ucs_status_t uct_gaudi_iface_event_arm(uct_iface_h tl_iface, unsigned events)
{
    return UCS_ERR_BUSY;
}

ucs_status_t uct_gaudi_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    uct_gaudi_iface_t *iface = ucs_derived_of(tl_iface, uct_gaudi_iface_t);

    /* the pieces of one copy run on several queues and copies complete
     * out of order: the next copy waits until everything before is done */
    iface->fenced = (iface->dma != NULL) &&
                    (uct_gaudi_dma_inflight(iface->dma) > 0);
    UCT_TL_IFACE_STAT_FENCE(&iface->super);
    return UCS_OK;
}


/* Endpoints */

/*
 * An ep's flush: after its pending requests are posted. With
 * UCT_FLUSH_FLAG_CANCEL, of what is posted only: the pending requests stay
 * for their owner's uct_ep_pending_purge (dropped here, nothing would
 * ever complete them), and copies already posted complete by themselves,
 * with an error if their peer died.
 */
ucs_status_t uct_gaudi_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                uct_completion_t *comp)
{
    uct_gaudi_ep_t *ep       = ucs_derived_of(tl_ep, uct_gaudi_ep_t);
    uct_gaudi_iface_t *iface = uct_gaudi_ep_iface(tl_ep);
    ucs_status_t status;

    /* pending requests are not posted yet: flush after they are */
    if ((ep->num_pending > 0) && !(flags & UCT_FLUSH_FLAG_CANCEL)) {
        return UCS_ERR_NO_RESOURCE;
    }

    status = uct_gaudi_iface_flush_all(iface, comp);
    if (status == UCS_OK) {
        UCT_TL_EP_STAT_FLUSH(&ep->super);
    } else if (status == UCS_INPROGRESS) {
        UCT_TL_EP_STAT_FLUSH_WAIT(&ep->super);
    }
    return status;
}

ucs_status_t uct_gaudi_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    UCT_TL_EP_STAT_FENCE(ucs_derived_of(tl_ep, uct_base_ep_t));
    return uct_gaudi_iface_fence(tl_ep->iface, flags);
}

ucs_status_t uct_gaudi_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                      unsigned flags)
{
    uct_gaudi_ep_t *ep                   = ucs_derived_of(tl_ep,
                                                          uct_gaudi_ep_t);
    uct_gaudi_iface_t *iface             = uct_gaudi_ep_iface(tl_ep);
    uct_gaudi_iface_pending_priv_t *priv =
            (uct_gaudi_iface_pending_priv_t*)&req->priv;

    UCS_STATIC_ASSERT(sizeof(*priv) <= UCT_PENDING_REQ_PRIV_LEN);

    /* resources are available: the caller should retry right away */
    if ((iface->dma == NULL) ||
        (ucs_queue_is_empty(&iface->pending) &&
         uct_gaudi_dma_can_submit(iface->dma))) {
        return UCS_ERR_BUSY;
    }

    priv->num_pending = &ep->num_pending;
    uct_pending_req_queue_push(&iface->pending, req);
    ++ep->num_pending;
    UCT_TL_EP_STAT_PEND(&ep->super);
    return UCS_OK;
}

void uct_gaudi_ep_pending_purge(uct_ep_h tl_ep,
                                uct_pending_purge_callback_t cb, void *arg)
{
    uct_gaudi_ep_t *ep       = ucs_derived_of(tl_ep, uct_gaudi_ep_t);
    uct_gaudi_iface_t *iface = uct_gaudi_ep_iface(tl_ep);
    uct_gaudi_iface_pending_priv_t *priv;
    ucs_queue_iter_t iter;

    ucs_queue_for_each_safe(priv, iter, &iface->pending, queue_elem) {
        if (priv->num_pending == &ep->num_pending) {
            ucs_queue_del_iter(&iface->pending, iter);
            --ep->num_pending;
            if (cb != NULL) {
                cb(ucs_container_of(priv, uct_pending_req_t, priv), arg);
            }
        }
    }
}

UCS_CLASS_INIT_FUNC(uct_gaudi_ep_t, const uct_ep_params_t *params)
{
    uct_gaudi_iface_t *iface = ucs_derived_of(params->iface,
                                              uct_gaudi_iface_t);

    UCT_EP_PARAMS_CHECK_DEV_IFACE_ADDRS(params);
    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);
    self->num_pending = 0;
    return UCS_OK;
}

UCS_CLASS_CLEANUP_FUNC(uct_gaudi_ep_t)
{
    uct_gaudi_ep_pending_purge(&self->super.super, NULL, NULL);
}

UCS_CLASS_DEFINE(uct_gaudi_ep_t, uct_base_ep_t)
UCS_CLASS_DEFINE_NEW_FUNC(uct_gaudi_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_gaudi_ep_t, uct_ep_t);


/* Data operations */

ucs_status_t uct_gaudi_iface_op_start(uct_gaudi_iface_t *iface, int async)
{
    ucs_status_t status;

    status = uct_gaudi_iface_dma_get(iface, "copy");
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    /* a new operation must not overtake queued requests; the one being
     * dispatched from the queue is not new (else the queue never drains) */
    if ((!iface->dispatching && !ucs_queue_is_empty(&iface->pending)) ||
        (async && !uct_gaudi_dma_can_submit(iface->dma))) {
        return UCS_ERR_NO_RESOURCE;
    }

    if (ucs_likely(!iface->fenced)) {
        return UCS_OK;
    }

    status = uct_gaudi_dma_quiesce(iface->dma);
    if (status == UCS_OK) {
        iface->fenced = 0;
    }
    return status;
}

uct_gaudi_iface_desc_t *uct_gaudi_iface_desc_get(uct_gaudi_iface_t *iface,
                                                 uct_completion_t *comp)
{
    uct_gaudi_iface_desc_t *desc;

    desc = ucs_mpool_get_inline(&iface->desc_mp);
    if (ucs_unlikely(desc == NULL)) {
        return NULL;
    }

    desc->iface    = iface;
    desc->comp     = comp;
    desc->num_refs = 0;
    return desc;
}

void uct_gaudi_iface_desc_put(uct_gaudi_iface_desc_t *desc)
{
    unsigned i;

    for (i = 0; i < desc->num_refs; i++) {
        uct_gaudi_reg_dma_release(desc->iface->reg, &desc->refs[i]);
    }
    ucs_mpool_put_inline(desc);
}

ucs_status_t uct_gaudi_iface_submit(uct_gaudi_iface_t *iface,
                                    uct_gaudi_iface_desc_t *desc,
                                    const uct_gaudi_dma_xfer_t *xfers,
                                    unsigned count, const char *name)
{
    ucs_status_t status;

    status = uct_gaudi_dma_submit(iface->dma, xfers, count, name,
                                  uct_gaudi_iface_desc_complete, desc);
    if (status == UCS_INPROGRESS) {
        iface->submitted++;
    }
    return status;
}


/* Lifetime */

void uct_gaudi_iface_dma_params(uct_gaudi_dma_params_t *params,
                                const uct_gaudi_iface_dma_config_t *config)
{
    params->max_batch = config->max_batch;
    /* inf is SIZE_MAX: no limit */
    if ((config->batch_bytes != UCS_MEMUNITS_AUTO) &&
        (config->batch_bytes != 0)) {
        params->batch_bytes = config->batch_bytes;
    }
    if ((config->dma_queues != UCS_ULUNITS_AUTO) &&
        (config->dma_queues != UCS_ULUNITS_INF)) {
        params->max_queues = (unsigned)ucs_min(config->dma_queues, UINT_MAX);
    }
    if (config->poll_interval != UCS_TIME_AUTO) {
        params->poll_interval = ucs_time_to_sec(config->poll_interval);
    }
}

void uct_gaudi_iface_dma_params_unset(uct_gaudi_dma_params_t *params)
{
    memset(params, 0, sizeof(*params));
    params->poll_interval = -1;   /* zero is a setting: every progress */
}

ucs_status_t uct_gaudi_iface_dma_init(uct_gaudi_iface_t *iface,
                                      const uct_gaudi_dma_params_t *params)
{
    iface->dma_params = *params;
    if (uct_gaudi_heap_ctx(iface->heap) == NULL) {
        return UCS_OK;   /* the first copy creates it */
    }

    return uct_gaudi_iface_dma_get(iface, "interface open");
}

/* The transport's settings over the defaults of the backend it got */
static void uct_gaudi_iface_dma_params_of(const uct_gaudi_iface_t *iface,
                                          const uct_gaudi_ctx_t *ctx,
                                          uct_gaudi_dma_params_t *params)
{
    const uct_gaudi_dma_params_t *set = &iface->dma_params;

    uct_gaudi_dma_params_default(ctx, params);
#define UCT_GAUDI_IFACE_DMA_SET(_field) \
    if (set->_field != 0) { \
        params->_field = set->_field; \
    }
    UCT_GAUDI_IFACE_DMA_SET(max_inflight);
    UCT_GAUDI_IFACE_DMA_SET(max_queues);
    UCT_GAUDI_IFACE_DMA_SET(cb_size);
    UCT_GAUDI_IFACE_DMA_SET(bounce_size);
    UCT_GAUDI_IFACE_DMA_SET(split_min);
    UCT_GAUDI_IFACE_DMA_SET(sync_timeout);
    UCT_GAUDI_IFACE_DMA_SET(max_batch);
    UCT_GAUDI_IFACE_DMA_SET(batch_bytes);
#undef UCT_GAUDI_IFACE_DMA_SET
    if (set->poll_interval >= 0) {
        params->poll_interval = set->poll_interval;
    }
}

ucs_status_t uct_gaudi_iface_dma_get(uct_gaudi_iface_t *iface,
                                     const char *op)
{
    uct_gaudi_dma_params_t params;
    uct_gaudi_ctx_t *ctx;
    ucs_status_t status;
    const char *reason;

    if (ucs_likely(iface->dma != NULL)) {
        return UCS_OK;
    } else if (iface->no_dma != NULL) {
        ucs_debug("gaudi %s: %s: %s", uct_gaudi_heap_name(iface->heap), op,
                  iface->no_dma);
        return UCS_ERR_UNSUPPORTED;
    }

    status = uct_gaudi_heap_take(iface->heap, 0, 0, op);
    if (status != UCS_OK) {
        return status;
    }

    ctx = uct_gaudi_heap_ctx(iface->heap);
    if (uct_gaudi_dma_check(ctx, &reason) != UCS_OK) {
        /* the backend the device got cannot copy (e.g. Gaudi3 whose
         * SynapseAI could not be loaded): said once per iface */
        iface->no_dma = reason;
        ucs_error("gaudi %s: %s: no copies on this device: %s",
                  ctx->info->name, op, reason);
        return UCS_ERR_UNSUPPORTED;
    }

    uct_gaudi_iface_dma_params_of(iface, ctx, &params);
    status = uct_gaudi_dma_create(ctx, &params, &iface->dma);
    if (status != UCS_OK) {
        return status;
    }

    iface->ctx = ctx;
    ucs_debug("gaudi %s: %s engine created (%s)", ctx->info->name,
              uct_gaudi_dma_backend_name(ctx), op);
    return UCS_OK;
}

void uct_gaudi_iface_dma_close(uct_gaudi_iface_t *iface)
{
    uct_base_iface_progress_disable(&iface->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    if (iface->dma == NULL) {
        return;
    }

    /* queued copies are submitted by the quiesce and released by progress
     * like the others, without calling back the user */
    iface->closing = 1;
    while ((uct_gaudi_dma_inflight(iface->dma) > 0) &&
           (uct_gaudi_dma_quiesce(iface->dma) == UCS_OK)) {
        uct_gaudi_dma_progress(iface->dma, UINT_MAX);
    }

    uct_gaudi_dma_destroy(iface->dma);
    iface->dma = NULL;
}

UCS_CLASS_INIT_FUNC(uct_gaudi_iface_t, uct_iface_ops_t *tl_ops,
                    uct_iface_internal_ops_t *internal_ops,
                    const uct_gaudi_iface_ops_t *ops, uct_md_h md,
                    uct_worker_h worker, const uct_iface_params_t *params,
                    const uct_iface_config_t *tl_config,
                    uct_gaudi_heap_t *heap, uct_gaudi_reg_t *reg,
                    size_t desc_size, unsigned max_poll, const char *tl_name)
{
    ucs_status_t status;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, tl_ops, internal_ops, md,
                              worker, params, tl_config
                              UCS_STATS_ARG(params->stats_root)
                              UCS_STATS_ARG(tl_name));

    ucs_assert(desc_size >= sizeof(uct_gaudi_iface_desc_t));

    /* UCS classes are not zeroed */
    self->heap        = heap;
    self->ctx         = NULL;
    self->reg         = reg;
    self->dma         = NULL;
    self->no_dma      = NULL;
    self->ops         = ops;
    self->submitted   = 0;
    self->delivered   = 0;
    self->fenced      = 0;
    self->closing     = 0;
    self->dispatching = 0;
    self->max_poll    = ucs_max(max_poll, 1);
    ucs_queue_head_init(&self->pending);
    ucs_queue_head_init(&self->flushes);
    ucs_queue_head_init(&self->failed);
    uct_gaudi_iface_dma_params_unset(&self->dma_params);

    status = uct_gaudi_mpool_init(&self->desc_mp, desc_size,
                                  &uct_gaudi_iface_desc_mpool_ops, tl_name);
    if (status != UCS_OK) {
        return status;
    }

    return UCS_OK;
}

UCS_CLASS_CLEANUP_FUNC(uct_gaudi_iface_t)
{
    uct_gaudi_iface_failed_t *failed;
    uct_gaudi_iface_flush_t *flush;

    uct_gaudi_iface_dma_close(self);

    /* closing cancels: the completions are not called */
    while (!ucs_queue_is_empty(&self->failed)) {
        failed = ucs_queue_pull_elem_non_empty(&self->failed,
                                               uct_gaudi_iface_failed_t,
                                               queue);
        ucs_free(failed);
    }

    while (!ucs_queue_is_empty(&self->flushes)) {
        flush = ucs_queue_pull_elem_non_empty(&self->flushes,
                                              uct_gaudi_iface_flush_t, queue);
        ucs_free(flush);
    }

    ucs_mpool_cleanup(&self->desc_mp, 1);
}

UCS_CLASS_DEFINE(uct_gaudi_iface_t, uct_base_iface_t);
