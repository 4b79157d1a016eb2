/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Batching of asynchronous copies in front of any backend. A submission
 * to a backend costs far more than the module's own work for a copy (one
 * CS ioctl on the kernel backend, and one completion poll per progress
 * call while it runs), so copies posted while the backend is busy are
 * gathered and handed over as one. When the backend is idle a copy goes
 * at once, so a lone copy waits for nothing.
 *
 * A batch also goes once it holds batch_bytes: a submission completes as
 * a whole, so if one held every copy in flight the engines would run dry
 * each time it is reaped and its copies are posted again. Several
 * smaller ones keep work queued on the engines meanwhile. The limit is
 * soft (the copy that reaches it is in the batch), so it never refuses a
 * copy and can_submit stays exact.
 *
 * An open batch is only started while the backend has a free slot, and
 * nothing else submits asynchronous copies, so the slot is still free
 * when the batch is handed over: only the driver's shared window (EAGAIN)
 * or a device in reset can refuse it, and then it stays open for later.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/dma/gaudi_dma_batch.h>

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <ucs/time/time.h>
#include <string.h>
#include <unistd.h>

#define UCT_GAUDI_DMA_BATCH_RETRY_US 1000

/* Longest time between two completion polls (POLL_INTERVAL is clamped) */
#define UCT_GAUDI_DMA_MAX_POLL_INTERVAL 0.01


static UCS_F_ALWAYS_INLINE uct_gaudi_dma_batch_t *
uct_gaudi_dma_batch_open(const uct_gaudi_dma_batches_t *b)
{
    uct_gaudi_dma_batch_t *batch;

    if (b->count == 0) {
        return NULL;
    }

    batch = &b->ring[(b->head + b->count - 1) % b->num];
    return (batch->state == UCT_GAUDI_DMA_BATCH_OPEN) ? batch : NULL;
}

/* Whether a copy of @a count transfers and @a length bytes fits in the
 * open batch @a batch */
static UCS_F_ALWAYS_INLINE int
uct_gaudi_dma_batch_fits(const uct_gaudi_dma_batches_t *b,
                         const uct_gaudi_dma_batch_t *batch, unsigned count,
                         size_t length)
{
    return (batch->num_ops < b->max_ops) &&
           (b->num_xfers + count <= b->max_xfers) &&
           (b->length + length <= UCT_GAUDI_DMA_MAX_COPY);
}

ucs_status_t uct_gaudi_dma_batch_init(uct_gaudi_dma_t *dma)
{
    uct_gaudi_dma_batches_t *b;
    unsigned i;

    b = ucs_calloc(1, sizeof(*b), "gaudi_dma_batches");
    if (b == NULL) {
        goto err;
    }

    b->max_xfers = dma->ops->max_xfers(dma);
    b->max_ops   = (dma->params.max_batch == 0) ?
                   UCT_GAUDI_DMA_DEF_BATCH : dma->params.max_batch;
    b->max_ops   = ucs_min(b->max_ops, b->max_xfers);
    b->max_bytes = (dma->params.batch_bytes == 0) ? SIZE_MAX :
                   dma->params.batch_bytes;
    if (dma->params.poll_interval > UCT_GAUDI_DMA_MAX_POLL_INTERVAL) {
        ucs_warn("%s: poll interval of %g s is too long for completions, "
                 "%g s is used", dma->name, dma->params.poll_interval,
                 UCT_GAUDI_DMA_MAX_POLL_INTERVAL);
        dma->params.poll_interval = UCT_GAUDI_DMA_MAX_POLL_INTERVAL;
    }
    b->poll_gap  = (dma->params.poll_interval > 0) ?
                   ucs_time_from_sec(dma->params.poll_interval) : 0;
    /* every backend slot, the open batch and one refused batch */
    b->num       = dma->num_slots + 2;
    b->ring      = ucs_calloc(b->num, sizeof(*b->ring), "gaudi_dma_batch");
    b->ops       = ucs_calloc((size_t)b->num * b->max_ops, sizeof(*b->ops),
                              "gaudi_dma_batch_ops");
    b->xfers     = ucs_calloc(b->max_xfers, sizeof(*b->xfers),
                              "gaudi_dma_batch_xfers");
    if ((b->ring == NULL) || (b->ops == NULL) || (b->xfers == NULL)) {
        goto err_free;
    }

    for (i = 0; i < b->num; i++) {
        b->ring[i].owner = b;
        b->ring[i].ops   = &b->ops[(size_t)i * b->max_ops];
    }

    dma->batches = b;
    ucs_debug("%s: up to %u copies (%u transfers) per submission, which "
              "goes at %zu bytes", dma->name, b->max_ops, b->max_xfers,
              b->max_bytes);
    return UCS_OK;

err_free:
    ucs_free(b->xfers);
    ucs_free(b->ops);
    ucs_free(b->ring);
    ucs_free(b);
err:
    ucs_error("%s: failed to allocate the DMA batches", dma->name);
    return UCS_ERR_NO_MEMORY;
}

void uct_gaudi_dma_batch_cleanup(uct_gaudi_dma_t *dma)
{
    uct_gaudi_dma_batches_t *b = dma->batches;

    if (b == NULL) {
        return;
    }

    if (uct_gaudi_dma_batch_open(b) != NULL) {
        ucs_debug("%s: %u queued copies dropped at close", dma->name,
                  uct_gaudi_dma_batch_open(b)->num_ops);
    }

    ucs_free(b->xfers);
    ucs_free(b->ops);
    ucs_free(b->ring);
    ucs_free(b);
    dma->batches = NULL;
}


/* Delivery, in submission order */

/* Complete every copy of @a batch, the oldest batch, with @a status */
static void uct_gaudi_dma_batch_deliver(uct_gaudi_dma_batches_t *b,
                                        uct_gaudi_dma_batch_t *batch,
                                        ucs_status_t status)
{
    unsigned i;

    ucs_assert(batch == &b->ring[b->head]);
    /* a callback may submit: the batch keeps its place until the end, so
     * that a new batch cannot take it */
    for (i = 0; i < batch->num_ops; i++) {
        b->inflight--;
        b->delivered++;
        if (batch->ops[i].cb != NULL) {
            batch->ops[i].cb(batch->ops[i].arg, status);
        }
    }

    b->head = (b->head + 1) % b->num;
    b->count--;
}

/* Refused batches at the head of the ring: nothing before them is left */
static void uct_gaudi_dma_batch_deliver_failed(uct_gaudi_dma_batches_t *b)
{
    uct_gaudi_dma_batch_t *batch;

    while (b->count > 0) {
        batch = &b->ring[b->head];
        if (batch->state != UCT_GAUDI_DMA_BATCH_FAILED) {
            break;
        }
        uct_gaudi_dma_batch_deliver(b, batch, batch->status);
    }
}

/* The backend completed a batch (backends complete in submission order) */
static void uct_gaudi_dma_batch_done(void *arg, ucs_status_t status)
{
    uct_gaudi_dma_batch_t *batch = arg;
    uct_gaudi_dma_batches_t *b   = batch->owner;

    uct_gaudi_dma_batch_deliver_failed(b);
    uct_gaudi_dma_batch_deliver(b, batch, status);
}


/* Submission */

/* The open batch is refused with @a status: its copies fail in order */
static void uct_gaudi_dma_batch_fail(uct_gaudi_dma_batches_t *b,
                                     uct_gaudi_dma_batch_t *batch,
                                     ucs_status_t status)
{
    batch->state  = UCT_GAUDI_DMA_BATCH_FAILED;
    batch->status = status;
    b->num_xfers  = 0;
    b->length     = 0;
}

/*
 * Hand the open batch over to the backend. UCS_OK: submitted (or none);
 * UCS_ERR_NO_RESOURCE: the batch stays open; other: refused, the batch
 * is still open and the caller decides.
 */
static ucs_status_t uct_gaudi_dma_batch_kick(uct_gaudi_dma_t *dma)
{
    uct_gaudi_dma_batches_t *b   = dma->batches;
    uct_gaudi_dma_batch_t *batch = uct_gaudi_dma_batch_open(b);
    const char *name;
    ucs_status_t status;

    if (batch == NULL) {
        return UCS_OK;
    }

    name = batch->op_name;
    if (batch->num_ops > 1) {
        ucs_snprintf_zero(batch->name, sizeof(batch->name),
                          "%s and %u more copies", batch->op_name,
                          batch->num_ops - 1);
        name = batch->name;
    }

    /* a batch starts only with a ring slot free (batch_start) and only
     * its own kick takes one */
    ucs_assert(!uct_gaudi_dma_ring_full(dma));
    status = dma->ops->submit(dma, b->xfers, b->num_xfers, name,
                              uct_gaudi_dma_batch_done, batch);
    if (status == UCS_INPROGRESS) {
        batch->state = UCT_GAUDI_DMA_BATCH_SUBMITTED;
        b->num_xfers = 0;
        b->length    = 0;
        return UCS_OK;
    } else if (status == UCS_OK) {
        /* nothing reached the device: done as it is */
        uct_gaudi_dma_batch_fail(b, batch, UCS_OK);
        return UCS_OK;
    }

    return status;
}

void uct_gaudi_dma_batch_doorbell(uct_gaudi_dma_t *dma)
{
    uct_gaudi_dma_batches_t *b = dma->batches;
    ucs_status_t status;

    status = uct_gaudi_dma_batch_kick(dma);
    if ((status != UCS_OK) && (status != UCS_ERR_NO_RESOURCE)) {
        uct_gaudi_dma_batch_fail(b, uct_gaudi_dma_batch_open(b), status);
    }
}

/* Start an open batch at the tail, or NULL if the backend has no slot */
static uct_gaudi_dma_batch_t *
uct_gaudi_dma_batch_start(uct_gaudi_dma_t *dma, const char *name)
{
    uct_gaudi_dma_batches_t *b = dma->batches;
    uct_gaudi_dma_batch_t *batch;

    if ((b->count == b->num) || uct_gaudi_dma_ring_full(dma)) {
        return NULL;
    }

    batch          = &b->ring[(b->head + b->count) % b->num];
    batch->state   = UCT_GAUDI_DMA_BATCH_OPEN;
    batch->num_ops = 0;
    batch->op_name = name;
    b->num_xfers   = 0;
    b->length      = 0;
    b->count++;
    return batch;
}

/* A lone copy the backend refused: it was never accepted */
static void uct_gaudi_dma_batch_undo(uct_gaudi_dma_batches_t *b)
{
    b->count--;
    b->inflight--;
    b->num_xfers = 0;
    b->length    = 0;
}

ucs_status_t uct_gaudi_dma_batch_submit(uct_gaudi_dma_t *dma,
                                        const uct_gaudi_dma_xfer_t *xfers,
                                        unsigned count, const char *name,
                                        uct_gaudi_dma_comp_cb_t cb,
                                        void *arg)
{
    uct_gaudi_dma_batches_t *b = dma->batches;
    uct_gaudi_dma_batch_t *batch;
    size_t length = 0;
    ucs_status_t status;
    unsigned i;

    status = uct_gaudi_dma_check_xfers(dma, xfers, count, name);
    if (status != UCS_OK) {
        return status;
    }

    for (i = 0; i < count; i++) {
        length += xfers[i].length;
    }
    if (length == 0) {
        return UCS_OK;
    }

    batch = uct_gaudi_dma_batch_open(b);
    if ((batch != NULL) && !uct_gaudi_dma_batch_fits(b, batch, count,
                                                     length)) {
        uct_gaudi_dma_batch_doorbell(dma);
        if (uct_gaudi_dma_batch_open(b) != NULL) {
            return UCS_ERR_NO_RESOURCE;
        }
        batch = NULL;
    }

    if (batch == NULL) {
        batch = uct_gaudi_dma_batch_start(dma, name);
        if (batch == NULL) {
            return UCS_ERR_NO_RESOURCE;
        }
    }

    memcpy(&b->xfers[b->num_xfers], xfers, count * sizeof(*xfers));
    b->num_xfers                 += count;
    b->length                    += length;
    batch->ops[batch->num_ops].cb  = cb;
    batch->ops[batch->num_ops].arg = arg;
    batch->num_ops++;
    b->inflight++;

    /* an idle backend takes it now; a full batch goes too */
    if ((dma->ring_count > 0) && (b->length < b->max_bytes) &&
        uct_gaudi_dma_batch_fits(b, batch, UCT_GAUDI_DMA_BATCH_OP_XFERS, 0)) {
        return UCS_INPROGRESS;
    }

    status = uct_gaudi_dma_batch_kick(dma);
    if ((status == UCS_OK) ||
        ((status == UCS_ERR_NO_RESOURCE) && (batch->num_ops > 1))) {
        return UCS_INPROGRESS;
    } else if (batch->num_ops == 1) {
        /* the copy alone was refused: say so now, as without batching */
        uct_gaudi_dma_batch_undo(b);
        return status;
    }

    /* accepted copies cannot fail now: they fail from progress */
    uct_gaudi_dma_batch_fail(b, batch, status);
    return UCS_INPROGRESS;
}

/*
 * Whether the backend's completions are due for a poll: UCX calls
 * progress in a tight loop, and each poll of the kernel backend is a
 * WAIT_CS ioctl, a system call on hardware (SynapseAI's event query ends
 * in the same one). At most one per poll_gap.
 */
static int uct_gaudi_dma_batch_poll_due(uct_gaudi_dma_batches_t *b)
{
    ucs_time_t now;

    if (b->poll_gap == 0) {
        return 1;
    }

    now = ucs_get_time();
    if (now - b->last_poll < b->poll_gap) {
        return 0;
    }

    b->last_poll = now;
    return 1;
}

unsigned uct_gaudi_dma_batch_progress(uct_gaudi_dma_t *dma, unsigned max)
{
    uct_gaudi_dma_batches_t *b = dma->batches;

    b->delivered = 0;
    if (b->count == 0) {
        return 0;   /* nothing posted */
    }

    if ((dma->ring_count > 0) && uct_gaudi_dma_batch_poll_due(b)) {
        dma->ops->progress(dma, max);
    }
    uct_gaudi_dma_batch_deliver_failed(b);
    /* what was posted since the last call, as one submission */
    if (uct_gaudi_dma_batch_open(b) != NULL) {
        uct_gaudi_dma_batch_doorbell(dma);
        uct_gaudi_dma_batch_deliver_failed(b);
    }
    return b->delivered;
}

int uct_gaudi_dma_batch_can_submit(const uct_gaudi_dma_t *dma)
{
    const uct_gaudi_dma_batches_t *b   = dma->batches;
    const uct_gaudi_dma_batch_t *batch = uct_gaudi_dma_batch_open(b);

    /* exact for copies of up to UCT_GAUDI_DMA_BATCH_OP_XFERS transfers */
    if (batch != NULL) {
        return uct_gaudi_dma_batch_fits(b, batch, UCT_GAUDI_DMA_BATCH_OP_XFERS,
                                        0);
    }

    return (b->count < b->num) && !uct_gaudi_dma_ring_full(dma);
}

ucs_status_t uct_gaudi_dma_batch_quiesce(uct_gaudi_dma_t *dma)
{
    uct_gaudi_dma_batches_t *b = dma->batches;
    ucs_time_t deadline        = ucs_get_time() +
                                 ucs_time_from_sec(dma->params.sync_timeout);
    ucs_status_t status;

    /* the queued copies go first; only the driver's window shared with
     * other engines, or a reset, can hold them back */
    while ((status = uct_gaudi_dma_batch_kick(dma)) == UCS_ERR_NO_RESOURCE) {
        status = dma->ops->quiesce(dma);
        if (status != UCS_OK) {
            return status;
        } else if (ucs_get_time() >= deadline) {
            ucs_error("%s: queued DMA copies could not be submitted for "
                      "%.0f s", dma->name, dma->params.sync_timeout);
            return UCS_ERR_TIMED_OUT;
        }
        usleep(UCT_GAUDI_DMA_BATCH_RETRY_US);
    }

    if (status != UCS_OK) {
        uct_gaudi_dma_batch_fail(b, uct_gaudi_dma_batch_open(b), status);
    }

    return dma->ops->quiesce(dma);
}
