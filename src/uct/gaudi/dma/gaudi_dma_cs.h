/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Kernel CS backend of the DMA engine: internals shared by its core
 * (gaudi_dma_cs.c: ring, submit, completion) and its per-ASIC queue models
 * (gaudi_dma_cs_queue.c: queue ids, command buffer memory, chunk form).
 */

#ifndef UCT_GAUDI_DMA_CS_H_
#define UCT_GAUDI_DMA_CS_H_

#include <uct/gaudi/dma/gaudi_dma_ops.h>
#include <uct/gaudi/hl/gaudi_packets.h>

#define UCT_GAUDI_DMA_MAX_QUEUES  4


typedef enum {
    UCT_GAUDI_DMA_SLOT_FREE,
    UCT_GAUDI_DMA_SLOT_INFLIGHT,  /* submitted, not known to be done */
    UCT_GAUDI_DMA_SLOT_DONE       /* done (status set), not delivered */
} uct_gaudi_dma_slot_state_t;


/* One CS: its command buffers (one per queue) and its completion */
typedef struct uct_gaudi_dma_slot {
    uct_gaudi_dma_slot_state_t state;
    uint64_t                   seq;       /* CS sequence number */
    ucs_status_t               status;    /* when DONE */
    ucs_time_t                 busy_since; /* device not operational since */
    uint64_t                   epoch;     /* DONE in this fault epoch */
    int                        tainted;   /* in flight at a fault: fails */
    size_t                     length;    /* bytes, for messages */
    const char                 *name;     /* operation, for messages */
    uct_gaudi_dma_comp_cb_t    cb;
    void                       *arg;
    uint8_t                    *cb_host[UCT_GAUDI_DMA_MAX_QUEUES];
    uint64_t                   cb_dma[UCT_GAUDI_DMA_MAX_QUEUES];
} uct_gaudi_dma_slot_t;


/* Per-ASIC queue model (facts 5.3, 5.4) */
typedef struct uct_gaudi_dma_asic {
    const char      *name;
    gaudi_pkt_gen_t gen;
    unsigned        num_queues;
    unsigned        num_engines;   /* queues[0..num_engines-1]: one each */
    uint32_t        queues[UCT_GAUDI_DMA_MAX_QUEUES]; /* spreading order */
    unsigned        max_pending;   /* driver's in-flight CS window */
    unsigned        def_inflight;  /* default async slots */
    int             user_cb;       /* chunks carry USER_ALLOC_CB + a VA */
} uct_gaudi_dma_asic_t;


typedef struct uct_gaudi_dma_cs {
    uct_gaudi_dma_t               super;
    const uct_gaudi_dma_asic_t    *asic;
    unsigned                      num_queues;
    unsigned                      cb_capacity; /* LIN_DMA packets per CB */
    unsigned                      next_queue;  /* round robin start */

    /* Slots of the async ring (super.ring_*), and the sync slot */
    uct_gaudi_dma_slot_t          *slots;     /* num_slots + 1 (sync) */
    uct_gaudi_dma_slot_t          *sync;      /* the synchronous slot */

    /* Host memory mapped to the device once (MAP USERPTR): the user CBs
     * of every slot (Gaudi2) and the bounce buffer of the sync slot */
    void                          *host_area;
    size_t                        host_area_size;
    uint64_t                      host_area_dma;
    uint64_t                      bounce_dma;  /* super.bounce */

    /* Gaudi1 kernel CBs, one per queue; the driver copies a CB at
     * submit (facts 5.3), so every slot reuses them */
    uint64_t                      kcb_handle[UCT_GAUDI_DMA_MAX_QUEUES];
    void                          *kcb_ptr[UCT_GAUDI_DMA_MAX_QUEUES];
    size_t                        kcb_map_size;

    /* Fault checks (dev/gaudi_events.c): the device's fault count at the last
     * one, its number, and the copies done OK since (unchecked) */
    uint64_t                      fault_gen;
    uint64_t                      epoch;
    unsigned                      unchecked;

    int                           reset_logged;
    int                           dead_logged; /* needs a reset: said */
    ucs_time_t                    last_busy_poll; /* device in reset */
} uct_gaudi_dma_cs_t;


/* gaudi_dma_cs_queue.c */
const uct_gaudi_dma_asic_t *
uct_gaudi_dma_asic_get(uct_gaudi_asic_t asic, const char **reason_p);

ucs_status_t uct_gaudi_dma_mem_init(uct_gaudi_dma_cs_t *dma);

void uct_gaudi_dma_mem_cleanup(uct_gaudi_dma_cs_t *dma);
void uct_gaudi_dma_mem_abandon(uct_gaudi_dma_cs_t *dma);

void uct_gaudi_dma_fill_chunk(const uct_gaudi_dma_cs_t *dma,
                              const uct_gaudi_dma_slot_t *slot, unsigned q,
                              uint32_t size, struct hl_cs_chunk *chunk);

#endif
