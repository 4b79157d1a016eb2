/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * SynapseAI backend of the DMA engine: internals shared by its core
 * (gaudi_dma_syn.c: streams, events, ring, setup) and its host side
 * (gaudi_dma_syn_host.c: direct or staged host<->device copies).
 */

#ifndef UCT_GAUDI_DMA_SYN_H_
#define UCT_GAUDI_DMA_SYN_H_

#include <uct/gaudi/dma/gaudi_dma_ops.h>
#include <uct/gaudi/syn/gaudi_syn.h>

/* Host ranges remembered as untranslatable, and how many of their copies
 * go straight to staging before a direct try again */
#define UCT_GAUDI_DMA_SYN_HINTS       16
#define UCT_GAUDI_DMA_SYN_RETRY       64


typedef enum {
    UCT_GAUDI_DMA_SYN_FREE,
    UCT_GAUDI_DMA_SYN_INFLIGHT,   /* event recorded, not known done */
    UCT_GAUDI_DMA_SYN_DONE        /* status set, not delivered */
} uct_gaudi_dma_syn_state_t;


/*
 * A host range whose copy SynapseAI could not translate: its next copies
 * (and those of ranges inside it) skip the failed call. Only a saving:
 * staging is right whatever the table holds, and every RETRY copies the
 * direct call is tried again (the application may map the range later).
 */
typedef struct uct_gaudi_dma_syn_hint {
    uintptr_t start, end;   /* empty when start == end */
    unsigned  skip;         /* copies to stage before the next try */
} uct_gaudi_dma_syn_hint_t;


/* One copy: the event recorded after it and its completion */
typedef struct uct_gaudi_dma_syn_slot {
    uct_gaudi_dma_syn_state_t state;
    uct_gaudi_syn_event_t     event;
    ucs_status_t              status;  /* DONE; or a queueing failure */
    size_t                    length;
    const char                *name;
    uct_gaudi_dma_comp_cb_t   cb;
    void                      *arg;
} uct_gaudi_dma_syn_slot_t;


typedef struct uct_gaudi_dma_syn {
    uct_gaudi_dma_t          super;
    const uct_gaudi_syn_t    *syn;
    uct_gaudi_syn_device_t   device;
    uct_gaudi_syn_stream_t   stream;      /* asynchronous copies */
    uct_gaudi_syn_stream_t   sync_stream; /* synchronous copies */
    uct_gaudi_dma_syn_slot_t *slots;      /* async ring (super.ring_*)
                                             + 1 (sync) */
    uct_gaudi_dma_syn_slot_t *sync;
    uct_gaudi_syn_event_t    stage_event; /* recorded after staged steps */
    uct_gaudi_dma_syn_hint_t hints[UCT_GAUDI_DMA_SYN_HINTS];
    unsigned                 hint_next;   /* the slot a new hint takes */
} uct_gaudi_dma_syn_t;


/* One synMemCopyAsync; UCS_ERR_INVALID_ADDR (quiet for a host side):
 * SynapseAI cannot translate the host side, nothing queued */
ucs_status_t uct_gaudi_dma_syn_direct(uct_gaudi_dma_syn_t *dma,
                                      uct_gaudi_syn_stream_t stream,
                                      const uct_gaudi_dma_xfer_t *xfer,
                                      uct_gaudi_syn_dir_t dir,
                                      const char *name);

/* One host<->device transfer on @a stream: direct when an entry of the
 * application's holds the host side, else staged through the bounce
 * buffer (complete when this returns) */
ucs_status_t uct_gaudi_dma_syn_host_xfer(uct_gaudi_dma_syn_t *dma,
                                         uct_gaudi_syn_stream_t stream,
                                         const uct_gaudi_dma_xfer_t *xfer,
                                         uct_gaudi_syn_dir_t dir,
                                         const char *name);

#endif
