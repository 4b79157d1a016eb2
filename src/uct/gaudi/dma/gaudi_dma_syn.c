/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * DMA engine, SynapseAI backend (docs/synapse.md): copies are
 * synMemCopyAsync on streams the engine owns, completions are events
 * recorded after each copy and polled with synEventQuery from progress.
 * SynapseAI owns the device (the context borrows its fd); host sides are
 * host pointers, device sides device VAs; host<->device copies go direct
 * or staged (gaudi_dma_syn_host.c).
 * Same semantics as the kernel backend (gaudi_dma.h): asynchronous copies
 * complete in order, synchronous ones on a stream of their own. A failed
 * copy completes with its error; a stream keeps no failure state, so the
 * engine goes on with the same streams (by default SynapseAI kills the
 * process on a device error anyway, docs/synapse.md).
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/dma/gaudi_dma_syn.h>
#include <uct/gaudi/dev/gaudi_dev.h>

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/sys.h>
#include <ucs/time/time.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

/* Transfers of one submit (each is one synMemCopyAsync) */
#define UCT_GAUDI_DMA_SYN_MAX_XFERS   256
#define UCT_GAUDI_DMA_SYN_DEF_SLOTS   64
#define UCT_GAUDI_DMA_SYN_SLEEP_US    50


static ucs_status_t uct_gaudi_dma_syn_check(const uct_gaudi_ctx_t *ctx,
                                            const char **reason_p)
{
    if (ctx->syn == NULL) {
        *reason_p = "SynapseAI does not hold the device";
        return UCS_ERR_UNSUPPORTED;
    }

    *reason_p = NULL;
    return UCS_OK;
}

static void uct_gaudi_dma_syn_params_default(const uct_gaudi_ctx_t *ctx,
                                             uct_gaudi_dma_params_t *params)
{
    params->max_inflight = UCT_GAUDI_DMA_SYN_DEF_SLOTS;
    params->max_queues   = 1;      /* one stream per engine */
    params->cb_size      = 0;      /* SynapseAI builds the commands */
    params->bounce_size  = 256 * UCS_KBYTE;
    params->split_min    = 256 * UCS_KBYTE;
    params->sync_timeout = 60.0;
    params->poll_interval = 0;  /* synEventQuery: measured, no gain */
    /* one event per batch, whatever its size: the byte limit was measured
     * on the kernel backend only (docs/performance.md) */
    params->batch_bytes  = SIZE_MAX;
}

static void uct_gaudi_dma_syn_params_apply(uct_gaudi_dma_syn_t *dma,
                                           const uct_gaudi_dma_params_t *p)
{
    uct_gaudi_dma_params_t def;

    uct_gaudi_dma_syn_params_default(dma->super.ctx, &def);
    dma->super.params = def;
    if (p->max_inflight != 0) {
        dma->super.params.max_inflight = p->max_inflight;
    }
    if (p->bounce_size != 0) {
        dma->super.params.bounce_size = ucs_align_up(p->bounce_size, 64);
    }
    if (p->sync_timeout > 0) {
        dma->super.params.sync_timeout = p->sync_timeout;
    }
    if (p->max_queues > def.max_queues) {
        ucs_diag("%s: the synapse backend copies on one stream per engine: "
                 "%u DMA queues asked for, using one", dma->super.name,
                 p->max_queues);
    }
    dma->super.num_slots = dma->super.params.max_inflight;
}

/* synDmaDir of a transfer; host to host has none */
static int uct_gaudi_dma_syn_dir(const uct_gaudi_dma_xfer_t *xfer,
                                 uct_gaudi_syn_dir_t *dir_p)
{
    switch (xfer->flags & (UCT_GAUDI_DMA_XFER_SRC_HOST |
                           UCT_GAUDI_DMA_XFER_DST_HOST)) {
    case UCT_GAUDI_DMA_XFER_SRC_HOST:
        *dir_p = UCT_GAUDI_SYN_HOST_TO_DRAM;
        return 1;
    case UCT_GAUDI_DMA_XFER_DST_HOST:
        *dir_p = UCT_GAUDI_SYN_DRAM_TO_HOST;
        return 1;
    case 0:
        *dir_p = UCT_GAUDI_SYN_DRAM_TO_DRAM;
        return 1;
    default:
        return 0;
    }
}

/*
 * Queue @a xfers on @a stream and record @a slot's event after them.
 * UCS_INPROGRESS: queued (a transfer that failed after the first one was
 * queued makes the slot complete with its error); UCS_OK: nothing to
 * copy; else nothing was queued.
 */
static ucs_status_t uct_gaudi_dma_syn_queue(uct_gaudi_dma_syn_t *dma,
                                            uct_gaudi_syn_stream_t stream,
                                            uct_gaudi_dma_syn_slot_t *slot,
                                            const uct_gaudi_dma_xfer_t *xfers,
                                            unsigned count, const char *name)
{
    unsigned i, queued = 0;
    uct_gaudi_syn_dir_t dir;
    ucs_status_t status;

    slot->length = 0;
    slot->status = UCS_OK;
    for (i = 0; i < count; i++) {
        if (xfers[i].length == 0) {
            continue;
        }

        if (!uct_gaudi_dma_syn_dir(&xfers[i], &dir)) {
            /* host to host: SynapseAI has no direction for it; the CPU
             * copies once the copies queued before it are done */
            status = uct_gaudi_syn_stream_sync(dma->syn, stream);
            if (status == UCS_OK) {
                memmove((void*)(uintptr_t)xfers[i].dst,
                        (void*)(uintptr_t)xfers[i].src, xfers[i].length);
            }
        } else if (dir == UCT_GAUDI_SYN_DRAM_TO_DRAM) {
            status = uct_gaudi_dma_syn_direct(dma, stream, &xfers[i], dir,
                                              name);
        } else {
            status = uct_gaudi_dma_syn_host_xfer(dma, stream, &xfers[i], dir,
                                                 name);
        }
        if (status != UCS_OK) {
            if (queued == 0) {
                return status;
            }
            slot->status = status;
            break;
        }

        slot->length += xfers[i].length;
        queued++;
    }

    if (queued == 0) {
        return UCS_OK;
    }

    status = uct_gaudi_syn_event_record(dma->syn, slot->event, stream);
    if (status != UCS_OK) {
        /* no event: wait for the stream instead, the copy is done then */
        slot->status = uct_gaudi_syn_stream_sync(dma->syn, stream);
        if (slot->status == UCS_OK) {
            slot->status = status;
        }
        slot->state = UCT_GAUDI_DMA_SYN_DONE;
    } else {
        slot->state = UCT_GAUDI_DMA_SYN_INFLIGHT;
    }

    slot->name = name;
    return UCS_INPROGRESS;
}

/* Poll @a slot's event; 1 when it is DONE (with its status) */
static int uct_gaudi_dma_syn_poll(uct_gaudi_dma_syn_t *dma,
                                  uct_gaudi_dma_syn_slot_t *slot)
{
    ucs_status_t status;

    if (slot->state != UCT_GAUDI_DMA_SYN_INFLIGHT) {
        return 1;
    }

    status = uct_gaudi_syn_event_query(dma->syn, slot->event);
    if (status == UCS_INPROGRESS) {
        return 0;
    }

    if (status != UCS_OK) {
        ucs_error("%s: %s of %zu bytes failed: %s", dma->super.name,
                  slot->name, slot->length, (status == UCS_ERR_IO_ERROR) ?
                  "aborted by a DMA error or a device reset" :
                  ucs_status_string(status));
    }
    if (slot->status == UCS_OK) {
        slot->status = status;
    }
    slot->state = UCT_GAUDI_DMA_SYN_DONE;
    return 1;
}

/* Wait until @a slot is DONE, up to sync_timeout */
static ucs_status_t uct_gaudi_dma_syn_wait(uct_gaudi_dma_syn_t *dma,
                                           uct_gaudi_dma_syn_slot_t *slot)
{
    ucs_time_t deadline = ucs_get_time() +
                          ucs_time_from_sec(dma->super.params.sync_timeout);
    unsigned spins      = 0;

    while (!uct_gaudi_dma_syn_poll(dma, slot)) {
        if (ucs_get_time() >= deadline) {
            ucs_error("%s: %s of %zu bytes still running after %.0f s",
                      dma->super.name, slot->name, slot->length,
                      dma->super.params.sync_timeout);
            return UCS_ERR_TIMED_OUT;
        }
        /* short copies finish within microseconds: spin, then sleep */
        if (++spins < 1000) {
            sched_yield();
        } else {
            usleep(UCT_GAUDI_DMA_SYN_SLEEP_US);
        }
    }

    return UCS_OK;
}


/* Asynchronous copies */

static ucs_status_t uct_gaudi_dma_syn_submit(uct_gaudi_dma_t *base,
                                             const uct_gaudi_dma_xfer_t *xfers,
                                             unsigned count, const char *name,
                                             uct_gaudi_dma_comp_cb_t cb,
                                             void *arg)
{
    uct_gaudi_dma_syn_t *dma = ucs_derived_of(base, uct_gaudi_dma_syn_t);
    uct_gaudi_dma_syn_slot_t *slot;
    ucs_status_t status;

    slot   = &dma->slots[uct_gaudi_dma_ring_index(base, base->ring_count)];
    status = uct_gaudi_dma_syn_queue(dma, dma->stream, slot, xfers, count,
                                     name);
    if (status != UCS_INPROGRESS) {
        return status;
    }

    slot->cb  = cb;
    slot->arg = arg;
    base->ring_count++;
    return UCS_INPROGRESS;
}

static unsigned uct_gaudi_dma_syn_progress(uct_gaudi_dma_t *base,
                                           unsigned max)
{
    uct_gaudi_dma_syn_t *dma = ucs_derived_of(base, uct_gaudi_dma_syn_t);
    uct_gaudi_dma_syn_slot_t *slot;
    unsigned delivered = 0;

    /* in submission order: stop at the first copy still running */
    while ((base->ring_count > 0) && (delivered < max)) {
        slot = &dma->slots[base->ring_head];
        if (!uct_gaudi_dma_syn_poll(dma, slot)) {
            break;
        }

        /* pop before the callback: it may submit again */
        uct_gaudi_dma_ring_pop(base);
        slot->state = UCT_GAUDI_DMA_SYN_FREE;
        delivered++;
        if (slot->cb != NULL) {
            slot->cb(slot->arg, slot->status);
        }
    }

    return delivered;
}

static unsigned uct_gaudi_dma_syn_xfers_of(size_t cb_size)
{
    return UCT_GAUDI_DMA_SYN_MAX_XFERS;   /* SynapseAI builds the commands */
}

static unsigned uct_gaudi_dma_syn_max_xfers(const uct_gaudi_dma_t *base)
{
    return uct_gaudi_dma_syn_xfers_of(0);
}

static ucs_status_t uct_gaudi_dma_syn_quiesce(uct_gaudi_dma_t *base)
{
    uct_gaudi_dma_syn_t *dma = ucs_derived_of(base, uct_gaudi_dma_syn_t);
    unsigned i;

    /* in order: once the newest is done, so is every earlier one */
    for (i = 0; i < base->ring_count; i++) {
        if (uct_gaudi_dma_syn_wait(
                    dma, &dma->slots[uct_gaudi_dma_ring_index(base, i)]) !=
            UCS_OK) {
            return UCS_ERR_TIMED_OUT;
        }
    }

    return UCS_OK;
}


/* Synchronous copies: a stream of their own, never delivering others */

static ucs_status_t
uct_gaudi_dma_syn_sync_run(uct_gaudi_dma_syn_t *dma,
                           const uct_gaudi_dma_xfer_t *xfers, unsigned count,
                           const char *name)
{
    ucs_status_t status;

    if (dma->sync->state == UCT_GAUDI_DMA_SYN_INFLIGHT) {
        /* a previous one timed out: it owns the slot until done */
        if (!uct_gaudi_dma_syn_poll(dma, dma->sync)) {
            ucs_error("%s: a previous synchronous copy is still running on "
                      "the device", dma->super.name);
            return UCS_ERR_BUSY;
        }
    }

    dma->sync->state = UCT_GAUDI_DMA_SYN_FREE;
    status = uct_gaudi_dma_syn_queue(dma, dma->sync_stream, dma->sync, xfers,
                                     count, name);
    if (status != UCS_INPROGRESS) {
        return status;
    }

    status = uct_gaudi_dma_syn_wait(dma, dma->sync);
    if (status != UCS_OK) {
        return status;
    }

    dma->sync->state = UCT_GAUDI_DMA_SYN_FREE;
    return dma->sync->status;
}

static ucs_status_t uct_gaudi_dma_syn_copy(uct_gaudi_dma_t *base,
                                           const uct_gaudi_dma_xfer_t *xfers,
                                           unsigned count, const char *name)
{
    return uct_gaudi_dma_syn_sync_run(ucs_derived_of(base,
                                                     uct_gaudi_dma_syn_t),
                                      xfers, count, name);
}

static ucs_status_t uct_gaudi_dma_syn_bounce_copy(uct_gaudi_dma_t *base,
                                                  int to_device,
                                                  uint64_t dma_addr,
                                                  size_t length,
                                                  const char *name)
{
    uint64_t bounce = (uintptr_t)base->bounce;
    uct_gaudi_dma_xfer_t xfer;

    xfer.src    = to_device ? bounce : dma_addr;
    xfer.dst    = to_device ? dma_addr : bounce;
    xfer.length = length;
    xfer.flags  = to_device ? UCT_GAUDI_DMA_XFER_SRC_HOST :
                  UCT_GAUDI_DMA_XFER_DST_HOST;
    return uct_gaudi_dma_syn_sync_run(ucs_derived_of(base,
                                                     uct_gaudi_dma_syn_t),
                                      &xfer, 1, name);
}

/* No memset in the API subset: the bounce buffer, filled once, is copied
 * over the range in bounce-sized steps */
static ucs_status_t uct_gaudi_dma_syn_fill(uct_gaudi_dma_t *base,
                                           uint64_t dma_addr, int value,
                                           size_t length, const char *name)
{
    size_t off, len;
    ucs_status_t status;

    memset(base->bounce, value, ucs_min(length, base->params.bounce_size));
    for (off = 0; off < length; off += len) {
        len    = ucs_min(length - off, base->params.bounce_size);
        status = uct_gaudi_dma_syn_bounce_copy(base, 1, dma_addr + off, len,
                                               name);
        if (status != UCS_OK) {
            return status;
        }
    }

    return UCS_OK;
}


/* Setup and teardown */

static ucs_status_t uct_gaudi_dma_syn_bounce_init(uct_gaudi_dma_syn_t *dma)
{
    size_t size = ucs_align_up(dma->super.params.bounce_size,
                               ucs_get_page_size());
    ucs_status_t status;
    void *area;
    int ret;

    ret = ucs_posix_memalign(&area, ucs_get_page_size(), size,
                             "gaudi_dma_bounce");
    if (ret != 0) {
        ucs_error("%s: failed to allocate %zu bytes of bounce buffer",
                  dma->super.name, size);
        return UCS_ERR_NO_MEMORY;
    }
    uct_gaudi_numa_place(dma->super.ctx, area, size, "DMA bounce buffer");
    memset(area, 0, size);

    /* the module's one entry in SynapseAI's shared table: whole pages of
     * its own, which no application buffer can share */
    status = uct_gaudi_syn_host_map(dma->syn, dma->device, area, size);
    if (status != UCS_OK) {
        ucs_error("%s: the bounce buffer %p (%zu bytes) cannot be mapped "
                  "for the device", dma->super.name, area, size);
        ucs_free(area);
        return status;
    }

    dma->super.bounce = area;
    return UCS_OK;
}

/* SynapseAI's objects of the engine: events of every slot, the streams
 * and the bounce buffer's map; whatever was set up (zeroed otherwise) */
static void uct_gaudi_dma_syn_objects_destroy(uct_gaudi_dma_syn_t *dma)
{
    unsigned i;

    for (i = 0; (dma->slots != NULL) && (i <= dma->super.num_slots); i++) {
        if (dma->slots[i].event != NULL) {
            (void)uct_gaudi_syn_event_destroy(dma->syn, dma->slots[i].event);
        }
    }
    if (dma->stage_event != NULL) {
        (void)uct_gaudi_syn_event_destroy(dma->syn, dma->stage_event);
    }
    if (dma->sync_stream != NULL) {
        (void)uct_gaudi_syn_stream_destroy(dma->syn, dma->sync_stream);
    }
    if (dma->stream != NULL) {
        (void)uct_gaudi_syn_stream_destroy(dma->syn, dma->stream);
    }
    if ((dma->super.bounce != NULL) &&
        (dma->syn->ops.host_unmap(dma->device, dma->super.bounce) !=
         UCT_GAUDI_SYN_SUCCESS)) {
        ucs_debug("%s: synHostUnmap of the bounce buffer %p failed",
                  dma->super.name, dma->super.bounce);
    }
}

/* The engine and whatever of it was set up */
static void uct_gaudi_dma_syn_cleanup(uct_gaudi_dma_syn_t *dma)
{
    if ((dma->super.ctx == NULL) || uct_gaudi_ctx_present(dma->super.ctx)) {
        uct_gaudi_dma_syn_objects_destroy(dma);
    } else {
        /* the application released the device first: SynapseAI destroyed
         * the streams, events and host maps with it */
        ucs_debug("%s: device released by the application: its SynapseAI "
                  "objects went with it", dma->super.name);
    }
    ucs_free(dma->super.bounce);
    ucs_free(dma->slots);
    ucs_free(dma);
}

static ucs_status_t
uct_gaudi_dma_syn_create(uct_gaudi_ctx_t *ctx,
                         const uct_gaudi_dma_params_t *params,
                         uct_gaudi_dma_t **dma_p)
{
    uct_gaudi_dma_syn_t *dma;
    ucs_status_t status;
    unsigned i;

    if (ctx->syn == NULL) {
        ucs_debug("gaudi %s: no SynapseAI DMA engine: SynapseAI does not "
                  "hold the device", ctx->info->name);
        return UCS_ERR_UNSUPPORTED;
    }

    dma = ucs_calloc(1, sizeof(*dma), "gaudi_dma_syn");
    if (dma == NULL) {
        ucs_error("gaudi: failed to allocate a DMA engine");
        return UCS_ERR_NO_MEMORY;
    }

    uct_gaudi_dma_init_base(&dma->super, &uct_gaudi_dma_syn_ops, ctx);
    dma->syn    = ctx->syn;
    dma->device = ctx->syn_device;
    uct_gaudi_dma_syn_params_apply(dma, params);

    dma->slots = ucs_calloc(dma->super.num_slots + 1, sizeof(*dma->slots),
                            "gaudi_dma_syn_slots");
    if (dma->slots == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err;
    }
    dma->sync = &dma->slots[dma->super.num_slots];

    for (i = 0; i <= dma->super.num_slots; i++) {
        status = uct_gaudi_syn_event_create(dma->syn, dma->device,
                                            &dma->slots[i].event);
        if (status != UCS_OK) {
            goto err;
        }
    }

    status = uct_gaudi_syn_event_create(dma->syn, dma->device,
                                        &dma->stage_event);
    if (status != UCS_OK) {
        goto err;
    }

    status = uct_gaudi_syn_stream_create(dma->syn, dma->device, &dma->stream);
    if (status != UCS_OK) {
        goto err;
    }

    status = uct_gaudi_syn_stream_create(dma->syn, dma->device,
                                         &dma->sync_stream);
    if (status != UCS_OK) {
        goto err;
    }

    status = uct_gaudi_dma_syn_bounce_init(dma);
    if (status != UCS_OK) {
        goto err;
    }

    ucs_debug("%s: SynapseAI DMA engine: %u async slot(s), bounce %zu B",
              dma->super.name, dma->super.num_slots,
              dma->super.params.bounce_size);
    *dma_p = &dma->super;
    return UCS_OK;

err:
    uct_gaudi_dma_syn_cleanup(dma);
    return status;
}

static void uct_gaudi_dma_syn_destroy(uct_gaudi_dma_t *base)
{
    uct_gaudi_dma_syn_t *dma = ucs_derived_of(base, uct_gaudi_dma_syn_t);
    unsigned i;

    if (base->ring_count > 0) {
        ucs_debug("%s: closing the DMA engine with %u copies undelivered",
                  base->name, base->ring_count);
    }

    /* the device may still read the bounce buffer and user buffers */
    for (i = 0; i <= base->num_slots; i++) {
        if (uct_gaudi_dma_syn_wait(dma, &dma->slots[i]) != UCS_OK) {
            ucs_error("%s: DMA copies still running at close, the engine "
                      "is leaked", base->name);
            return;
        }
    }

    uct_gaudi_dma_syn_cleanup(dma);
}


const uct_gaudi_dma_ops_t uct_gaudi_dma_syn_ops = {
    .name           = "synapse",
    .check          = uct_gaudi_dma_syn_check,
    .params_default = uct_gaudi_dma_syn_params_default,
    .create         = uct_gaudi_dma_syn_create,
    .destroy        = uct_gaudi_dma_syn_destroy,
    .submit         = uct_gaudi_dma_syn_submit,
    .progress       = uct_gaudi_dma_syn_progress,
    .quiesce        = uct_gaudi_dma_syn_quiesce,
    .max_xfers      = uct_gaudi_dma_syn_max_xfers,
    .xfers_of       = uct_gaudi_dma_syn_xfers_of,
    .copy           = uct_gaudi_dma_syn_copy,
    .bounce_copy    = uct_gaudi_dma_syn_bounce_copy,
    .fill           = uct_gaudi_dma_syn_fill
};
