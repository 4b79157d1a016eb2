/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gaudi_iface.h"

#include <limits.h>


void uct_gaudi_iface_init(uct_gaudi_iface_t *xfer)
{
    xfer->submitted   = 0;
    xfer->delivered   = 0;
    xfer->fenced      = 0;
    xfer->closing     = 0;
    xfer->dispatching = 0;
    ucs_queue_head_init(&xfer->pending);
    ucs_queue_head_init(&xfer->flushes);
}

void uct_gaudi_iface_cleanup(uct_gaudi_iface_t *xfer, uct_gaudi_dma_t *dma)
{
    uct_gaudi_iface_flush_t *flush;

    if ((dma != NULL) && (uct_gaudi_dma_quiesce(dma) == UCS_OK)) {
        xfer->closing = 1;
        while (uct_gaudi_dma_inflight(dma) > 0) {
            uct_gaudi_dma_progress(dma, UINT_MAX);
        }
    }

    while (!ucs_queue_is_empty(&xfer->flushes)) {
        flush = ucs_queue_pull_elem_non_empty(&xfer->flushes,
                                              uct_gaudi_iface_flush_t, queue);
        ucs_free(flush);
    }
}

static void uct_gaudi_iface_flushes_progress(uct_gaudi_iface_t *xfer)
{
    uct_gaudi_iface_flush_t *flush;

    while (!ucs_queue_is_empty(&xfer->flushes)) {
        flush = ucs_queue_head_elem_non_empty(&xfer->flushes,
                                              uct_gaudi_iface_flush_t, queue);
        if (flush->target > xfer->delivered) {
            break;
        }
        ucs_queue_pull_non_empty(&xfer->flushes);
        uct_invoke_completion(flush->comp, UCS_OK);
        ucs_free(flush);
    }
}

/* Run pending requests while the ring has room; one that cannot post
 * goes back to the head of the queue */
static void uct_gaudi_iface_pending_progress(uct_gaudi_iface_t *xfer,
                                             uct_gaudi_dma_t *dma)
{
    uct_gaudi_iface_pending_priv_t *priv;
    uct_pending_req_t *req;
    ucs_status_t status;

    while (!ucs_queue_is_empty(&xfer->pending) &&
           uct_gaudi_dma_can_submit(dma)) {
        priv = ucs_queue_pull_elem_non_empty(&xfer->pending,
                                             uct_gaudi_iface_pending_priv_t,
                                             queue_elem);
        req  = ucs_container_of(priv, uct_pending_req_t, priv);
        --(*priv->num_pending);
        xfer->dispatching = 1;
        status            = req->func(req);
        xfer->dispatching = 0;
        if (status != UCS_OK) {
            ucs_queue_push_head(&xfer->pending, &priv->queue_elem);
            ++(*priv->num_pending);
            break;
        }
    }
}

unsigned uct_gaudi_iface_progress(uct_gaudi_iface_t *xfer, uct_gaudi_dma_t *dma,
                                  unsigned max_poll)
{
    unsigned count;

    count = uct_gaudi_dma_progress(dma, max_poll);
    if (count > 0) {
        uct_gaudi_iface_flushes_progress(xfer);
    }

    if (!ucs_queue_is_empty(&xfer->pending)) {
        uct_gaudi_iface_pending_progress(xfer, dma);
    }

    return count;
}

/* UCS_OK when all is delivered, else UCS_INPROGRESS with @a comp (if any)
 * called once the copies submitted so far are */
static ucs_status_t uct_gaudi_iface_flush(uct_gaudi_iface_t *xfer,
                                          uct_base_iface_t *iface,
                                          uct_completion_t *comp)
{
    uct_gaudi_iface_flush_t *flush;

    if (xfer->delivered == xfer->submitted) {
        UCT_TL_IFACE_STAT_FLUSH(iface);
        return UCS_OK;
    }

    if (comp != NULL) {
        flush = ucs_malloc(sizeof(*flush), "gaudi_xfer_flush");
        if (flush == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        flush->target = xfer->submitted;
        flush->comp   = comp;
        ucs_queue_push(&xfer->flushes, &flush->queue);
    }

    UCT_TL_IFACE_STAT_FLUSH_WAIT(iface);
    return UCS_INPROGRESS;
}

ucs_status_t uct_gaudi_iface_iface_flush(uct_gaudi_iface_t *xfer,
                                         uct_base_iface_t *iface,
                                         unsigned flags,
                                         uct_completion_t *comp)
{
    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        return UCS_ERR_UNSUPPORTED;
    }

    return uct_gaudi_iface_flush(xfer, iface, comp);
}

ucs_status_t uct_gaudi_iface_ep_flush(uct_gaudi_iface_t *xfer,
                                      uct_base_iface_t *iface,
                                      uct_base_ep_t *ep,
                                      unsigned *num_pending, unsigned flags,
                                      uct_completion_t *comp)
{
    ucs_status_t status;

    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        /* drop the pending requests, then flush what is posted */
        uct_gaudi_iface_pending_purge(xfer, num_pending, NULL, NULL);
    }

    /* pending requests are not posted yet: flush after they are */
    if (*num_pending > 0) {
        return UCS_ERR_NO_RESOURCE;
    }

    status = uct_gaudi_iface_flush(xfer, iface, comp);
    if (status == UCS_OK) {
        UCT_TL_EP_STAT_FLUSH(ep);
    } else if (status == UCS_INPROGRESS) {
        UCT_TL_EP_STAT_FLUSH_WAIT(ep);
    }
    return status;
}

void uct_gaudi_iface_fence(uct_gaudi_iface_t *xfer, uct_gaudi_dma_t *dma,
                           uct_base_iface_t *iface)
{
    /* the pieces of one copy run on several queues and copies complete
     * out of order: the next copy waits until everything before is done */
    xfer->fenced = (dma != NULL) && (uct_gaudi_dma_inflight(dma) > 0);
    UCT_TL_IFACE_STAT_FENCE(iface);
}

ucs_status_t uct_gaudi_iface_pending_add(uct_gaudi_iface_t *xfer,
                                         uct_gaudi_dma_t *dma,
                                         uct_base_ep_t *ep,
                                         uct_pending_req_t *req,
                                         unsigned *num_pending)
{
    uct_gaudi_iface_pending_priv_t *priv =
            (uct_gaudi_iface_pending_priv_t*)&req->priv;

    UCS_STATIC_ASSERT(sizeof(*priv) <= UCT_PENDING_REQ_PRIV_LEN);

    /* resources are available: the caller should retry right away */
    if ((dma == NULL) ||
        (ucs_queue_is_empty(&xfer->pending) && uct_gaudi_dma_can_submit(dma))) {
        return UCS_ERR_BUSY;
    }

    priv->num_pending = num_pending;
    uct_pending_req_queue_push(&xfer->pending, req);
    ++(*num_pending);
    UCT_TL_EP_STAT_PEND(ep);
    return UCS_OK;
}

void uct_gaudi_iface_pending_purge(uct_gaudi_iface_t *xfer,
                                   unsigned *num_pending,
                                   uct_pending_purge_callback_t cb, void *arg)
{
    uct_gaudi_iface_pending_priv_t *priv;
    ucs_queue_iter_t iter;

    ucs_queue_for_each_safe(priv, iter, &xfer->pending, queue_elem) {
        if (priv->num_pending == num_pending) {
            ucs_queue_del_iter(&xfer->pending, iter);
            --(*num_pending);
            if (cb != NULL) {
                cb(ucs_container_of(priv, uct_pending_req_t, priv), arg);
            }
        }
    }
}
