/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Base class of the gaudi_cpy and gaudi_ipc interfaces (as UCX's
 * uct_cuda_iface_t): the DMA engine of the iface (dma/gaudi_dma.h), the
 * descriptors of asynchronous copies and their completion accounting,
 * flushes, fence and the pending queue, and the endpoint class both
 * transports use. Copies are not tracked per ep: a flush waits for every
 * copy of the iface.
 */

#ifndef UCT_GAUDI_IFACE_H_
#define UCT_GAUDI_IFACE_H_

#include <uct/gaudi/dma/gaudi_dma.h>
#include <uct/gaudi/mem/gaudi_reg.h>

#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/queue.h>
#include <ucs/type/class.h>
#include <uct/base/uct_iface.h>

/* Bounce buffer of both backends' engines unless configured */
#define UCT_GAUDI_IFACE_DEF_BOUNCE (256 * UCS_KBYTE)

/* Buffers one asynchronous copy holds: iov entries and the remote range */
#define UCT_GAUDI_IFACE_MAX_REFS 17


typedef struct uct_gaudi_iface uct_gaudi_iface_t;


/* The engine settings both transports have (uct_gaudi_iface_dma_config_table,
 * embedded in each transport's table under its own prefix) */
typedef struct uct_gaudi_iface_dma_config {
    unsigned      max_batch;     /* MAX_BATCH */
    size_t        batch_bytes;   /* BATCH_BYTES */
    unsigned long dma_queues;    /* DMA_QUEUES */
    ucs_time_t    poll_interval; /* POLL_INTERVAL */
} uct_gaudi_iface_dma_config_t;

extern ucs_config_field_t uct_gaudi_iface_dma_config_table[];


/* An asynchronous copy: what completes it and what it holds; transports
 * extend it (desc_size of the iface) */
typedef struct uct_gaudi_iface_desc {
    uct_gaudi_iface_t   *iface;
    uct_completion_t    *comp;
    unsigned            num_refs;
    uct_gaudi_dma_ref_t refs[UCT_GAUDI_IFACE_MAX_REFS];
} uct_gaudi_iface_desc_t;


/* What differs between the transports */
typedef struct uct_gaudi_iface_ops {
    /* A copy is done (or failed): release what the transport holds beyond
     * desc->refs; returns the status the user gets. NULL: @a status */
    ucs_status_t (*desc_done)(uct_gaudi_iface_desc_t *desc,
                              ucs_status_t status);
    /* Progress found nothing to deliver. NULL: nothing to do */
    void         (*idle)(uct_gaudi_iface_t *iface);
    /* Every progress call, busy or idle. NULL: nothing to do */
    void         (*periodic)(uct_gaudi_iface_t *iface);
} uct_gaudi_iface_ops_t;


/* A flush with a completion: done when @a target copies are delivered */
typedef struct uct_gaudi_iface_flush {
    ucs_queue_elem_t queue;
    uint64_t         target;
    uct_completion_t *comp;
} uct_gaudi_iface_flush_t;


/* An operation that failed after it could no longer fail synchronously:
 * its completion is called with the error from progress */
typedef struct uct_gaudi_iface_failed {
    ucs_queue_elem_t queue;
    uct_completion_t *comp;
    ucs_status_t     status;
} uct_gaudi_iface_failed_t;


/* What a pending request keeps in uct_pending_req_t::priv */
typedef struct {
    ucs_queue_elem_t queue_elem;
    unsigned         *num_pending; /* of the ep that added it: identifies
                                      the ep for purge */
} uct_gaudi_iface_pending_priv_t;


struct uct_gaudi_iface {
    uct_base_iface_t            super;
    uct_gaudi_heap_t            *heap;      /* the MD's: takes the device */
    uct_gaudi_ctx_t             *ctx;       /* NULL until the engine is */
    uct_gaudi_reg_t             *reg;       /* local buffers -> DMA
                                               addresses */
    uct_gaudi_dma_t             *dma;       /* NULL: not created yet (the
                                               first copy does), or the
                                               transport cannot copy */
    uct_gaudi_dma_params_t      dma_params; /* of the engine to create */
    const char                  *no_dma;    /* why it cannot copy, or NULL */
    const uct_gaudi_iface_ops_t *ops;
    ucs_mpool_t                 desc_mp;    /* uct_gaudi_iface_desc_t + */
    ucs_queue_head_t            pending;    /* uct_gaudi_iface_pending_priv_t */
    ucs_queue_head_t            flushes;    /* uct_gaudi_iface_flush_t */
    ucs_queue_head_t            failed;     /* uct_gaudi_iface_failed_t */
    uint64_t                    submitted;  /* async copies submitted */
    uint64_t                    delivered;  /* async copies completed */
    int                         fenced;     /* next copy waits for all */
    int                         closing;    /* completions not delivered */
    int                         dispatching; /* a pending request is run */
    unsigned                    max_poll;   /* completions per progress */
};

UCS_CLASS_DECLARE(uct_gaudi_iface_t, uct_iface_ops_t*,
                  uct_iface_internal_ops_t*, const uct_gaudi_iface_ops_t*,
                  uct_md_h, uct_worker_h, const uct_iface_params_t*,
                  const uct_iface_config_t*, uct_gaudi_heap_t*,
                  uct_gaudi_reg_t*, size_t, unsigned, const char*);


/* An endpoint of either transport: its count of queued requests */
typedef struct uct_gaudi_ep {
    uct_base_ep_t super;
    unsigned      num_pending;  /* requests of this ep in the iface queue */
} uct_gaudi_ep_t;

UCS_CLASS_DECLARE(uct_gaudi_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_NEW_FUNC(uct_gaudi_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_gaudi_ep_t, uct_ep_t);


/* iface and ep operations of both transports */

/* The entries of a transport's uct_iface_ops_t the base class implements */
#define UCT_GAUDI_IFACE_BASE_OPS \
    .ep_pending_add           = uct_gaudi_ep_pending_add, \
    .ep_pending_purge         = uct_gaudi_ep_pending_purge, \
    .ep_flush                 = uct_gaudi_ep_flush, \
    .ep_fence                 = uct_gaudi_ep_fence, \
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_gaudi_ep_t), \
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(uct_gaudi_ep_t), \
    .iface_flush              = uct_gaudi_iface_flush, \
    .iface_fence              = uct_gaudi_iface_fence, \
    .iface_event_arm          = uct_gaudi_iface_event_arm, \
    .iface_progress_enable    = uct_base_iface_progress_enable, \
    .iface_progress_disable   = uct_base_iface_progress_disable, \
    .iface_progress           = uct_gaudi_iface_progress

/* The same for uct_iface_internal_ops_t, less iface_estimate_perf and the
 * ops only some UCX releases have (UCT_GAUDI_IFACE_INTERNAL_OPS,
 * gaudi_compat.h) */
#define UCT_GAUDI_IFACE_BASE_INTERNAL_OPS \
    .iface_vfs_refresh = (uct_iface_vfs_refresh_func_t)ucs_empty_function, \
    .ep_query          = (uct_ep_query_func_t) \
                             ucs_empty_function_return_unsupported

unsigned uct_gaudi_iface_progress(uct_iface_h tl_iface);

ucs_status_t uct_gaudi_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                   uct_completion_t *comp);

ucs_status_t uct_gaudi_iface_fence(uct_iface_h tl_iface, unsigned flags);

ucs_status_t uct_gaudi_iface_event_arm(uct_iface_h tl_iface, unsigned events);

ucs_status_t uct_gaudi_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                uct_completion_t *comp);

ucs_status_t uct_gaudi_ep_fence(uct_ep_h tl_ep, unsigned flags);

ucs_status_t uct_gaudi_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                      unsigned flags);

void uct_gaudi_ep_pending_purge(uct_ep_h tl_ep,
                                uct_pending_purge_callback_t cb, void *arg);


/**
 * What both transports offer (uct_iface_query of the transport fills in
 * addresses and performance): put/get short and bcopy (synchronous,
 * through the engine's bounce buffer), zcopy of @a max_iov entries
 * (asynchronous), pending, connect to iface.
 */
void uct_gaudi_iface_query(uct_gaudi_iface_t *iface, size_t max_iov,
                           uct_iface_attr_t *iface_attr);

/**
 * The largest short or bcopy operation (max_short, max_bcopy): the
 * engine's bounce buffer, or before the engine exists the size it will
 * have; 0 when the iface cannot copy.
 */
size_t uct_gaudi_iface_bounce_size(uct_gaudi_iface_t *iface);

/**
 * Apply the engine settings both transports have to @a params (auto keeps
 * the backend's default).
 */
void uct_gaudi_iface_dma_params(uct_gaudi_dma_params_t *params,
                                const uct_gaudi_iface_dma_config_t *config);

/* Engine settings with every field unset (the backend's default) */
void uct_gaudi_iface_dma_params_unset(uct_gaudi_dma_params_t *params);

/**
 * Have the iface copy with an engine built from @a params (the transport's
 * settings over the expected backend's defaults): made now if the device
 * is taken already, else by the first operation that copies
 * (uct_gaudi_iface_dma_get), so that an iface never takes the device.
 */
ucs_status_t uct_gaudi_iface_dma_init(uct_gaudi_iface_t *iface,
                                      const uct_gaudi_dma_params_t *params);

/**
 * The iface's engine, created on first use: takes the device if the
 * application holds one (never opens one: a copy involves Gaudi memory,
 * whose first use took it already). UCS_ERR_NO_DEVICE or
 * UCS_ERR_UNSUPPORTED, said once, when it cannot be had.
 */
ucs_status_t uct_gaudi_iface_dma_get(uct_gaudi_iface_t *iface,
                                     const char *op);

/**
 * Let the device finish, then destroy the engine without calling back the
 * user (closing: the close cancels the operations). A transport whose
 * descriptors hold its own resources calls it before releasing them; the
 * base class calls it otherwise.
 */
void uct_gaudi_iface_dma_close(uct_gaudi_iface_t *iface);


/**
 * Start a data operation, in the one order of both transports: queued
 * requests go first (UCS_ERR_NO_RESOURCE), an asynchronous one (@a async)
 * needs a free slot of the ring, then a fence waits for the copies before.
 */
ucs_status_t uct_gaudi_iface_op_start(uct_gaudi_iface_t *iface, int async);

/**
 * Report the failure @a status of an operation with completion @a comp
 * through that completion, from progress, and return UCS_INPROGRESS. For
 * the operations UCX 1.13's protocols cannot see fail synchronously (their
 * abort asserts: get bcopy/zcopy, ucp/rma/get_offload.c). Without @a comp,
 * or for UCS_ERR_NO_RESOURCE, returns @a status.
 */
ucs_status_t uct_gaudi_iface_fail_later(uct_gaudi_iface_t *iface,
                                        uct_completion_t *comp,
                                        ucs_status_t status);

/* A descriptor from the pool (iface, comp set; no refs) or NULL */
uct_gaudi_iface_desc_t *uct_gaudi_iface_desc_get(uct_gaudi_iface_t *iface,
                                                 uct_completion_t *comp);

/* Release the refs of a descriptor that was not submitted, and free it */
void uct_gaudi_iface_desc_put(uct_gaudi_iface_desc_t *desc);

/**
 * Submit @a desc as one asynchronous copy of @a count transfers.
 * UCS_INPROGRESS: counted, and completed from progress (desc_done, refs,
 * the user's completion); otherwise nothing was submitted and @a desc is
 * still the caller's.
 */
ucs_status_t uct_gaudi_iface_submit(uct_gaudi_iface_t *iface,
                                    uct_gaudi_iface_desc_t *desc,
                                    const uct_gaudi_dma_xfer_t *xfers,
                                    unsigned count, const char *name);

#endif
