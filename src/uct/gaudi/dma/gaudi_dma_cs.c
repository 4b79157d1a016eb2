/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * DMA engine, kernel CS backend: split and spread copies over the DMA
 * queues, the CS ring (in-flight window, facts 5.2 step 4), completion by
 * WAIT_CS polling (timeout 0, facts 5.2), device errors. Per-ASIC queue
 * models: gaudi_dma_cs_queue.c.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/dma/gaudi_dma_cs.h>

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <ucs/time/time.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

/* A blocking WAIT_CS never sleeps longer than this, so that deadlines and
 * a device in reset are re-checked */
#define UCT_GAUDI_DMA_WAIT_STEP_US   100000
#define UCT_GAUDI_DMA_RETRY_SLEEP_US 1000
#define UCT_GAUDI_DMA_BUSY_POLL_MS   10

/* Piece sizes are rounded to this, so pieces of a split stay aligned */
#define UCT_GAUDI_DMA_PIECE_ALIGN    4096

/* Command buffer bytes per queue and copy, unless configured */
#define UCT_GAUDI_DMA_CS_DEF_CB_SIZE 4096

/* Bytes after which a batch is submitted: two CSs or more share the
 * copies in flight (16 x 64 KiB: two of 8), so that the engines still have
 * work queued while the oldest CS is reaped and its copies posted again,
 * at no more CSs than one per window (docs/performance.md, "Batches") */
#define UCT_GAUDI_DMA_CS_DEF_BATCH_BYTES (512 * UCS_KBYTE)


static ucs_status_t uct_gaudi_dma_cs_check(const uct_gaudi_ctx_t *ctx,
                                           const char **reason_p)
{
    return uct_gaudi_asic_kernel_dma(ctx->info->asic, reason_p);
}

/* LIN_DMA packets of a command buffer: one transfer each at least; room
 * for a trailing NOP (facts 5.4) */
static unsigned uct_gaudi_dma_cs_xfers_of(size_t cb_size)
{
    cb_size = ucs_align_up((cb_size != 0) ? cb_size :
                           UCT_GAUDI_DMA_CS_DEF_CB_SIZE, 64);
    return (cb_size - GAUDI_PKT_SIZE_SHORT) / GAUDI_PKT_SIZE_LIN_DMA;
}

static void uct_gaudi_dma_cs_params_default(const uct_gaudi_ctx_t *ctx,
                                            uct_gaudi_dma_params_t *params)
{
    const char *reason;
    const uct_gaudi_dma_asic_t *backend =
            uct_gaudi_dma_asic_get(ctx->info->asic, &reason);

    params->max_inflight = (backend != NULL) ? backend->def_inflight : 0;
    /* one queue per engine: the others are further streams of the same
     * engines, more queue depth but no more bandwidth (facts 5.7) */
    params->max_queues   = (backend != NULL) ? backend->num_engines : 0;
    params->cb_size      = UCT_GAUDI_DMA_CS_DEF_CB_SIZE;
    params->bounce_size  = 256 * UCS_KBYTE;
    params->split_min    = 256 * UCS_KBYTE;
    params->sync_timeout = 60.0;
    /* each poll is a WAIT_CS ioctl: a system call, and the driver's lock
     * the completion path takes too */
    params->poll_interval = 1e-6;
    params->batch_bytes   = UCT_GAUDI_DMA_CS_DEF_BATCH_BYTES;
}

/* Clamp the user's tunables to what the backend and the driver allow */
static ucs_status_t uct_gaudi_dma_params_apply(uct_gaudi_dma_cs_t *dma,
                                               const uct_gaudi_dma_params_t *p)
{
    uct_gaudi_dma_params_t def;

    uct_gaudi_dma_cs_params_default(dma->super.ctx, &def);
    dma->super.params = *p;
    if (p->max_inflight == 0) {
        dma->super.params.max_inflight = def.max_inflight;
    }
    if (p->max_queues > dma->asic->num_queues) {
        ucs_warn("%s: %u DMA queues asked for, the ASIC leaves %u to users: "
                 "using %u", dma->super.name, p->max_queues,
                 dma->asic->num_queues, def.max_queues);
    }
    if ((p->max_queues == 0) || (p->max_queues > dma->asic->num_queues)) {
        dma->super.params.max_queues = def.max_queues;
    }
    if (p->cb_size == 0) {
        dma->super.params.cb_size = def.cb_size;
    }
    if (p->bounce_size == 0) {
        dma->super.params.bounce_size = def.bounce_size;
    }
    if (p->split_min == 0) {
        dma->super.params.split_min = def.split_min;
    }
    if (p->sync_timeout <= 0) {
        dma->super.params.sync_timeout = def.sync_timeout;
    }

    /* one slot of the driver's window is kept for synchronous copies */
    dma->super.params.max_inflight = ucs_min(dma->super.params.max_inflight,
                                             dma->asic->max_pending - 1);
    dma->super.params.cb_size      = ucs_align_up(dma->super.params.cb_size,
                                                  64);
    if ((dma->super.params.cb_size < 256) ||
        (dma->super.params.cb_size > HL_MAX_CB_SIZE)) {
        ucs_error("%s: DMA command buffer size %zu is out of [256, %u]",
                  dma->super.name, dma->super.params.cb_size, HL_MAX_CB_SIZE);
        return UCS_ERR_INVALID_PARAM;
    }

    dma->num_queues      = dma->super.params.max_queues;
    dma->super.num_slots = dma->super.params.max_inflight;
    dma->cb_capacity     = uct_gaudi_dma_cs_xfers_of(
                                   dma->super.params.cb_size);
    return UCS_OK;
}

static ucs_status_t
uct_gaudi_dma_cs_create(uct_gaudi_ctx_t *ctx,
                        const uct_gaudi_dma_params_t *params,
                        uct_gaudi_dma_t **dma_p)
{
    const char *reason;
    uct_gaudi_dma_cs_t *dma;
    ucs_status_t status;

    dma = ucs_calloc(1, sizeof(*dma), "gaudi_dma");
    if (dma == NULL) {
        ucs_error("gaudi: failed to allocate a DMA engine");
        return UCS_ERR_NO_MEMORY;
    }

    uct_gaudi_dma_init_base(&dma->super, &uct_gaudi_dma_cs_ops, ctx);
    dma->asic = uct_gaudi_dma_asic_get(ctx->info->asic, &reason);
    if (dma->asic == NULL) {
        ucs_debug("%s: no DMA engine: %s", dma->super.name, reason);
        status = UCS_ERR_UNSUPPORTED;
        goto err_free;
    }

    status = uct_gaudi_dma_params_apply(dma, params);
    if (status != UCS_OK) {
        goto err_free;
    }

    dma->slots = ucs_calloc(dma->super.num_slots + 1, sizeof(*dma->slots),
                            "gaudi_dma_slots");
    if (dma->slots == NULL) {
        ucs_error("%s: failed to allocate %u DMA slots", dma->super.name,
                  dma->super.num_slots + 1);
        status = UCS_ERR_NO_MEMORY;
        goto err_free;
    }
    dma->sync = &dma->slots[dma->super.num_slots];

    status = uct_gaudi_dma_mem_init(dma);
    if (status != UCS_OK) {
        goto err_free_slots;
    }

    uct_gaudi_events_init(ctx);
    dma->fault_gen = uct_gaudi_events_poll(ctx);

    ucs_debug("%s: %s DMA engine: %u queue(s), %u async slot(s), CB %zu B "
              "(%u packets), bounce %zu B", dma->super.name, dma->asic->name,
              dma->num_queues, dma->super.num_slots, dma->super.params.cb_size,
              dma->cb_capacity, dma->super.params.bounce_size);
    *dma_p = &dma->super;
    return UCS_OK;

err_free_slots:
    ucs_free(dma->slots);
err_free:
    ucs_free(dma);
    return status;
}

static unsigned uct_gaudi_dma_cs_max_xfers(const uct_gaudi_dma_t *base)
{
    const uct_gaudi_dma_cs_t *dma = ucs_derived_of(base, uct_gaudi_dma_cs_t);

    /* every transfer can always get at least one packet of its own */
    return dma->cb_capacity;
}


/* Packets: split, spread, encode */

/*
 * Number of pieces @a length is split into: pieces of at least @a share
 * bytes (0: no split), one a queue at most. The share is what each queue
 * gets of the whole CS, so a CS of several copies spreads whole copies
 * over the queues (fewer, longer packets) and splits only those larger
 * than a queue's share.
 */
static unsigned uct_gaudi_dma_num_pieces(const uct_gaudi_dma_cs_t *dma,
                                         size_t length, size_t share)
{
    unsigned n = 1;

    if (share > 0) {
        n = ucs_max(1, ucs_min(dma->num_queues, length / share));
    }

    return ucs_max(n, ucs_div_round_up(length, UCT_GAUDI_DMA_MAX_PIECE));
}

/*
 * The queue with the fewest bytes that still has room for a packet; ties
 * go to the queue after the one the previous copy started on, so that
 * copies too small to split still spread over the engines.
 */
static int uct_gaudi_dma_pick_queue(const uct_gaudi_dma_cs_t *dma,
                                    const size_t *bytes,
                                    const unsigned *npkts)
{
    int best = -1;
    unsigned i, q;

    for (i = 0; i < dma->num_queues; i++) {
        q = (dma->next_queue + i) % dma->num_queues;
        if ((npkts[q] < dma->cb_capacity) &&
            ((best < 0) || (bytes[q] < bytes[best]))) {
            best = q;
        }
    }

    return best;
}

/*
 * Encode @a xfers into the CBs of @a slot, one CB a queue, and fill the CS
 * chunks. Large transfers are split into pieces of at least split_min and
 * each piece goes to the least loaded queue, so engines run in parallel.
 * With @a fill, each src is the pattern of a memset of dst.
 * Returns the number of chunks (0: nothing to copy) or -1 if the packets
 * do not fit.
 */
static int uct_gaudi_dma_build(uct_gaudi_dma_cs_t *dma,
                               uct_gaudi_dma_slot_t *slot,
                               const uct_gaudi_dma_xfer_t *xfers,
                               unsigned count, int fill,
                               struct hl_cs_chunk *chunks)
{
    void *pkt;
    size_t bytes[UCT_GAUDI_DMA_MAX_QUEUES]   = {0};
    unsigned npkts[UCT_GAUDI_DMA_MAX_QUEUES] = {0};
    size_t total_pieces = 0, total = 0, share, piece, off, len;
    unsigned i, n, p;
    int q, nchunks;

    for (i = 0; i < count; i++) {
        total += xfers[i].length;
    }
    share = ucs_max(dma->super.params.split_min, total / dma->num_queues);
    for (i = 0; i < count; i++) {
        total_pieces += uct_gaudi_dma_num_pieces(dma, xfers[i].length, share);
    }
    /* too many pieces: do not split (each transfer still fits) */
    if (total_pieces > (size_t)dma->cb_capacity * dma->num_queues) {
        share = 0;
    }

    slot->length = 0;
    for (i = 0; i < count; i++) {
        len = xfers[i].length;
        if (len == 0) {
            continue;
        }

        n     = uct_gaudi_dma_num_pieces(dma, len, share);
        piece = ucs_align_up(ucs_div_round_up(len, n),
                             UCT_GAUDI_DMA_PIECE_ALIGN);
        for (p = 0, off = 0; off < len; p++, off += piece) {
            q = uct_gaudi_dma_pick_queue(dma, bytes, npkts);
            if (q < 0) {
                return -1;
            }

            pkt = slot->cb_host[q] + npkts[q] * GAUDI_PKT_SIZE_LIN_DMA;
            if (fill) {
                gaudi_pkt_lin_dma_memset_encode(pkt, dma->asic->gen,
                                                xfers[i].src,
                                                xfers[i].dst + off,
                                                ucs_min(piece, len - off), 0);
            } else {
                gaudi_pkt_lin_dma_encode(pkt, dma->asic->gen,
                                         xfers[i].src + off,
                                         xfers[i].dst + off,
                                         ucs_min(piece, len - off), 0);
            }
            npkts[q]++;
            bytes[q] += ucs_min(piece, len - off);
        }
        slot->length += len;
    }

    dma->next_queue = (dma->next_queue + 1) % dma->num_queues;
    nchunks         = 0;
    for (q = 0; q < dma->num_queues; q++) {
        if (npkts[q] == 0) {
            continue;
        }

        /* trailing NOP with EB: completion waits for the engine to drain
         * (facts 5.4) */
        gaudi_pkt_nop_encode(slot->cb_host[q] +
                             npkts[q] * GAUDI_PKT_SIZE_LIN_DMA, 1);
        uct_gaudi_dma_fill_chunk(dma, slot, q,
                                 npkts[q] * GAUDI_PKT_SIZE_LIN_DMA +
                                 GAUDI_PKT_SIZE_SHORT,
                                 &chunks[nchunks++]);
    }

    return nchunks;
}

/*
 * EBUSY from the driver: a reset runs, which ends by itself, or the device
 * needs one, which only an administrator gives (a CS timed out while the
 * driver's reset_on_lockup is 0, or the device is disabled; facts 5.2):
 * then every copy fails at once, said once per engine.
 */
static int uct_gaudi_dma_cs_needs_reset(uct_gaudi_dma_cs_t *dma)
{
    uint32_t status;

    if ((uct_gaudi_hl_device_status(&dma->super.ctx->hl, &status) !=
         UCS_OK) ||
        ((status != GAUDI_HL_DEVICE_STATUS_NEEDS_RESET) &&
         (status != GAUDI_HL_DEVICE_STATUS_MALFUNCTION))) {
        return 0;
    }

    if (!dma->dead_logged) {
        ucs_error("%s: the device %s: its copies fail until an "
                  "administrator resets it", dma->super.name,
                  (status == GAUDI_HL_DEVICE_STATUS_NEEDS_RESET) ?
                  "needs a reset (a CS timed out and the driver does not "
                  "reset on lockup)" : "is disabled");
        dma->dead_logged = 1;
    }
    return 1;
}

/*
 * Build and submit @a slot. UCS_INPROGRESS: submitted; UCS_OK: nothing to
 * copy; UCS_ERR_NO_RESOURCE: driver window full (EAGAIN) or device in
 * reset (EBUSY); other: failure, logged.
 */
static ucs_status_t uct_gaudi_dma_slot_submit(uct_gaudi_dma_cs_t *dma,
                                              uct_gaudi_dma_slot_t *slot,
                                              const uct_gaudi_dma_xfer_t *xfers,
                                              unsigned count, int fill,
                                              const char *name)
{
    struct hl_cs_chunk chunks[UCT_GAUDI_DMA_MAX_QUEUES];
    ucs_status_t status;
    int nchunks;

    nchunks = uct_gaudi_dma_build(dma, slot, xfers, count, fill, chunks);
    if (nchunks < 0) {
        ucs_error("%s: %s of %u transfers does not fit in the command "
                  "buffers", dma->super.name, name, count);
        return UCS_ERR_EXCEEDS_LIMIT;
    } else if (nchunks == 0) {
        return UCS_OK;
    }

    status = uct_gaudi_hl_cs_submit(&dma->super.ctx->hl, chunks, nchunks, 0,
                                    &slot->seq);
    if (status == UCS_OK) {
        slot->name       = name;
        slot->busy_since = 0;
        slot->tainted    = 0;
        slot->state      = UCT_GAUDI_DMA_SLOT_INFLIGHT;
        return UCS_INPROGRESS;
    } else if (status == UCS_ERR_BUSY) {
        if (uct_gaudi_dma_cs_needs_reset(dma)) {
            return UCS_ERR_IO_ERROR;
        }
        /* device not operational (reset): retry later (facts 5.2, 7.3) */
        if (!dma->reset_logged) {
            ucs_diag("%s: device not operational (reset?), DMA copies are "
                     "deferred", dma->super.name);
            dma->reset_logged = 1;
        }
        return UCS_ERR_NO_RESOURCE;
    } else if (status != UCS_ERR_NO_RESOURCE) {
        ucs_error("%s: %s of %zu bytes: CS submission failed: %s",
                  dma->super.name, name, slot->length,
                  ucs_status_string(status));
    }

    return status;
}


/* Completion */

static void uct_gaudi_dma_slot_done(uct_gaudi_dma_cs_t *dma,
                                    uct_gaudi_dma_slot_t *slot,
                                    ucs_status_t status)
{
    if ((status == UCS_OK) && slot->tainted) {
        status = UCS_ERR_IO_ERROR;   /* a fault, said when found */
    } else if (status == UCS_OK) {
        slot->epoch = dma->epoch;    /* to be checked for a fault */
        dma->unchecked++;
    } else {
        ucs_error("%s: %s of %zu bytes (CS seq %" PRIu64 ") failed: %s",
                  dma->super.name, slot->name, slot->length, slot->seq,
                  (status == UCS_ERR_TIMED_OUT) ?
                  "timed out on the device" :
                  (status == UCS_ERR_IO_ERROR) ?
                  "aborted by a DMA error or a device reset" :
                  ucs_status_string(status));
    }

    slot->status = status;
    slot->state  = UCT_GAUDI_DMA_SLOT_DONE;
}

/*
 * A fault seen: the copies done since the last check fail, and so will
 * those in flight; which CS faulted the driver does not say. Returns how
 * many copies done fail, and counts those in flight in @a inflight.
 */
static unsigned uct_gaudi_dma_fault_fail(uct_gaudi_dma_cs_t *dma,
                                         unsigned *inflight,
                                         const char **name_p)
{
    uct_gaudi_dma_slot_t *slot;
    unsigned i, failed = 0;

    *inflight = 0;
    for (i = 0; i <= dma->super.num_slots; i++) {   /* with the sync one */
        slot = &dma->slots[i];
        if ((slot->state == UCT_GAUDI_DMA_SLOT_DONE) &&
            (slot->status == UCS_OK) && (slot->epoch == dma->epoch)) {
            slot->status = UCS_ERR_IO_ERROR;
            *name_p      = slot->name;
            failed++;
        } else if (slot->state == UCT_GAUDI_DMA_SLOT_INFLIGHT) {
            slot->tainted = 1;
            *name_p       = slot->name;
            (*inflight)++;
        }
    }

    return failed;
}

/*
 * Before copies done are delivered: whether the driver told of a fault on
 * the device since the last check (one ioctl when copies were done since;
 * docs/base.md, "Device faults told by events"). The driver may tell it after
 * the CS completed, past this check: then the copies of the next one fail
 * and the message says data of copies delivered before may be lost.
 */
static void uct_gaudi_dma_check_faults(uct_gaudi_dma_cs_t *dma)
{
    const char *name = "copy";
    unsigned failed, inflight;
    uint64_t gen;
    char what[200];

    if (dma->unchecked == 0) {
        return;
    }

    gen             = uct_gaudi_events_poll(dma->super.ctx);
    dma->unchecked  = 0;
    if (gen == dma->fault_gen) {
        dma->epoch++;
        return;
    }

    dma->fault_gen = gen;
    failed         = uct_gaudi_dma_fault_fail(dma, &inflight, &name);
    dma->epoch++;
    uct_gaudi_events_describe(dma->super.ctx, what, sizeof(what));
    ucs_error("%s: the driver reports %s: %u copies done since the last "
              "check and %u in flight (%s, ...) fail with an I/O error; "
              "data of copies reported complete before may be lost too, "
              "if the driver told the fault after their completion",
              dma->super.name, what, failed, inflight, name);
}

/*
 * WAIT_CS on an in-flight slot. Returns 1 when the slot is DONE (with its
 * status), 0 while it runs. A device in reset (EBUSY) keeps the slot in
 * flight, up to sync_timeout, after which it fails: the driver aborts the
 * CS of a reset anyway (facts 7.3).
 */
static int uct_gaudi_dma_slot_poll(uct_gaudi_dma_cs_t *dma,
                                   uct_gaudi_dma_slot_t *slot,
                                   uint64_t timeout_us)
{
    ucs_time_t now;
    ucs_status_t status;

    status = uct_gaudi_hl_cs_wait(&dma->super.ctx->hl, slot->seq, timeout_us,
                                  NULL);
    if (status == UCS_INPROGRESS) {
        return 0;
    } else if ((status == UCS_ERR_BUSY) &&
               uct_gaudi_dma_cs_needs_reset(dma)) {
        status = UCS_ERR_IO_ERROR;
    } else if (status == UCS_ERR_BUSY) {
        now = ucs_get_time();
        if (slot->busy_since == 0) {
            slot->busy_since = now;
            return 0;
        } else if (ucs_time_to_sec(now - slot->busy_since) <
                   dma->super.params.sync_timeout) {
            return 0;
        }

        ucs_error("%s: device not operational for %.0f s", dma->super.name,
                  ucs_time_to_sec(now - slot->busy_since));
        status = UCS_ERR_IO_ERROR;
    }

    if (status == UCS_OK) {
        dma->reset_logged = 0;
    }

    uct_gaudi_dma_slot_done(dma, slot, status);
    return 1;
}

/* Poll the first @a max copies in submission order, up to the first one
 * still running */
static void uct_gaudi_dma_reap(uct_gaudi_dma_cs_t *dma, unsigned max)
{
    uct_gaudi_dma_slot_t *slot;
    unsigned i;

    for (i = 0; (i < dma->super.ring_count) && (i < max); i++) {
        slot = &dma->slots[uct_gaudi_dma_ring_index(&dma->super, i)];
        if (slot->state == UCT_GAUDI_DMA_SLOT_INFLIGHT) {
            if ((slot->busy_since != 0) &&
                (ucs_get_time() - dma->last_busy_poll <
                 ucs_time_from_msec(UCT_GAUDI_DMA_BUSY_POLL_MS))) {
                break;   /* device in reset: poll it only now and then */
            }
            if (!uct_gaudi_dma_slot_poll(dma, slot, 0)) {
                if (slot->busy_since != 0) {
                    dma->last_busy_poll = ucs_get_time();
                }
                break;
            }
        }
    }
}

static unsigned uct_gaudi_dma_cs_progress(uct_gaudi_dma_t *base, unsigned max)
{
    uct_gaudi_dma_cs_t *dma = ucs_derived_of(base, uct_gaudi_dma_cs_t);
    uct_gaudi_dma_slot_t *slot;
    unsigned delivered = 0;

    uct_gaudi_dma_reap(dma, max);
    uct_gaudi_dma_check_faults(dma);

    /* in submission order: stop at the first copy still running */
    while ((dma->super.ring_count > 0) && (delivered < max)) {
        slot = &dma->slots[dma->super.ring_head];
        if (slot->state != UCT_GAUDI_DMA_SLOT_DONE) {
            break;
        }

        /* pop before the callback: it may submit again */
        uct_gaudi_dma_ring_pop(&dma->super);
        slot->state = UCT_GAUDI_DMA_SLOT_FREE;
        delivered++;
        if (slot->cb != NULL) {
            slot->cb(slot->arg, slot->status);
        }
    }

    return delivered;
}

static ucs_status_t uct_gaudi_dma_cs_submit(uct_gaudi_dma_t *base,
                                            const uct_gaudi_dma_xfer_t *xfers,
                                            unsigned count, const char *name,
                                            uct_gaudi_dma_comp_cb_t cb,
                                            void *arg)
{
    uct_gaudi_dma_cs_t *dma = ucs_derived_of(base, uct_gaudi_dma_cs_t);
    uct_gaudi_dma_slot_t *slot;
    ucs_status_t status;

    slot   = &dma->slots[uct_gaudi_dma_ring_index(&dma->super,
                                              dma->super.ring_count)];
    status = uct_gaudi_dma_slot_submit(dma, slot, xfers, count, 0, name);
    if (status != UCS_INPROGRESS) {
        return status;
    }

    slot->cb  = cb;
    slot->arg = arg;
    dma->super.ring_count++;
    return UCS_INPROGRESS;
}


/* Synchronous copies */

static ucs_time_t uct_gaudi_dma_deadline(const uct_gaudi_dma_cs_t *dma)
{
    return ucs_get_time() + ucs_time_from_sec(dma->super.params.sync_timeout);
}

/*
 * The driver's window is full: wait a little for the oldest async copy
 * (marking it DONE; its callback runs later from progress), or sleep if
 * the window is held by another engine or the device is in reset.
 */
static void uct_gaudi_dma_make_room(uct_gaudi_dma_cs_t *dma)
{
    uct_gaudi_dma_slot_t *slot;
    unsigned i;

    for (i = 0; i < dma->super.ring_count; i++) {
        slot = &dma->slots[uct_gaudi_dma_ring_index(&dma->super, i)];
        if (slot->state == UCT_GAUDI_DMA_SLOT_INFLIGHT) {
            uct_gaudi_dma_slot_poll(dma, slot, UCT_GAUDI_DMA_RETRY_SLEEP_US);
            return;
        }
    }

    usleep(UCT_GAUDI_DMA_RETRY_SLEEP_US);
}

/* Wait until the sync slot is done or @a deadline passes */
static ucs_status_t uct_gaudi_dma_sync_wait(uct_gaudi_dma_cs_t *dma,
                                           ucs_time_t deadline)
{
    uct_gaudi_dma_slot_t *slot = dma->sync;
    ucs_time_t now;
    uint64_t step;

    while (slot->state == UCT_GAUDI_DMA_SLOT_INFLIGHT) {
        now = ucs_get_time();
        if (now >= deadline) {
            ucs_error("%s: %s of %zu bytes (CS seq %" PRIu64 ") still "
                      "running after %.0f s", dma->super.name, slot->name,
                      slot->length, slot->seq, dma->super.params.sync_timeout);
            return UCS_ERR_TIMED_OUT;
        }

        step = ucs_min(UCT_GAUDI_DMA_WAIT_STEP_US,
                       ucs_time_to_usec(deadline - now) + 1);
        if (!uct_gaudi_dma_slot_poll(dma, slot, step) &&
            (slot->busy_since != 0)) {
            /* EBUSY returns at once: do not spin on a device in reset */
            usleep(UCT_GAUDI_DMA_RETRY_SLEEP_US);
        }
    }

    uct_gaudi_dma_check_faults(dma);
    slot->state = UCT_GAUDI_DMA_SLOT_FREE;
    return slot->status;
}

/* A sync copy that timed out left its CS in flight: it owns the slot */
static ucs_status_t uct_gaudi_dma_sync_reclaim(uct_gaudi_dma_cs_t *dma)
{
    if (dma->sync->state != UCT_GAUDI_DMA_SLOT_INFLIGHT) {
        return UCS_OK;
    }

    if (!uct_gaudi_dma_slot_poll(dma, dma->sync, 0)) {
        ucs_error("%s: a previous synchronous copy (CS seq %" PRIu64 ") is "
                  "still running on the device", dma->super.name,
                  dma->sync->seq);
        return UCS_ERR_BUSY;
    }

    dma->sync->state = UCT_GAUDI_DMA_SLOT_FREE;
    return UCS_OK;
}

static ucs_status_t uct_gaudi_dma_sync_run(uct_gaudi_dma_cs_t *dma,
                                           const uct_gaudi_dma_xfer_t *xfers,
                                           unsigned count, int fill,
                                           const char *name)
{
    ucs_time_t deadline = uct_gaudi_dma_deadline(dma);
    ucs_status_t status;

    status = uct_gaudi_dma_sync_reclaim(dma);
    if (status != UCS_OK) {
        return status;
    }

    for (;;) {
        status = uct_gaudi_dma_slot_submit(dma, dma->sync, xfers, count,
                                           fill, name);
        if (status != UCS_ERR_NO_RESOURCE) {
            break;
        } else if (ucs_get_time() >= deadline) {
            ucs_error("%s: %s of %zu bytes: no CS could be submitted for "
                      "%.0f s (in-flight window full or device in reset)",
                      dma->super.name, name, dma->sync->length,
                      dma->super.params.sync_timeout);
            return UCS_ERR_TIMED_OUT;
        }

        uct_gaudi_dma_make_room(dma);
    }

    if (status != UCS_INPROGRESS) {
        return status;   /* UCS_OK: nothing to copy, or an error */
    }

    return uct_gaudi_dma_sync_wait(dma, deadline);
}

static ucs_status_t uct_gaudi_dma_cs_copy(uct_gaudi_dma_t *base,
                                          const uct_gaudi_dma_xfer_t *xfers,
                                          unsigned count, const char *name)
{
    return uct_gaudi_dma_sync_run(ucs_derived_of(base, uct_gaudi_dma_cs_t),
                                  xfers, count, 0, name);
}

static ucs_status_t uct_gaudi_dma_cs_bounce_copy(uct_gaudi_dma_t *base,
                                                 int to_device,
                                                 uint64_t dma_addr,
                                                 size_t length,
                                                 const char *name)
{
    uct_gaudi_dma_cs_t *dma = ucs_derived_of(base, uct_gaudi_dma_cs_t);
    uct_gaudi_dma_xfer_t xfer;

    ucs_assert(length <= dma->super.params.bounce_size);
    xfer.src    = to_device ? dma->bounce_dma : dma_addr;
    xfer.dst    = to_device ? dma_addr : dma->bounce_dma;
    xfer.length = length;
    return uct_gaudi_dma_sync_run(dma, &xfer, 1, 0, name);
}

static ucs_status_t uct_gaudi_dma_cs_fill(uct_gaudi_dma_t *base,
                                          uint64_t dma_addr, int value,
                                          size_t length, const char *name)
{
    uct_gaudi_dma_cs_t *dma = ucs_derived_of(base, uct_gaudi_dma_cs_t);
    uct_gaudi_dma_xfer_t xfer;

    /* src_addr carries the pattern: the byte in every lane, whatever
     * width the engine reads */
    xfer.src    = 0x0101010101010101ull * (uint8_t)value;
    xfer.dst    = dma_addr;
    xfer.length = length;
    return uct_gaudi_dma_sync_run(dma, &xfer, 1, 1, name);
}


/* Teardown */

/* Wait for every CS still in flight (slots [0, @a num)); 1 if all done */
static int uct_gaudi_dma_drain(uct_gaudi_dma_cs_t *dma, unsigned num)
{
    ucs_time_t deadline = uct_gaudi_dma_deadline(dma);
    uct_gaudi_dma_slot_t *slot;
    unsigned i;

    for (i = 0; i < num; i++) {
        slot = &dma->slots[i];
        while (slot->state == UCT_GAUDI_DMA_SLOT_INFLIGHT) {
            if (ucs_get_time() >= deadline) {
                return 0;
            }
            if (!uct_gaudi_dma_slot_poll(dma, slot,
                                         UCT_GAUDI_DMA_WAIT_STEP_US) &&
                (slot->busy_since != 0)) {
                usleep(UCT_GAUDI_DMA_RETRY_SLEEP_US);
            }
        }
    }

    return 1;
}

static ucs_status_t uct_gaudi_dma_cs_quiesce(uct_gaudi_dma_t *base)
{
    uct_gaudi_dma_cs_t *dma = ucs_derived_of(base, uct_gaudi_dma_cs_t);

    if ((dma->super.ring_count > 0) &&
        !uct_gaudi_dma_drain(dma, dma->super.num_slots)) {
        ucs_error("%s: DMA copies still running after %.0f s", dma->super.name,
                  dma->super.params.sync_timeout);
        return UCS_ERR_TIMED_OUT;
    }

    uct_gaudi_dma_check_faults(dma);
    return UCS_OK;
}

static void uct_gaudi_dma_cs_destroy(uct_gaudi_dma_t *base)
{
    uct_gaudi_dma_cs_t *dma = ucs_derived_of(base, uct_gaudi_dma_cs_t);

    if (dma->super.ring_count > 0) {
        ucs_debug("%s: closing the DMA engine with %u copies undelivered",
                  dma->super.name, dma->super.ring_count);
    }

    /* drain, then unmap, then the caller closes the device */
    if (!uct_gaudi_dma_drain(dma, dma->super.num_slots + 1)) {
        /* the device may still read the host CBs and bounce buffer: leak
         * them rather than let it read freed memory (facts 5.4); closing
         * the device with the copies in flight makes the accel driver
         * reset it (docs/base.md, "Teardown") */
        ucs_error("%s: DMA copies still running after %.1f s at close: "
                  "their buffers are leaked; the driver may reset the "
                  "device when it is closed", dma->super.name,
                  dma->super.params.sync_timeout);
        uct_gaudi_dma_mem_abandon(dma);
        ucs_free(dma->slots);
        ucs_free(dma);
        return;
    }

    /* the last chance to say a fault told late (docs/base.md, "Device
     * faults told by events") */
    dma->unchecked++;
    uct_gaudi_dma_check_faults(dma);
    uct_gaudi_dma_mem_cleanup(dma);
    ucs_free(dma->slots);
    ucs_free(dma);
}

const uct_gaudi_dma_ops_t uct_gaudi_dma_cs_ops = {
    .name           = "kernel",
    .check          = uct_gaudi_dma_cs_check,
    .params_default = uct_gaudi_dma_cs_params_default,
    .create         = uct_gaudi_dma_cs_create,
    .destroy        = uct_gaudi_dma_cs_destroy,
    .submit         = uct_gaudi_dma_cs_submit,
    .progress       = uct_gaudi_dma_cs_progress,
    .quiesce        = uct_gaudi_dma_cs_quiesce,
    .max_xfers      = uct_gaudi_dma_cs_max_xfers,
    .xfers_of       = uct_gaudi_dma_cs_xfers_of,
    .copy           = uct_gaudi_dma_cs_copy,
    .bounce_copy    = uct_gaudi_dma_cs_bounce_copy,
    .fill           = uct_gaudi_dma_cs_fill
};
