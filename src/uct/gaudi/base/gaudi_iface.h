/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Asynchronous copies of an iface on its DMA engine (base/gaudi_dma.h):
 * the completion counters, flushes, fence and pending queue shared by
 * gaudi_cpy and gaudi_ipc. Copies are not tracked per ep: a flush waits
 * for every copy of the iface.
 */

#ifndef UCT_GAUDI_IFACE_H_
#define UCT_GAUDI_IFACE_H_

#include <ucs/datastruct/queue.h>
#include <uct/base/uct_iface.h>
#include <uct/gaudi/base/gaudi_dma.h>


/* A flush with a completion: done when @a target copies are delivered */
typedef struct uct_gaudi_iface_flush {
    ucs_queue_elem_t queue;
    uint64_t         target;
    uct_completion_t *comp;
} uct_gaudi_iface_flush_t;


/* What a pending request keeps in uct_pending_req_t::priv */
typedef struct {
    ucs_queue_elem_t queue_elem;
    unsigned         *num_pending; /* of the ep that added it: identifies
                                      the ep for purge */
} uct_gaudi_iface_pending_priv_t;


/* Embedded in an iface; the DMA engine stays the iface's (NULL when
 * gaudi_ipc cannot import) and is passed to the calls that use it */
typedef struct uct_gaudi_xfer {
    ucs_queue_head_t pending;     /* uct_gaudi_iface_pending_priv_t */
    ucs_queue_head_t flushes;     /* uct_gaudi_iface_flush_t */
    uint64_t         submitted;   /* async copies submitted */
    uint64_t         delivered;   /* async copies completed */
    int              fenced;      /* next copy waits for all */
    int              closing;     /* completions not delivered */
    int              dispatching; /* a pending request is being run */
} uct_gaudi_iface_t;


/* A new operation must not overtake queued requests; the one being
 * dispatched from the queue is not new (else the queue never drains) */
static UCS_F_ALWAYS_INLINE int
uct_gaudi_iface_must_queue(const uct_gaudi_iface_t *xfer)
{
    return !xfer->dispatching && !ucs_queue_is_empty(&xfer->pending);
}


void uct_gaudi_iface_init(uct_gaudi_iface_t *xfer);

/* Let the device finish, then release what the copies hold without calling
 * back the user (closing): the close cancels the operations */
void uct_gaudi_iface_cleanup(uct_gaudi_iface_t *xfer, uct_gaudi_dma_t *dma);

/* Deliver up to @a max_poll completions, then the flushes they satisfy,
 * then the pending requests the ring has room for */
unsigned uct_gaudi_iface_progress(uct_gaudi_iface_t *xfer, uct_gaudi_dma_t *dma,
                                  unsigned max_poll);

/* An iface's flush: UCS_OK when all is delivered, else UCS_INPROGRESS
 * with @a comp (if any) called once the copies submitted so far are;
 * UCT_FLUSH_FLAG_CANCEL is for endpoints only */
ucs_status_t uct_gaudi_iface_iface_flush(uct_gaudi_iface_t *xfer,
                                         uct_base_iface_t *iface,
                                         unsigned flags,
                                         uct_completion_t *comp);

/* An ep's flush: after its pending requests are posted, or dropped with
 * UCT_FLUSH_FLAG_CANCEL; @a num_pending: the ep's count of them */
ucs_status_t uct_gaudi_iface_ep_flush(uct_gaudi_iface_t *xfer,
                                      uct_base_iface_t *iface,
                                      uct_base_ep_t *ep,
                                      unsigned *num_pending, unsigned flags,
                                      uct_completion_t *comp);

void uct_gaudi_iface_fence(uct_gaudi_iface_t *xfer, uct_gaudi_dma_t *dma,
                           uct_base_iface_t *iface);

/* @a num_pending: the ep's count of requests in the queue */
ucs_status_t uct_gaudi_iface_pending_add(uct_gaudi_iface_t *xfer,
                                         uct_gaudi_dma_t *dma,
                                         uct_base_ep_t *ep,
                                         uct_pending_req_t *req,
                                         unsigned *num_pending);

void uct_gaudi_iface_pending_purge(uct_gaudi_iface_t *xfer,
                                   unsigned *num_pending,
                                   uct_pending_purge_callback_t cb, void *arg);


/* Wait for the copies before a fence; called by every data op */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gaudi_iface_fence_wait(uct_gaudi_iface_t *xfer, uct_gaudi_dma_t *dma)
{
    ucs_status_t status;

    if (ucs_likely(!xfer->fenced)) {
        return UCS_OK;
    }

    status = uct_gaudi_dma_quiesce(dma);
    if (status == UCS_OK) {
        xfer->fenced = 0;
    }
    return status;
}

#endif
