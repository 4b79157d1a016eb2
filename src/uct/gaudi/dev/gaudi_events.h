/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Device faults the driver tells through its notifier (facts 2.4): the
 * DMA engines ask after reaping CSs whether one happened since their last
 * check, since a CS whose copy page-faults may still complete
 * (docs/base.md, "Device faults told by events").
 */

#ifndef UCT_GAUDI_EVENTS_H_
#define UCT_GAUDI_EVENTS_H_

#include <ucs/type/status.h>
#include <stddef.h>
#include <stdint.h>

struct uct_gaudi_ctx;


/* Where the faults are learnt from */
typedef enum {
    UCT_GAUDI_EVENTS_UNSET,
    UCT_GAUDI_EVENTS_GET,      /* our own fd: GET_EVENTS (read and clear) */
    UCT_GAUDI_EVENTS_PF_INFO,  /* a borrowed fd: PAGE_FAULT_EVENT only */
    UCT_GAUDI_EVENTS_NONE      /* a borrowed fd on Linux 6.1: nothing */
} uct_gaudi_events_source_t;


/* Per device context; guarded by the context's lock */
typedef struct uct_gaudi_events {
    uct_gaudi_events_source_t source;
    uint64_t                  gen;     /* faults seen so far */
    int64_t                   pf_seen; /* PAGE_FAULT_EVENT timestamp seen */
    uint64_t                  events;  /* notifier events of the last one */
    uint64_t                  addr;    /* its address, if addr_known */
    int                       addr_known;
} uct_gaudi_events_t;


/* Choose the source; once per context, before its first poll */
void uct_gaudi_events_init(struct uct_gaudi_ctx *ctx);

/* The number of faults seen so far on the device, after asking the driver
 * (one ioctl; two when there is a new page fault) */
uint64_t uct_gaudi_events_poll(struct uct_gaudi_ctx *ctx);

/* "an MMU page fault at 0x..." etc.: the last fault, for messages */
void uct_gaudi_events_describe(struct uct_gaudi_ctx *ctx, char *buf,
                               size_t max);

#endif
