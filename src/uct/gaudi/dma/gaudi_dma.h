/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * DMA engine: copies between DMA addresses (device VAs of host mappings,
 * DRAM VAs on Gaudi2, physical DRAM on Gaudi1) through the kernel CS path
 * (facts 5). No UCT knowledge: the gaudi_cpy transport and the tests drive
 * it. Design and figures: docs/performance.md.
 *
 * - One engine per user (the transport opens one per iface): completions
 *   are delivered by uct_gaudi_dma_progress() of that engine only, so they
 *   run on the thread of the worker that owns the iface. Engines of one
 *   device share the driver's in-flight CS window; EAGAIN from the driver
 *   is reported as UCS_ERR_NO_RESOURCE like a full ring.
 * - A submission is one CS: its transfers are split into pieces and spread
 *   over the ASIC's DMA queues (one chunk a queue) so that engines run in
 *   parallel. A CS either is submitted whole or not at all. Asynchronous
 *   copies posted while the backend is busy share a submission
 *   (gaudi_dma_batch.c).
 * - An engine is not thread-safe: like a UCT iface it is used by one
 *   thread at a time (the ioctls themselves are, so engines of different
 *   threads need no common lock).
 * - Asynchronous copies complete in submission order from progress; a
 *   synchronous copy (uct_gaudi_dma_copy/_short) uses a slot of its own
 *   and waits for it without delivering other completions (no reentrancy).
 */

#ifndef UCT_GAUDI_DMA_H_
#define UCT_GAUDI_DMA_H_

#include <uct/gaudi/dev/gaudi_dev.h>

#include <ucs/sys/compiler_def.h>
#include <ucs/type/status.h>
#include <stddef.h>
#include <stdint.h>

BEGIN_C_DECLS

/* Largest copy one submit accepts (sum of its transfers) */
#define UCT_GAUDI_DMA_MAX_COPY      (1ul << 30)

/* Largest piece one LIN_DMA packet carries (tsize is a u32, facts 5.5) */
#define UCT_GAUDI_DMA_MAX_PIECE     (1ul << 30)

/* Transfers of one asynchronous copy for which uct_gaudi_dma_can_submit()
 * is exact (the transports' largest iov) */
#define UCT_GAUDI_DMA_BATCH_OP_XFERS 16


typedef struct uct_gaudi_dma uct_gaudi_dma_t;


/* Tunables; zero fields take the defaults of the ASIC */
typedef struct uct_gaudi_dma_params {
    unsigned max_inflight;  /* async CS slots (capped by the driver's window) */
    unsigned max_queues;    /* DMA queues used (<= what the ASIC offers) */
    size_t   cb_size;       /* bytes of one command buffer (per queue, slot) */
    size_t   bounce_size;   /* host bounce bytes of the synchronous slot */
    size_t   split_min;     /* smallest piece a transfer is split into */
    double   sync_timeout;  /* seconds a synchronous copy may wait */
    unsigned max_batch;     /* async copies per submission (1: no batching) */
    size_t   batch_bytes;   /* a submission goes once it holds this many
                               bytes (SIZE_MAX: no limit), so that several
                               are in flight and engines get work as each
                               completes (docs/performance.md) */
    double   poll_interval; /* least seconds between two completion polls
                               of the async ring (0: every progress) */
} uct_gaudi_dma_params_t;


/* Which sides of a transfer are host memory (else device memory). The
 * kernel backend does not need it (one address space of DMA addresses);
 * SynapseAI takes a direction and host sides as host pointers. The memory
 * layer sets it (uct_gaudi_reg_xfer), the engine's own buffers likewise. */
enum {
    UCT_GAUDI_DMA_XFER_SRC_HOST = UCS_BIT(0),
    UCT_GAUDI_DMA_XFER_DST_HOST = UCS_BIT(1),
    /* SynapseAI: the host side is in a mapping the application made, so a
     * failed translation is an error (the application unmapped it), never
     * a reason to stage the copy through the engine's own buffer */
    UCT_GAUDI_DMA_XFER_APP_MAP  = UCS_BIT(2)
};

/* One contiguous transfer between two DMA addresses */
typedef struct uct_gaudi_dma_xfer {
    uint64_t src;
    uint64_t dst;
    size_t   length;
    unsigned flags;   /* UCT_GAUDI_DMA_XFER_* */
} uct_gaudi_dma_xfer_t;


/* One side of a synchronous copy: a host buffer (staged through the
 * engine's bounce buffer, never registered) or a DMA address */
typedef struct uct_gaudi_dma_end {
    void     *host;      /* NULL: @a dma_addr */
    uint64_t dma_addr;
} uct_gaudi_dma_end_t;


/* Completion of an asynchronous copy, called from uct_gaudi_dma_progress */
typedef void (*uct_gaudi_dma_comp_cb_t)(void *arg, ucs_status_t status);


/**
 * Whether the ASIC of @a ctx offers user DMA through the CS path.
 * UCS_OK, or UCS_ERR_UNSUPPORTED with @a reason_p set to a sentence that
 * says why (Gaudi3: no user-visible CS queue, facts 6).
 */
ucs_status_t uct_gaudi_dma_check(const uct_gaudi_ctx_t *ctx,
                                 const char **reason_p);

/**
 * uct_gaudi_dma_check for a device not taken yet, whose backend is
 * expected to be @a backend: only what the ASIC rules out (the SynapseAI
 * library is loaded, and may fail, when the device is taken)
 */
ucs_status_t uct_gaudi_dma_check_expected(uct_gaudi_asic_t asic,
                                          uct_gaudi_backend_t backend,
                                          const char **reason_p);

/* uct_gaudi_dma_max_xfers of an engine of @a backend with command buffers
 * of @a cb_size bytes (0: the default), before it exists */
unsigned uct_gaudi_dma_max_xfers_of(uct_gaudi_backend_t backend,
                                    size_t cb_size);

/* "kernel" or "synapse": the backend of @a ctx's engines */
const char *uct_gaudi_dma_backend_name(const uct_gaudi_ctx_t *ctx);

/* Fill @a params with the defaults of the ASIC of @a ctx */
void uct_gaudi_dma_params_default(const uct_gaudi_ctx_t *ctx,
                                  uct_gaudi_dma_params_t *params);

/**
 * Open an engine on @a ctx (the caller keeps its ctx reference for the
 * engine's lifetime). Allocates and maps the command buffers and the
 * bounce buffer once, so that no copy registers memory.
 */
ucs_status_t uct_gaudi_dma_create(uct_gaudi_ctx_t *ctx,
                                  const uct_gaudi_dma_params_t *params,
                                  uct_gaudi_dma_t **dma_p);

/**
 * Close an engine. Copies still in flight are waited for (bounded by
 * sync_timeout) without calling their callbacks, because their buffers
 * must stay valid until the device is done (facts 5.4).
 */
void uct_gaudi_dma_destroy(uct_gaudi_dma_t *dma);

/**
 * Submit an asynchronous copy of @a count transfers. @a name
 * ("put_zcopy", ...) appears in error messages. While the backend is busy
 * copies are queued and submitted together (up to params.max_batch, one CS
 * on the kernel backend) from the next progress call or when the batch is
 * full (max_batch copies, or batch_bytes bytes); an idle backend gets the
 * copy at once.
 * UCS_INPROGRESS: @a cb(@a arg, status) will be called from progress, in
 *   submission order; a copy queued in a batch that fails (on the device
 *   or at its submission) gets the batch's error;
 * UCS_OK: nothing to copy (zero length), @a cb is not called;
 * UCS_ERR_NO_RESOURCE: ring full or driver EAGAIN, or the device is in
 *   reset: nothing was submitted, retry later;
 * other errors: nothing was submitted, the reason was logged.
 */
ucs_status_t uct_gaudi_dma_submit(uct_gaudi_dma_t *dma,
                                  const uct_gaudi_dma_xfer_t *xfers,
                                  unsigned count, const char *name,
                                  uct_gaudi_dma_comp_cb_t cb, void *arg);

/*
 * Poll completions (the oldest submission only) and deliver the copies of
 * up to @a max submissions; then submit the copies queued since the last
 * call. Returns the number of copies delivered.
 */
unsigned uct_gaudi_dma_progress(uct_gaudi_dma_t *dma, unsigned max);

/* Submit the copies queued so far now rather than at the next progress */
void uct_gaudi_dma_doorbell(uct_gaudi_dma_t *dma);

/* Asynchronous copies submitted and not yet delivered */
unsigned uct_gaudi_dma_inflight(const uct_gaudi_dma_t *dma);

/* Asynchronous copies the engine holds at most (queued and submitted) */
unsigned uct_gaudi_dma_max_inflight(const uct_gaudi_dma_t *dma);

/* Whether an asynchronous submit would find a free slot now */
int uct_gaudi_dma_can_submit(const uct_gaudi_dma_t *dma);

/**
 * Synchronous copy: submit and wait until the device is done (or failed).
 * Never calls callbacks of asynchronous copies.
 */
ucs_status_t uct_gaudi_dma_copy(uct_gaudi_dma_t *dma,
                                const uct_gaudi_dma_xfer_t *xfers,
                                unsigned count, const char *name);

/**
 * Synchronous copy between an unregistered host buffer and a DMA address,
 * staged through the engine's pre-mapped bounce buffer (no registration,
 * no lookup). @a to_device: host -> @a dma_addr, else @a dma_addr -> host.
 */
ucs_status_t uct_gaudi_dma_short(uct_gaudi_dma_t *dma, int to_device,
                                 void *host, uint64_t dma_addr,
                                 size_t length, const char *name);

/**
 * The one synchronous copy of any pair of sides: device<->device by DMA,
 * host<->device through the bounce buffer, host<->host by memmove.
 */
ucs_status_t uct_gaudi_dma_copy_sync(uct_gaudi_dma_t *dma,
                                     const uct_gaudi_dma_end_t *dst,
                                     const uct_gaudi_dma_end_t *src,
                                     size_t length, const char *name);

/**
 * Synchronous fill of [dma_addr, +length) with the byte @a value by the
 * engine (LIN_DMA memset, facts 5.5): no host buffer is involved.
 */
ucs_status_t uct_gaudi_dma_fill(uct_gaudi_dma_t *dma, uint64_t dma_addr,
                                int value, size_t length, const char *name);

/**
 * The engine's pre-mapped host bounce buffer (for bcopy: pack into it,
 * then uct_gaudi_dma_bounce_copy); valid until the next synchronous copy.
 */
void *uct_gaudi_dma_bounce(const uct_gaudi_dma_t *dma, size_t *size_p);

/* Synchronous copy between the bounce buffer and @a dma_addr */
ucs_status_t uct_gaudi_dma_bounce_copy(uct_gaudi_dma_t *dma, int to_device,
                                       uint64_t dma_addr, size_t length,
                                       const char *name);

/**
 * Wait until every asynchronous copy submitted so far is done on the
 * device (for fences); their callbacks still run from progress.
 */
ucs_status_t uct_gaudi_dma_quiesce(uct_gaudi_dma_t *dma);

/* Largest number of transfers one submit accepts */
unsigned uct_gaudi_dma_max_xfers(const uct_gaudi_dma_t *dma);

/* Device name for messages ("GAUDI_0 (accel0)") */
const char *uct_gaudi_dma_dev_name(const uct_gaudi_dma_t *dma);

END_C_DECLS

#endif
