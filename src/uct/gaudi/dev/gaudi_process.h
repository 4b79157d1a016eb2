/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The one owner of the module's process-wide state below the memory
 * layer: configuration, discovery, the device contexts, the expected
 * device and copy backend; the lock order and the fork rule
 * (docs/base.md, "Process state"). Included by dev/ only; the fork
 * rule, uct_gaudi_process_owns, is in gaudi_dev.h.
 */

#ifndef UCT_GAUDI_PROCESS_H_
#define UCT_GAUDI_PROCESS_H_

#include <uct/gaudi/dev/gaudi_dev.h>
#include <uct/gaudi/syn/gaudi_syn.h>

#include <pthread.h>
#include <sys/types.h>


/*
 * Lock order, outermost first (docs/base.md). A thread holding one takes
 * only those below it; no process-wide one is held across a sleep (a
 * back-off for a device in reset, a wait for deferred chunks).
 *
 *   1. base/gaudi_api.c  the public API's heap reference  (process)
 *   2. mem/gaudi_mem.c   the heap registry                (process)
 *   3. mem/gaudi_mem.c   heap->lock                       (per device)
 *   4. base/gaudi_api.c  the public API's copy engine     (per device)
 *   5. expected.lock     the device found once            (process)
 *   6. ctx.lock          the context table's claim and refcounts (process)
 *   7. ctx->lock         users of a context's compute node (per device)
 *   8. backend.lock      the expected copy backend        (process)
 *   9. discovery.lock, config.lock: leaves, never nested in each other
 *
 * backend.syn_absent_at is read and written atomically, under any lock
 * or none.
 *
 * The table is claimed for a selection or an open, not locked: ctx.lock
 * is held only to claim, release and count references, and a back-off
 * releases the claim while it sleeps (gaudi_ctx.c, uct_gaudi_ctx_wait).
 */
typedef struct uct_gaudi_process {
    struct {
        pthread_mutex_t           lock;
        int                       loaded;
        uct_gaudi_global_config_t values;   /* UCX_GAUDI_*, gaudi_config.c */
    } config;

    struct {
        pthread_mutex_t     lock;
        int                 done;
        uct_gaudi_devices_t devices;        /* gaudi_discover.c */
    } discovery;

    struct uct_gaudi_ctx_table {
        pthread_mutex_t lock;
        pthread_cond_t  cond;
        int             busy;               /* claimed by a thread */
        uct_gaudi_ctx_t *by_minor[GAUDI_HL_MAX_MINOR];
        uct_gaudi_ctx_t *deflt;             /* result of get(-1) */
        pid_t           pid;                /* owner of the table */
    } ctx;                                  /* gaudi_ctx.c */

    struct {
        pthread_mutex_t            lock;
        int                        tried;
        const uct_gaudi_dev_info_t *info;
    } expected;                             /* gaudi_device.c */

    struct {
        pthread_mutex_t lock;
        int             value;              /* uct_gaudi_backend_t, -1 */
        uct_gaudi_syn_t syn;                /* kept loaded for the take */
        uint64_t        syn_absent_at;      /* atomic, no lock:
                                               uct_gaudi_syn_is_loaded */
    } backend;                              /* gaudi_ctx.c */
} uct_gaudi_process_t;


extern uct_gaudi_process_t uct_gaudi_process;


#endif
