/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * DMA engine internals shared by the backend-neutral front end
 * (gaudi_dma_ops.c) and the backends: the operations every backend provides
 * and the fields every engine has. The kernel CS backend: gaudi_dma_cs.h.
 */

#ifndef UCT_GAUDI_DMA_OPS_H_
#define UCT_GAUDI_DMA_OPS_H_

#include <uct/gaudi/dma/gaudi_dma.h>

#define UCT_GAUDI_DMA_NAME_MAX    64

/* Copies per submission when the user does not say (gaudi_dma_batch.c) */
#define UCT_GAUDI_DMA_DEF_BATCH   32


/*
 * What a backend implements; the front end documents the semantics and
 * checks the input first (uct_gaudi_dma_check_xfers): submit gets batches
 * within max_xfers and UCT_GAUDI_DMA_MAX_COPY and a free ring slot, copy
 * and fill ranges within UCT_GAUDI_DMA_MAX_COPY.
 */
typedef struct uct_gaudi_dma_ops {
    const char   *name;   /* "kernel", for messages and ucx_info */

    ucs_status_t (*check)(const uct_gaudi_ctx_t *ctx, const char **reason_p);
    void         (*params_default)(const uct_gaudi_ctx_t *ctx,
                                   uct_gaudi_dma_params_t *params);
    ucs_status_t (*create)(uct_gaudi_ctx_t *ctx,
                           const uct_gaudi_dma_params_t *params,
                           uct_gaudi_dma_t **dma_p);
    void         (*destroy)(uct_gaudi_dma_t *dma);

    ucs_status_t (*submit)(uct_gaudi_dma_t *dma,
                           const uct_gaudi_dma_xfer_t *xfers, unsigned count,
                           const char *name, uct_gaudi_dma_comp_cb_t cb,
                           void *arg);
    unsigned     (*progress)(uct_gaudi_dma_t *dma, unsigned max);
    ucs_status_t (*quiesce)(uct_gaudi_dma_t *dma);
    unsigned     (*max_xfers)(const uct_gaudi_dma_t *dma);
    /* max_xfers of an engine with command buffers of @a cb_size (0:
     * default), before any engine exists */
    unsigned     (*xfers_of)(size_t cb_size);

    ucs_status_t (*copy)(uct_gaudi_dma_t *dma,
                         const uct_gaudi_dma_xfer_t *xfers, unsigned count,
                         const char *name);
    ucs_status_t (*bounce_copy)(uct_gaudi_dma_t *dma, int to_device,
                                uint64_t dma_addr, size_t length,
                                const char *name);
    ucs_status_t (*fill)(uct_gaudi_dma_t *dma, uint64_t dma_addr, int value,
                         size_t length, const char *name);
} uct_gaudi_dma_ops_t;


/* Every engine starts with this; backends extend it */
struct uct_gaudi_dma {
    const uct_gaudi_dma_ops_t *ops;
    uct_gaudi_ctx_t           *ctx;
    uct_gaudi_dma_params_t    params;     /* applied (defaults, clamps) */
    unsigned                  num_slots;  /* async copies in flight at most */
    /* The backends' async ring of num_slots submissions, used and
     * delivered in submission order (uct_gaudi_dma_ring_*) */
    unsigned                  ring_head;  /* oldest undelivered */
    unsigned                  ring_count; /* undelivered submissions */
    uint8_t                   *bounce;    /* params.bounce_size host bytes */
    struct uct_gaudi_dma_batches *batches; /* queued async copies, front
                                               end (gaudi_dma_batch.c) */
    char                      name[UCT_GAUDI_DMA_NAME_MAX];
};


/* Ring slot of the @a i-th oldest undelivered submission (i == ring_count:
 * the next one to be used) */
static inline unsigned uct_gaudi_dma_ring_index(const uct_gaudi_dma_t *dma,
                                                unsigned i)
{
    return (dma->ring_head + i) % dma->num_slots;
}

static inline int uct_gaudi_dma_ring_full(const uct_gaudi_dma_t *dma)
{
    return dma->ring_count == dma->num_slots;
}

/* The oldest submission is delivered: its slot is free again */
static inline void uct_gaudi_dma_ring_pop(uct_gaudi_dma_t *dma)
{
    dma->ring_head = (dma->ring_head + 1) % dma->num_slots;
    dma->ring_count--;
}


/* Front end helpers for the backends (gaudi_dma_ops.c) */
void uct_gaudi_dma_init_base(uct_gaudi_dma_t *dma,
                             const uct_gaudi_dma_ops_t *ops,
                             uct_gaudi_ctx_t *ctx);

ucs_status_t uct_gaudi_dma_check_xfers(const uct_gaudi_dma_t *dma,
                                       const uct_gaudi_dma_xfer_t *xfers,
                                       unsigned count, const char *name);

/* The backends */
extern const uct_gaudi_dma_ops_t uct_gaudi_dma_cs_ops;
extern const uct_gaudi_dma_ops_t uct_gaudi_dma_syn_ops;

#endif
