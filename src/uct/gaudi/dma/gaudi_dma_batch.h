/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Batching of asynchronous copies, backend-neutral (docs/performance.md):
 * copies posted while the backend is busy are queued into an open batch,
 * which goes to the backend as one copy (one CS on the kernel backend)
 * once per progress call, when it is full, or when the backend is idle.
 * Each copy still completes on its own, in submission order, with the
 * status of its batch.
 */

#ifndef UCT_GAUDI_DMA_BATCH_H_
#define UCT_GAUDI_DMA_BATCH_H_

#include <uct/gaudi/dma/gaudi_dma_ops.h>


typedef enum {
    UCT_GAUDI_DMA_BATCH_OPEN,       /* taking copies, not submitted */
    UCT_GAUDI_DMA_BATCH_SUBMITTED,  /* the backend completes it */
    UCT_GAUDI_DMA_BATCH_FAILED      /* refused by the backend: its copies
                                       fail from progress, in order */
} uct_gaudi_dma_batch_state_t;


/* One copy of a batch: what completes it */
typedef struct uct_gaudi_dma_batch_op {
    uct_gaudi_dma_comp_cb_t cb;
    void                    *arg;
} uct_gaudi_dma_batch_op_t;


/* A batch: copies submitted to the backend as one */
typedef struct uct_gaudi_dma_batch {
    struct uct_gaudi_dma_batches *owner;
    uct_gaudi_dma_batch_state_t  state;
    ucs_status_t                 status;   /* FAILED */
    unsigned                     num_ops;
    uct_gaudi_dma_batch_op_t     *ops;     /* owner->max_ops entries */
    const char                   *op_name; /* of the first copy */
    char                         name[UCT_GAUDI_DMA_NAME_MAX];
} uct_gaudi_dma_batch_t;


/* The batches of an engine: a ring, delivered in submission order */
typedef struct uct_gaudi_dma_batches {
    unsigned                 max_ops;    /* copies per batch */
    size_t                   max_bytes;  /* a batch this long goes */
    unsigned                 max_xfers;  /* transfers per batch (backend) */
    unsigned                 num;        /* batches in the ring */
    unsigned                 head;       /* oldest undelivered */
    unsigned                 count;      /* undelivered (and the open one) */
    unsigned                 inflight;   /* copies accepted, undelivered */
    unsigned                 delivered;  /* by the current progress call */
    uct_gaudi_dma_batch_t    *ring;
    uct_gaudi_dma_batch_op_t *ops;       /* num * max_ops */
    uct_gaudi_dma_xfer_t     *xfers;     /* of the open batch */
    unsigned                 num_xfers;
    size_t                   length;     /* bytes of the open batch */
    ucs_time_t               poll_gap;   /* params.poll_interval */
    ucs_time_t               last_poll;  /* of the backend's completions */
} uct_gaudi_dma_batches_t;


ucs_status_t uct_gaudi_dma_batch_init(uct_gaudi_dma_t *dma);

/* Drops the open batch (never submitted): its callbacks are not called */
void uct_gaudi_dma_batch_cleanup(uct_gaudi_dma_t *dma);

ucs_status_t uct_gaudi_dma_batch_submit(uct_gaudi_dma_t *dma,
                                        const uct_gaudi_dma_xfer_t *xfers,
                                        unsigned count, const char *name,
                                        uct_gaudi_dma_comp_cb_t cb,
                                        void *arg);

unsigned uct_gaudi_dma_batch_progress(uct_gaudi_dma_t *dma, unsigned max);

int uct_gaudi_dma_batch_can_submit(const uct_gaudi_dma_t *dma);

void uct_gaudi_dma_batch_doorbell(uct_gaudi_dma_t *dma);

ucs_status_t uct_gaudi_dma_batch_quiesce(uct_gaudi_dma_t *dma);

#endif
