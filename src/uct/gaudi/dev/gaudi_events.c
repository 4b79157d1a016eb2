/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Device faults from the driver's notifier (facts 2.4).
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/dev/gaudi_dev.h>

#include <ucs/debug/log.h>
#include <inttypes.h>
#include <stdio.h>

/* Events after which a copy that completed may not have moved its data:
 * a page fault, an engine in error (Linux 6.1 tells page faults this way
 * only), a RAZWI, an unknown packet, a critical error (facts 2.4) */
#define UCT_GAUDI_EVENTS_FAULTS \
    (GAUDI_HL_NOTIFIER_EVENT_PAGE_FAULT | HL_NOTIFIER_EVENT_USER_ENGINE_ERR | \
     GAUDI_HL_NOTIFIER_EVENT_RAZWI | HL_NOTIFIER_EVENT_UNDEFINED_OPCODE | \
     GAUDI_HL_NOTIFIER_EVENT_CRITICAL_HW | \
     GAUDI_HL_NOTIFIER_EVENT_CRITICAL_FW)


/* The captured page fault, if new since the last look; 1 if new */
static int uct_gaudi_events_pf_new(uct_gaudi_ctx_t *ctx)
{
    uct_gaudi_events_t *ev = &ctx->events;
    struct gaudi_hl_page_fault_info info;

    if ((uct_gaudi_hl_page_fault_info(&ctx->hl, &info) != UCS_OK) ||
        (info.timestamp == 0) || (info.timestamp == ev->pf_seen)) {
        return 0;
    }

    ev->pf_seen = info.timestamp;
    ev->addr    = info.addr;
    return 1;
}

/*
 * Our own fd: GET_EVENTS, which clears what it reads, is ours alone. A
 * borrowed one (UCX_GAUDI_DEVICE_FD, SynapseAI's): its owner's GET_EVENTS
 * or eventfd would lose what we read, and the driver takes one eventfd
 * per open file (facts 2.4), so we only read the captured page fault,
 * which reading does not clear; Linux 6.1 has none: nothing to read.
 */
void uct_gaudi_events_init(uct_gaudi_ctx_t *ctx)
{
    uct_gaudi_events_t *ev = &ctx->events;
    struct gaudi_hl_page_fault_info info;
    ucs_status_t status;

    pthread_mutex_lock(&ctx->events.lock);
    if (ev->source != UCT_GAUDI_EVENTS_UNSET) {
        goto out;
    }

    status = uct_gaudi_hl_page_fault_info(&ctx->hl, &info);
    if (status == UCS_OK) {
        ev->pf_seen = info.timestamp;   /* faults before us are not ours */
    }
    if (ctx->hl.owns_fd) {
        ev->source = UCT_GAUDI_EVENTS_GET;
    } else if (status == UCS_OK) {
        ev->source = UCT_GAUDI_EVENTS_PF_INFO;
        if (info.timestamp != 0) {
            ucs_diag("gaudi %s: the driver captured a page fault (at 0x%"
                     PRIx64 ") before we attached to fd %d: later faults "
                     "of copies cannot be detected", ctx->info->name,
                     (uint64_t)info.addr, ctx->hl.fd);
        }
    } else {
        ev->source = UCT_GAUDI_EVENTS_NONE;
        ucs_diag("gaudi %s: fd %d is borrowed (%s) and this driver has no "
                 "PAGE_FAULT_EVENT: a page fault of a copy that completes "
                 "cannot be detected", ctx->info->name, ctx->hl.fd,
                 ctx->source);
    }
out:
    pthread_mutex_unlock(&ctx->events.lock);
}

/* One more fault seen, with its events; lock held */
static void uct_gaudi_events_fault(uct_gaudi_ctx_t *ctx, uint64_t events)
{
    uct_gaudi_events_t *ev = &ctx->events;

    ev->gen++;
    ev->events     = events;
    ev->addr_known = (events & GAUDI_HL_NOTIFIER_EVENT_PAGE_FAULT) &&
                     uct_gaudi_events_pf_new(ctx);
}

uint64_t uct_gaudi_events_poll(uct_gaudi_ctx_t *ctx)
{
    uct_gaudi_events_t *ev = &ctx->events;
    uint64_t events, gen;

    pthread_mutex_lock(&ctx->events.lock);
    switch (ev->source) {
    case UCT_GAUDI_EVENTS_GET:
        if (uct_gaudi_hl_get_events(&ctx->hl, &events) != UCS_OK) {
            /* logged: cannot tell, so the copies cannot be trusted */
            uct_gaudi_events_fault(ctx, 0);
        } else if (events & UCT_GAUDI_EVENTS_FAULTS) {
            uct_gaudi_events_fault(ctx, events);
        }
        break;
    case UCT_GAUDI_EVENTS_PF_INFO:
        if (uct_gaudi_events_pf_new(ctx)) {
            ev->gen++;
            ev->events     = GAUDI_HL_NOTIFIER_EVENT_PAGE_FAULT;
            ev->addr_known = 1;
        }
        break;
    default:
        break;
    }
    gen = ev->gen;
    pthread_mutex_unlock(&ctx->events.lock);
    return gen;
}

void uct_gaudi_events_describe(uct_gaudi_ctx_t *ctx, char *buf, size_t max)
{
    uct_gaudi_events_t *ev = &ctx->events;

    pthread_mutex_lock(&ctx->events.lock);
    if (ev->events == 0) {
        snprintf(buf, max, "no answer to GET_EVENTS: whether a fault "
                 "happened is unknown");
    } else if (ev->addr_known) {
        snprintf(buf, max, "an MMU page fault at 0x%" PRIx64
                 " (events 0x%" PRIx64 ")", ev->addr, ev->events);
    } else if (ev->events & GAUDI_HL_NOTIFIER_EVENT_PAGE_FAULT) {
        snprintf(buf, max, "an MMU page fault, address unknown: the "
                 "driver keeps the first one since the device was opened "
                 "(events 0x%" PRIx64 ")", ev->events);
    } else {
        snprintf(buf, max, "an engine error or page fault, address not "
                 "reported by this driver (events 0x%" PRIx64 ")",
                 ev->events);
    }
    pthread_mutex_unlock(&ctx->events.lock);
}
