/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The one owner of the module's process-wide state below the memory
 * layer: configuration, discovery, the device contexts, the expected
 * device and copy backend; the lock order and the fork rule
 * (docs/base.md, "Process state"); the functions the table, selection and
 * opening of device contexts share. Included by dev/ only; the fork rule,
 * uct_gaudi_process_owns, is in gaudi_dev.h.
 */

#ifndef UCT_GAUDI_PROCESS_H_
#define UCT_GAUDI_PROCESS_H_

#include <uct/gaudi/dev/gaudi_dev.h>
#include <uct/gaudi/syn/gaudi_syn.h>

#include <ucs/time/time_def.h>
#include <pthread.h>
#include <sys/types.h>


/*
 * Lock order, outermost first (docs/base.md, "Lock order"). A thread holding
 * one takes only those below it. None of this file's locks is held across
 * a call that can sleep or wait on the device: a library load, an open, an
 * acquire, a back-off (uct_gaudi_process_may_sleep asserts it in debug
 * builds).
 *
 *   1. base/gaudi_api.c  the public API's heap reference  (process)
 *   2. mem/gaudi_mem_heap.c  the heap registry           (process)
 *   3. mem/             heap->lock (inside mem/ only)    (per device)
 *   4. base/gaudi_api.c  the public API's copy engine     (per device)
 *   5. expected.lock     the device found once: its result (process)
 *   6. ctx.lock          the context table: slot states, contexts,
 *                        refcounts, the default, the selection flag
 *   7. backend.lock      the expected copy backend and its SynapseAI
 *   8. discovery.lock, config.lock: leaves, never nested in each other
 *   -  ctx->events.lock  a context's fault record (a leaf, gaudi_events.c)
 *
 * backend.syn_absent_at is read and written atomically, under any lock
 * or none.
 */

/* A device's slot in the context table (docs/base.md, "The context
 * table"): taking a device moves it ABSENT -> OPENING -> OPEN, the last
 * put OPEN -> CLOSING -> ABSENT; the slow steps (opening, closing) run with
 * no lock held, and only takers of that device wait for them */
typedef enum {
    UCT_GAUDI_SLOT_ABSENT,
    UCT_GAUDI_SLOT_OPENING,   /* a thread takes the device */
    UCT_GAUDI_SLOT_OPEN,      /* by_minor[] is the context */
    UCT_GAUDI_SLOT_CLOSING    /* the last put closes the context */
} uct_gaudi_slot_state_t;

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
        pthread_mutex_t lock;               /* every field below */
        pthread_cond_t  cond;               /* a slot or the selection
                                               changed state */
        uint8_t         state[GAUDI_HL_MAX_MINOR]; /* uct_gaudi_slot_state_t */
        uct_gaudi_ctx_t *by_minor[GAUDI_HL_MAX_MINOR];
        uct_gaudi_ctx_t *deflt;             /* result of get(-1) */
        int             selecting;          /* a thread selects for get(-1) */
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
        uct_gaudi_syn_t *syn;               /* kept loaded for the take */
        uint64_t        syn_absent_at;      /* atomic, no lock:
                                               uct_gaudi_syn_is_loaded */
    } backend;                              /* gaudi_select.c */
} uct_gaudi_process_t;


extern uct_gaudi_process_t uct_gaudi_process;



/* Lock and unlock one of the locks above; counted per thread so that
 * uct_gaudi_process_may_sleep can tell */
void uct_gaudi_process_lock(pthread_mutex_t *lock);
void uct_gaudi_process_unlock(pthread_mutex_t *lock);

/* Before a call that can sleep: asserts (debug builds) that the thread
 * holds none of the locks above */
void uct_gaudi_process_may_sleep(void);


/* Inside dev/: the table (gaudi_ctx.c), selection (gaudi_select.c) and
 * opening (gaudi_open.c) of device contexts */

/* The copy backend a device is to get, decided before it is opened: on
 * SynapseAI the library owns the device and the module borrows its fd */
typedef struct {
    uct_gaudi_backend_t backend;
    int                 configured; /* named by UCX_GAUDI_COPY_BACKEND */
    char                why[160];
} uct_gaudi_ctx_choice_t;

/* How long a take may wait for another thread's take or close of the same
 * device (UCX_GAUDI_OPEN_TIMEOUT, which bounds that thread's waits, and
 * one second for its calls): the deadline of a take starting now */
ucs_time_t uct_gaudi_ctx_deadline(void);

/*
 * Take @a info's slot: UCS_OK and a new reference to its open context;
 * UCS_INPROGRESS: the slot is the caller's (OPENING), to be ended by
 * uct_gaudi_ctx_slot_publish; UCS_ERR_TIMED_OUT (logged, naming the
 * device) when another thread's take or close of it outlasts @a deadline.
 */
ucs_status_t uct_gaudi_ctx_slot_take(const uct_gaudi_dev_info_t *info,
                                     ucs_time_t deadline,
                                     uct_gaudi_ctx_t **ctx_p);

/* End the caller's OPENING slot of @a info: OPEN with @a ctx (a new
 * context, one reference, the caller's), or ABSENT with NULL */
void uct_gaudi_ctx_slot_publish(const uct_gaudi_dev_info_t *info,
                                uct_gaudi_ctx_t *ctx);

/* The device of get(-1), if one was selected already, else NULL */
const uct_gaudi_dev_info_t *uct_gaudi_ctx_default_info(void);

/* A new context on @a hl (refcount 1), not yet in the table */
ucs_status_t uct_gaudi_ctx_create(const uct_gaudi_dev_info_t *info,
                                  const uct_gaudi_hl_t *hl,
                                  const char *source,
                                  uct_gaudi_ctx_t **ctx_p);

/* Close a context no thread uses any more (not in the table) */
void uct_gaudi_ctx_close(uct_gaudi_ctx_t *ctx);

/* The backend for a device of @a asic (UCX_GAUDI_COPY_BACKEND, auto) */
void uct_gaudi_ctx_choose(uct_gaudi_asic_t asic,
                          uct_gaudi_ctx_choice_t *choice);

/* UCS_ERR_ALREADY_EXISTS (logged) if @a ctx has another backend than an
 * explicit UCX_GAUDI_COPY_BACKEND */
ucs_status_t uct_gaudi_ctx_check_choice(const uct_gaudi_ctx_t *ctx);

/* uct_gaudi_ctx_slot_take, and an open context found there must serve the
 * configured backend (uct_gaudi_ctx_check_choice; its reference dropped
 * if not): UCS_OK, UCS_INPROGRESS (the caller opens and publishes), or an
 * error */
ucs_status_t uct_gaudi_ctx_slot_enter(const uct_gaudi_dev_info_t *info,
                                      ucs_time_t deadline,
                                      uct_gaudi_ctx_t **ctx_p);

/* Whether the process has loaded SynapseAI @a libname */
int uct_gaudi_ctx_syn_loaded(const char *libname);

/* Open @a info for @a choice (its slot is the caller's), waiting up to
 * @a timeout seconds while it is in reset; @a named: a device the user
 * selected, also waited for while busy, and its failure logged */
ucs_status_t uct_gaudi_ctx_open(const uct_gaudi_dev_info_t *info,
                                uct_gaudi_ctx_choice_t *choice,
                                double timeout, int named,
                                uct_gaudi_ctx_t **ctx_p);

/* A context of the device SynapseAI holds or acquires (@a info, or with
 * NULL the first free one), not in the table (gaudi_open.c) */
ucs_status_t uct_gaudi_ctx_syn_open(const uct_gaudi_dev_info_t *info,
                                    const uct_gaudi_ctx_choice_t *choice,
                                    double timeout, int retry_busy,
                                    int may_acquire, uct_gaudi_ctx_t **ctx_p);

/* SynapseAI unusable: an explicit choice fails, auto falls back to the
 * kernel backend (UCS_OK, @a choice updated) */
ucs_status_t uct_gaudi_ctx_syn_fallback(uct_gaudi_ctx_choice_t *choice,
                                        uct_gaudi_asic_t asic,
                                        ucs_status_t status);

/* A context on the application's @a fd, not in the table */
ucs_status_t uct_gaudi_ctx_attach(int fd, const char *source,
                                  const uct_gaudi_dev_info_t *expected,
                                  uct_gaudi_ctx_t **ctx_p);

/* SynapseAI's fd, if the application loaded it and holds a device */
ucs_status_t uct_gaudi_ctx_synapse_fd(int *fd_p);

/* The selection of get(-1) (gaudi_select.c), with no lock held */
ucs_status_t uct_gaudi_ctx_select(int may_open, ucs_time_t deadline,
                                  uct_gaudi_ctx_t **ctx_p);

/* Take the device the user named: its context, opened by this thread if
 * none (with no lock held), waited for until @a deadline while another
 * thread takes or closes it */
ucs_status_t uct_gaudi_ctx_take(const uct_gaudi_dev_info_t *info,
                                ucs_time_t deadline, uct_gaudi_ctx_t **ctx_p);

#endif
