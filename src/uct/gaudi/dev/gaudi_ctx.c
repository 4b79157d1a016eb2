/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Device selection and ownership: one refcounted context per device per
 * process, shared by every MD and iface of every UCX context. The driver
 * allows a single compute context per device system-wide, even within one
 * process (facts 7.1), so the fd is opened once, or borrowed from the
 * application (UCX_GAUDI_DEVICE_FD, SynapseAI).
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/dev/gaudi_process.h>
#include <uct/gaudi/syn/gaudi_syn.h>

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <ucs/time/time.h>

#include <dlfcn.h>
#include <pthread.h>
#include <time.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* Launcher variables holding the node-local rank, in lookup order */
static const char *uct_gaudi_local_rank_vars[] = {
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "MPI_LOCALRANKID",
    "MV2_COMM_WORLD_LOCAL_RANK",
    "SLURM_LOCALID",
    "PMI_LOCAL_RANK",
    "PALS_LOCAL_RANKID",
    "LOCAL_RANK"
};

/* EAGAIN back-off bounds */
#define UCT_GAUDI_OPEN_BACKOFF_MIN_US 1000
#define UCT_GAUDI_OPEN_BACKOFF_MAX_US 250000

/* The copy backend a device is to get, decided before it is opened: on
 * SynapseAI the library owns the device and the module borrows its fd */
typedef struct {
    uct_gaudi_backend_t backend;
    int                 explicit;  /* named by UCX_GAUDI_COPY_BACKEND */
    char                why[160];
} uct_gaudi_ctx_choice_t;


typedef enum {
    UCT_GAUDI_SELECT_AUTO,
    UCT_GAUDI_SELECT_INDEX,
    UCT_GAUDI_SELECT_MODULE
} uct_gaudi_select_mode_t;


/* The table (uct_gaudi_process.ctx) is used by one thread at a time
 * (uct_gaudi_ctx_enter): its lock is only held to claim it, and a thread
 * waiting out a device in reset releases the claim while it sleeps
 * (uct_gaudi_ctx_wait) */
static struct uct_gaudi_ctx_table *const uct_gaudi_ctx_table =
        &uct_gaudi_process.ctx;


/* "GAUDI_0 (accel0, 0000:19:00.0)" */
static const char *uct_gaudi_dev_desc(const uct_gaudi_dev_info_t *info,
                                      char *buf, size_t max)
{
    snprintf(buf, max, "%s (%s, %s)", info->name, info->node_name,
             info->has_bus_id ? info->pci_addr : "bus id unknown");
    return buf;
}

/*
 * The fork rule (uct_gaudi_process_owns): a forked child inherits the fds
 * but must not share the parent's compute context, so it forgets the
 * parent's table (the child's copies stay valid for their holders and are
 * closed by their puts). Called with the table claimed.
 */
static void uct_gaudi_ctx_check_fork(void)
{
    if (uct_gaudi_process_owns(uct_gaudi_ctx_table->pid)) {
        return;
    }

    if (uct_gaudi_ctx_table->pid != 0) {
        ucs_debug("gaudi: pid %d forked from %d, not reusing its device "
                  "contexts", getpid(), uct_gaudi_ctx_table->pid);
    }

    memset(uct_gaudi_ctx_table->by_minor, 0,
           sizeof(uct_gaudi_ctx_table->by_minor));
    uct_gaudi_ctx_table->deflt = NULL;
    uct_gaudi_ctx_table->pid   = getpid();
}

int uct_gaudi_ctx_owned(const uct_gaudi_ctx_t *ctx)
{
    return uct_gaudi_process_owns(ctx->pid);
}

static ucs_status_t uct_gaudi_ctx_create(const uct_gaudi_dev_info_t *info,
                                         const uct_gaudi_hl_t *hl,
                                         const char *source,
                                         uct_gaudi_ctx_t **ctx_p);

/* Whether the process has loaded SynapseAI @a libname */
static int uct_gaudi_ctx_syn_loaded(const char *libname)
{
    return uct_gaudi_syn_is_loaded(libname,
                                   &uct_gaudi_process.backend.syn_absent_at);
}

/*
 * The backend for a device of @a asic: UCX_GAUDI_COPY_BACKEND, or in auto
 * SynapseAI when the process already loaded it (its stream work and ours
 * then share one owner of the device) or when the ASIC has no kernel
 * queue (Gaudi3, facts 6), else the kernel CS path.
 */
static void uct_gaudi_ctx_choose(uct_gaudi_asic_t asic,
                                 uct_gaudi_ctx_choice_t *choice)
{
    const uct_gaudi_global_config_t *config = uct_gaudi_global_config();
    const char *reason;

    choice->explicit = (config->copy_backend != UCT_GAUDI_BACKEND_AUTO);
    if (choice->explicit) {
        choice->backend = config->copy_backend;
        ucs_snprintf_zero(choice->why, sizeof(choice->why),
                          "UCX_GAUDI_COPY_BACKEND=%s",
                          uct_gaudi_backend_names[config->copy_backend]);
    } else if (uct_gaudi_ctx_syn_loaded(config->synapse_lib)) {
        choice->backend = UCT_GAUDI_BACKEND_SYNAPSE;
        ucs_snprintf_zero(choice->why, sizeof(choice->why),
                          "auto: %s is loaded in the process",
                          config->synapse_lib);
    } else if (uct_gaudi_asic_kernel_dma(asic, &reason) != UCS_OK) {
        choice->backend = UCT_GAUDI_BACKEND_SYNAPSE;
        ucs_snprintf_zero(choice->why, sizeof(choice->why),
                          "auto: %s has no kernel DMA queue",
                          uct_gaudi_asic_name(asic));
    } else {
        choice->backend = UCT_GAUDI_BACKEND_KERNEL;
        ucs_snprintf_zero(choice->why, sizeof(choice->why),
                          "auto: %s not loaded, %s has kernel DMA queues",
                          config->synapse_lib, uct_gaudi_asic_name(asic));
    }
}

/* An existing context serves a later user only with the backend it has */
static ucs_status_t uct_gaudi_ctx_check_choice(const uct_gaudi_ctx_t *ctx)
{
    uct_gaudi_ctx_choice_t choice;

    uct_gaudi_ctx_choose(ctx->info->asic, &choice);
    if (choice.explicit && (choice.backend != ctx->backend)) {
        ucs_error("gaudi %s: copy backend %s (%s) refused: the device "
                  "already copies with %s (%s), one backend per device and "
                  "process", ctx->info->name,
                  uct_gaudi_backend_names[choice.backend], choice.why,
                  uct_gaudi_backend_names[ctx->backend], ctx->backend_why);
        return UCS_ERR_ALREADY_EXISTS;
    }

    return UCS_OK;
}

/* Set the backend of a new context (the kernel one unless @a syn) */
static void uct_gaudi_ctx_set_backend(uct_gaudi_ctx_t *ctx,
                                      const char *why, uct_gaudi_syn_t *syn,
                                      uct_gaudi_syn_device_t device,
                                      int acquired)
{
    ctx->backend      = (syn != NULL) ? UCT_GAUDI_BACKEND_SYNAPSE :
                        UCT_GAUDI_BACKEND_KERNEL;
    ctx->syn          = syn;
    ctx->syn_device   = device;
    ctx->syn_acquired = acquired;
    ucs_strncpy_zero(ctx->backend_why, why, sizeof(ctx->backend_why));
    ucs_diag("gaudi %s: copy backend %s (%s)", ctx->info->name,
             uct_gaudi_backend_names[ctx->backend], ctx->backend_why);
}

static ucs_status_t uct_gaudi_ctx_create(const uct_gaudi_dev_info_t *info,
                                         const uct_gaudi_hl_t *hl,
                                         const char *source,
                                         uct_gaudi_ctx_t **ctx_p)
{
    pthread_mutexattr_t attr;
    uct_gaudi_ctx_t *ctx;

    ctx = ucs_calloc(1, sizeof(*ctx), "gaudi ctx");
    if (ctx == NULL) {
        ucs_error("gaudi %s: failed to allocate device context", info->name);
        return UCS_ERR_NO_MEMORY;
    }

    ctx->hl       = *hl;
    ctx->info     = info;
    ctx->refcount = 1;
    ctx->pid      = getpid();
    ctx->source   = source;
    pthread_mutexattr_init(&attr);
    /* error-checking: see uct_gaudi_ctx_syn_unmapped() */
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&ctx->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    uct_gaudi_driver_identify(&ctx->hl, &ctx->driver);
    ctx->backend = UCT_GAUDI_BACKEND_KERNEL;
    ucs_strncpy_zero(ctx->backend_why, source, sizeof(ctx->backend_why));

    uct_gaudi_ctx_table->by_minor[info->minor] = ctx;
    ucs_debug("gaudi %s: device context on %s fd %d (%s)", info->name,
              hl->name, hl->fd, source);
    *ctx_p = ctx;
    return UCS_OK;
}

static int uct_gaudi_ctx_lookup(const uct_gaudi_dev_info_t *info,
                                uct_gaudi_ctx_t **ctx_p)
{
    uct_gaudi_ctx_t *ctx = uct_gaudi_ctx_table->by_minor[info->minor];

    if (ctx == NULL) {
        return 0;
    }

    ++ctx->refcount;
    *ctx_p = ctx;
    return 1;
}

static void uct_gaudi_ctx_enter(void);
static void uct_gaudi_ctx_leave(void);
static int uct_gaudi_ctx_unref(uct_gaudi_ctx_t *ctx);
static void uct_gaudi_ctx_close(uct_gaudi_ctx_t *ctx);

/* Drop a reference with the table claimed */
static void uct_gaudi_ctx_unref_claimed(uct_gaudi_ctx_t *ctx)
{
    if (uct_gaudi_ctx_unref(ctx)) {
        uct_gaudi_ctx_close(ctx);
    }
}

/*
 * Sleep @a usec of a back-off with the table released, so that no thread
 * that needs it (a put, a lookup) waits for a sleeper; then whether
 * another thread made a context of @a info meanwhile (NULL: any device,
 * not looked for). Called with the table claimed.
 */
static int uct_gaudi_ctx_wait(const uct_gaudi_dev_info_t *info,
                              unsigned usec, uct_gaudi_ctx_t **found_p)
{
    uct_gaudi_ctx_leave();
    usleep(usec);
    uct_gaudi_ctx_enter();
    return (info != NULL) && uct_gaudi_ctx_lookup(info, found_p);
}

/* A context another thread made while this one waited: taken like one
 * found at the start (uct_gaudi_ctx_get_dev) */
static ucs_status_t uct_gaudi_ctx_use_found(uct_gaudi_ctx_t *found,
                                            uct_gaudi_ctx_t **ctx_p)
{
    ucs_status_t status = uct_gaudi_ctx_check_choice(found);

    if (status != UCS_OK) {
        --found->refcount;
        return status;
    }

    *ctx_p = found;
    return UCS_OK;
}

static void uct_gaudi_ctx_syn_close(uct_gaudi_syn_t *syn,
                                    uct_gaudi_syn_device_t device,
                                    int acquired)
{
    if (acquired) {
        /* SynapseAI closes the fd we borrowed */
        (void)uct_gaudi_syn_release(syn, device);
    }
    uct_gaudi_syn_unload(syn);
    ucs_free(syn);
}

/*
 * Whether @a info is in reset or still releasing its previous context, by
 * its control node (DEVICE_STATUS, OPEN_STATS; NULL if neither or it
 * cannot tell). SynapseAI's acquire waits out the first inside the call,
 * up to 60 s and beyond our reach (osal_linux.cpp:1457-1505,
 * physical_device.cpp:82-110), and fails at once on the second (the
 * driver's EAGAIN, osal_linux.cpp:392-405): both are the module's to wait
 * for, within UCX_GAUDI_OPEN_TIMEOUT.
 */
static const char *uct_gaudi_ctx_settling(const uct_gaudi_dev_info_t *info)
{
    struct hl_open_stats_info stats;
    const char *what = NULL;
    uct_gaudi_hl_t hl;
    uint32_t st;

    if ((info == NULL) ||
        (uct_gaudi_hl_open(info->minor, 1, UCT_GAUDI_HL_OPEN_QUIET, &hl) !=
         UCS_OK)) {
        return NULL;
    }
    if ((uct_gaudi_hl_device_status(&hl, &st) == UCS_OK) &&
        ((st == GAUDI_HL_DEVICE_STATUS_IN_RESET) ||
         (st == GAUDI_HL_DEVICE_STATUS_IN_RESET_AFTER_DEVICE_RELEASE))) {
        what = "in reset";
    } else if ((uct_gaudi_hl_open_stats(&hl, &stats) == UCS_OK) &&
               stats.compute_ctx_in_release) {
        what = "still releasing its previous context";
    }
    uct_gaudi_hl_close(&hl);
    return what;
}

/*
 * Have SynapseAI acquire @a info (NULL: the first free device), retrying
 * with back-off for up to @a timeout seconds while the device resets or
 * releases its previous context (facts 7.1; checked before each acquire,
 * so that SynapseAI's own reset wait is not entered), and with
 * @a retry_busy while someone else still holds it. UCS_OK with
 * @a found_p set: another thread made a context of @a info meanwhile.
 */
static ucs_status_t uct_gaudi_ctx_syn_acquire(const uct_gaudi_syn_t *syn,
                                              const uct_gaudi_dev_info_t *info,
                                              double timeout, int retry_busy,
                                              uct_gaudi_syn_device_t *device_p,
                                              uct_gaudi_ctx_t **found_p)
{
    ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(timeout);
    unsigned delay_us   = UCT_GAUDI_OPEN_BACKOFF_MIN_US;
    const char *bus     = ((info != NULL) && info->has_bus_id) ?
                          info->pci_addr : NULL;
    const char *settling;
    ucs_status_t status;

    for (;;) {
        settling = uct_gaudi_ctx_settling(info);
        if (settling == NULL) {
            status = uct_gaudi_syn_acquire(syn, bus, device_p);
            if (status == UCS_ERR_BUSY) {
                /* synFail by bus: held, or refused while releasing */
                settling = uct_gaudi_ctx_settling(info);
            }
        }
        if (settling != NULL) {
            status = UCS_ERR_NO_RESOURCE;
        } else if ((status != UCS_ERR_NO_RESOURCE) &&
                   (!retry_busy || (status != UCS_ERR_BUSY))) {
            return status;
        }
        if (ucs_get_time() >= deadline) {
            break;
        }

        if (uct_gaudi_ctx_wait(info, delay_us, found_p)) {
            return UCS_OK;   /* another thread's context of the device */
        }
        delay_us = ucs_min(delay_us * 2, UCT_GAUDI_OPEN_BACKOFF_MAX_US);
    }

    if (timeout > 0) {
        ucs_error("gaudi %s: SynapseAI cannot acquire the device for "
                  "%.1f s (UCX_GAUDI_OPEN_TIMEOUT): %s",
                  (info != NULL) ? info->name : "(any)", timeout,
                  (status == UCS_ERR_BUSY) ? "held by another process" :
                  (settling != NULL) ? settling : "still in reset");
    }
    return status;
}

/*
 * Context of the device SynapseAI holds: the application's (it acquired a
 * device already), else the one SynapseAI acquires for us, @a info or with
 * NULL the first free one (waiting as uct_gaudi_ctx_syn_acquire does).
 * SynapseAI opens the compute node itself and the driver allows one
 * compute context per device (facts 7.1), so the module borrows its fd.
 */
static ucs_status_t uct_gaudi_ctx_syn_open(const uct_gaudi_dev_info_t *info,
                                           const uct_gaudi_ctx_choice_t *choice,
                                           double timeout, int retry_busy,
                                           int may_acquire,
                                           uct_gaudi_ctx_t **ctx_p)
{
    const char *libname = uct_gaudi_global_config()->synapse_lib;
    uct_gaudi_syn_device_t device = UCT_GAUDI_SYN_DEVICE_ANY;
    const uct_gaudi_dev_info_t *held;
    uct_gaudi_ctx_t *found = NULL;
    int fd, type, acquired = 0;
    uct_gaudi_syn_t *syn;
    ucs_status_t status;
    uct_gaudi_hl_t hl;

    syn = ucs_calloc(1, sizeof(*syn), "gaudi syn");
    if (syn == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_gaudi_syn_load(libname, uct_gaudi_device_minor_known,
                                syn);
    if (status != UCS_OK) {
        ucs_free(syn);
        return status;
    }

    if (uct_gaudi_syn_held_fd(syn, &fd, &device) != UCS_OK) {
        if (!may_acquire) {
            /* the application has not acquired one (yet) */
            status = UCS_ERR_NO_DEVICE;
            goto err_unload;
        }
        status = uct_gaudi_ctx_syn_acquire(syn, info, timeout, retry_busy,
                                           &device, &found);
        if (status != UCS_OK) {
            goto err_unload;
        } else if (found != NULL) {
            status = uct_gaudi_ctx_use_found(found, ctx_p);
            goto err_unload;
        }
        acquired = 1;
        status   = uct_gaudi_syn_device_fd(syn, device, &fd, &type);
        if (status != UCS_OK) {
            goto err_close;
        }
    }

    status = uct_gaudi_hl_attach_fd(fd, &hl);
    if (status != UCS_OK) {
        ucs_error("gaudi: SynapseAI's fd %d is not a usable Gaudi compute "
                  "node", fd);
        goto err_close;
    }

    held = uct_gaudi_device_by_minor(hl.minor);
    if ((held == NULL) || ((info != NULL) && (held != info))) {
        ucs_error("gaudi: SynapseAI holds %s, not the selected %s",
                  (held != NULL) ? held->name : hl.name,
                  (info != NULL) ? info->name : "device");
        status = UCS_ERR_NO_DEVICE;
        goto err_close;
    }

    if (uct_gaudi_ctx_table->by_minor[held->minor] != NULL) {
        ucs_error("gaudi %s: SynapseAI holds a device this process already "
                  "uses with the kernel backend", held->name);
        status = UCS_ERR_ALREADY_EXISTS;
        goto err_close;
    }

    status = uct_gaudi_ctx_create(held, &hl, acquired ?
                                  "SynapseAI (acquired by UCX)" :
                                  "SynapseAI", ctx_p);
    if (status != UCS_OK) {
        goto err_close;
    }

    uct_gaudi_ctx_set_backend(*ctx_p, choice->why, syn, device, acquired);
    return UCS_OK;

err_close:
    uct_gaudi_ctx_syn_close(syn, device, acquired);
    return status;
err_unload:
    uct_gaudi_syn_unload(syn);
    ucs_free(syn);
    return status;
}

/*
 * SynapseAI could not be used for the device: an explicit choice fails,
 * auto falls back to opening the device for the kernel backend (which
 * Gaudi3 lacks: then no copy transport, the memory domain still works)
 */
static ucs_status_t
uct_gaudi_ctx_syn_fallback(uct_gaudi_ctx_choice_t *choice,
                           uct_gaudi_asic_t asic, ucs_status_t status)
{
    const char *libname = uct_gaudi_global_config()->synapse_lib;
    const char *reason;

    if (status != UCS_ERR_UNSUPPORTED) {
        return status;   /* the library works, the device does not */
    } else if (choice->explicit) {
        ucs_error("gaudi: UCX_GAUDI_COPY_BACKEND=synapse but SynapseAI "
                  "('%s') cannot provide the device: %s", libname,
                  ucs_status_string(status));
        return status;
    }

    ucs_diag("gaudi: %s; SynapseAI ('%s') unusable (%s): kernel backend%s",
             choice->why, libname, ucs_status_string(status),
             (uct_gaudi_asic_kernel_dma(asic, &reason) != UCS_OK) ?
             ", no copy transport" : "");
    ucs_snprintf_zero(choice->why, sizeof(choice->why),
                      "auto: SynapseAI unusable (%s)",
                      ucs_status_string(status));
    choice->backend = UCT_GAUDI_BACKEND_KERNEL;
    return UCS_OK;
}

/*
 * Open the compute node; EAGAIN (reset in progress, facts 7.1) is retried
 * with exponential back-off for up to @a timeout seconds. With
 * @a retry_busy EBUSY is too: the context of the device's previous user
 * lives on until importers release its dma-bufs (facts 4.1), e.g. when a
 * rank restarts while its peers still cache its buffers. UCS_OK with
 * @a found_p set: another thread made a context of @a info meanwhile.
 */
static ucs_status_t uct_gaudi_ctx_open_node(const uct_gaudi_dev_info_t *info,
                                            double timeout, int retry_busy,
                                            uct_gaudi_hl_t *hl,
                                            uct_gaudi_ctx_t **found_p)
{
    ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(timeout);
    unsigned delay_us   = UCT_GAUDI_OPEN_BACKOFF_MIN_US;
    ucs_status_t status;
    double left_us;

    for (;;) {
        status = uct_gaudi_hl_open(info->minor, 0, UCT_GAUDI_HL_OPEN_QUIET,
                                   hl);
        if ((status != UCS_ERR_NO_RESOURCE) &&
            (!retry_busy || (status != UCS_ERR_BUSY))) {
            return status;
        }

        left_us = ucs_time_to_usec(deadline) - ucs_time_to_usec(ucs_get_time());
        if (left_us <= 0) {
            return status;
        }

        ucs_debug("gaudi %s: device %s, retrying open in %u us", info->name,
                  (status == UCS_ERR_BUSY) ? "busy" : "in reset", delay_us);
        if (uct_gaudi_ctx_wait(info, ucs_min(delay_us, (unsigned)left_us + 1),
                               found_p)) {
            return UCS_OK;
        }
        delay_us = ucs_min(delay_us * 2, UCT_GAUDI_OPEN_BACKOFF_MAX_US);
    }
}

static void uct_gaudi_ctx_open_error(const uct_gaudi_dev_info_t *info,
                                     ucs_status_t status, int err,
                                     double timeout)
{
    char desc[96];

    uct_gaudi_dev_desc(info, desc, sizeof(desc));
    switch (status) {
    case UCS_ERR_BUSY:
        ucs_error("gaudi %s: device is busy after %.1f s "
                  "(UCX_GAUDI_OPEN_TIMEOUT): another process owns its "
                  "compute context, or importers still hold dma-bufs of its "
                  "previous user; set UCX_GAUDI_DEVICE or "
                  "UCX_GAUDI_DEVICE_FD", desc, timeout);
        break;
    case UCS_ERR_NO_RESOURCE:
        ucs_error("gaudi %s: device still in reset or being released after "
                  "%.1f s (UCX_GAUDI_OPEN_TIMEOUT)", desc, timeout);
        break;
    case UCS_ERR_REJECTED:
        ucs_error("gaudi %s: device is disabled or needs a reset", desc);
        break;
    default:
        ucs_error("gaudi %s: cannot open the compute node: %s", desc,
                  strerror(err));
        break;
    }
}

/* Context of one device: existing, else opened by us */
static ucs_status_t uct_gaudi_ctx_get_dev(const uct_gaudi_dev_info_t *info,
                                          uct_gaudi_ctx_t **ctx_p)
{
    double timeout = uct_gaudi_global_config()->open_timeout;
    uct_gaudi_ctx_t *found = NULL;
    uct_gaudi_ctx_choice_t choice;
    ucs_status_t status;
    uct_gaudi_hl_t hl;

    if (uct_gaudi_ctx_lookup(info, ctx_p)) {
        status = uct_gaudi_ctx_check_choice(*ctx_p);
        if (status != UCS_OK) {
            --(*ctx_p)->refcount;
        }
        return status;
    }

    uct_gaudi_ctx_choose(info->asic, &choice);
    if (choice.backend == UCT_GAUDI_BACKEND_SYNAPSE) {
        status = uct_gaudi_ctx_syn_open(info, &choice, timeout, 1, 1, ctx_p);
        if (status == UCS_OK) {
            return UCS_OK;
        }
        status = uct_gaudi_ctx_syn_fallback(&choice, info->asic, status);
        if (status != UCS_OK) {
            return status;
        }
    }

    /* the named device: wait for a previous user's context to go too */
    status = uct_gaudi_ctx_open_node(info, timeout, 1, &hl, &found);
    if (status != UCS_OK) {
        uct_gaudi_ctx_open_error(info, status, errno, timeout);
        return status;
    } else if (found != NULL) {
        return uct_gaudi_ctx_use_found(found, ctx_p);
    }

    status = uct_gaudi_ctx_create(info, &hl, "opened", ctx_p);
    if (status != UCS_OK) {
        uct_gaudi_hl_close(&hl);
        return status;
    }

    uct_gaudi_ctx_set_backend(*ctx_p, choice.why, NULL, 0, 0);
    return UCS_OK;
}

/* Context around an fd the application owns; its device must be
 * @a expected when the user also named a device */
static ucs_status_t uct_gaudi_ctx_attach(int fd, const char *source,
                                         const uct_gaudi_dev_info_t *expected,
                                         uct_gaudi_ctx_t **ctx_p)
{
    const uct_gaudi_dev_info_t *info;
    ucs_status_t status;
    uct_gaudi_hl_t hl;

    status = uct_gaudi_hl_attach_fd(fd, &hl);
    if (status != UCS_OK) {
        ucs_error("gaudi: %s fd %d is not a usable Gaudi compute node "
                  "(%s: %m)", source, fd, ucs_status_string(status));
        return status;
    }

    info = uct_gaudi_device_by_minor(hl.minor);
    if (info == NULL) {
        ucs_error("gaudi %s: %s fd %d is not one of the discovered devices",
                  hl.name, source, fd);
        return UCS_ERR_NO_DEVICE;
    }

    if ((expected != NULL) && (expected != info)) {
        ucs_error("gaudi: UCX_GAUDI_DEVICE=%s selects %s but the %s fd %d "
                  "belongs to %s", uct_gaudi_global_config()->device,
                  expected->name, source, fd, info->name);
        return UCS_ERR_INVALID_PARAM;
    }

    if (uct_gaudi_ctx_lookup(info, ctx_p)) {
        return UCS_OK;
    }

    return uct_gaudi_ctx_create(info, &hl, source, ctx_p);
}

/* SynapseAI's fd, if libSynapse is loaded and holds a device */
static ucs_status_t uct_gaudi_ctx_synapse_fd(int *fd_p)
{
    uct_gaudi_syn_device_get_info_fn_t get_info;
    ucs_status_t status;

    /* no build or load dependency: only if the application loaded it */
    get_info = (uct_gaudi_syn_device_get_info_fn_t)dlsym(RTLD_DEFAULT,
                                                         "synDeviceGetInfo");
    if (get_info == NULL) {
        return UCS_ERR_NO_DEVICE;
    }

    status = uct_gaudi_syn_info_fd(get_info, uct_gaudi_device_minor_known,
                                   UCT_GAUDI_SYN_DEVICE_ANY, fd_p, NULL);
    if (status == UCS_ERR_NO_ELEM) {
        ucs_debug("gaudi: synDeviceGetInfo failed (no device acquired?)");
        return UCS_ERR_NO_DEVICE;
    } else if (status != UCS_OK) {
        ucs_error("gaudi: SynapseAI holds a device but its synDeviceInfo has "
                  "no (or more than one) open Gaudi compute fd at a known "
                  "offset: unknown layout, not used; set "
                  "UCX_GAUDI_DEVICE_FD");
    }
    return status;
}

/* Parse UCX_GAUDI_DEVICE: auto | <index> | module:<id> */
static ucs_status_t uct_gaudi_parse_device(const char *value,
                                           uct_gaudi_select_mode_t *mode_p,
                                           long *arg_p)
{
    const char *num = value;
    char *end;

    if (!strcasecmp(value, "auto")) {
        *mode_p = UCT_GAUDI_SELECT_AUTO;
        return UCS_OK;
    }

    *mode_p = UCT_GAUDI_SELECT_INDEX;
    if (!strncasecmp(value, "module:", 7)) {
        *mode_p = UCT_GAUDI_SELECT_MODULE;
        num     = value + 7;
    }

    errno  = 0;
    *arg_p = strtol(num, &end, 10);
    if ((*num < '0') || (*num > '9') || (*end != '\0') || (errno != 0) ||
        (*arg_p > UINT32_MAX)) {
        ucs_error("gaudi: invalid UCX_GAUDI_DEVICE '%s' (expected auto, a "
                  "device index or module:<id>)", value);
        return UCS_ERR_INVALID_PARAM;
    }

    return UCS_OK;
}

/* The launcher's local rank, or -1 */
static int uct_gaudi_local_rank(const char **var_p)
{
    const char *value;
    char *end;
    long rank;
    int i;

    for (i = 0; i < ucs_static_array_size(uct_gaudi_local_rank_vars); ++i) {
        value = getenv(uct_gaudi_local_rank_vars[i]);
        if ((value == NULL) || (*value == '\0')) {
            continue;
        }

        rank = strtol(value, &end, 10);
        if ((*end != '\0') || (rank < 0) || (rank > INT32_MAX)) {
            ucs_warn("gaudi: ignoring %s='%s': not a local rank",
                     uct_gaudi_local_rank_vars[i], value);
            continue;
        }

        *var_p = uct_gaudi_local_rank_vars[i];
        return rank;
    }

    return -1;
}

/*
 * An index counts the devices discovery kept: after a node it skipped, the
 * index names the next physical device. The user meant the node at that
 * position, so refuse rather than land on another device.
 */
static ucs_status_t
uct_gaudi_check_index_moved(const char *value,
                            const uct_gaudi_dev_info_t *info)
{
    const uct_gaudi_devices_t *devs = uct_gaudi_devices();
    int minor;

    if (devs->mapped[info->minor]) {
        return UCS_OK; /* GAUDI_MAPPING_TABLE names it: no shift */
    }

    for (minor = 0; minor < info->minor; ++minor) {
        if (devs->skipped[minor]) {
            ucs_error("gaudi: UCX_GAUDI_DEVICE=%s would select %s (%s), but "
                      "node %d before it was skipped by discovery, so the "
                      "indices moved; select it by module:%u or fix the "
                      "skipped device", value, info->name, info->node_name,
                      minor, info->module_id);
            return UCS_ERR_NO_DEVICE;
        }
    }

    return UCS_OK;
}

/* The explicitly configured device, NULL for auto */
static ucs_status_t
uct_gaudi_configured_device(const uct_gaudi_dev_info_t **info_p)
{
    const char *value = uct_gaudi_global_config()->device;
    uct_gaudi_select_mode_t mode;
    ucs_status_t status;
    long arg = 0;

    status = uct_gaudi_parse_device(value, &mode, &arg);
    if (status != UCS_OK) {
        return status;
    }

    switch (mode) {
    case UCT_GAUDI_SELECT_INDEX:
        *info_p = uct_gaudi_device_by_index(arg);
        break;
    case UCT_GAUDI_SELECT_MODULE:
        *info_p = uct_gaudi_device_by_module_id(arg);
        break;
    default:
        *info_p = NULL;
        return UCS_OK;
    }

    if (*info_p == NULL) {
        ucs_error("gaudi: UCX_GAUDI_DEVICE=%s: no such device among the %u "
                  "discovered", value, uct_gaudi_devices()->count);
        return UCS_ERR_NO_DEVICE;
    }

    return (mode == UCT_GAUDI_SELECT_INDEX) ?
           uct_gaudi_check_index_moved(value, *info_p) : UCS_OK;
}

/* Device open state hint from the control node (facts 2.2 OPEN_STATS) */
static int uct_gaudi_device_looks_busy(const uct_gaudi_dev_info_t *info)
{
    struct hl_open_stats_info stats;
    uct_gaudi_hl_t hl;
    int busy = 0;

    if (uct_gaudi_hl_open(info->minor, 1, UCT_GAUDI_HL_OPEN_QUIET, &hl) !=
        UCS_OK) {
        return 0;
    }

    if (uct_gaudi_hl_open_stats(&hl, &stats) == UCS_OK) {
        busy = stats.is_compute_ctx_active || stats.compute_ctx_in_release;
    }

    uct_gaudi_hl_close(&hl);
    return busy;
}

/*
 * Open @a info for the chosen backend, waiting up to @a timeout while it is
 * in reset; UCS_ERR_BUSY when another process holds it. SynapseAI acquires
 * the device by its bus id, so both backends go through the same passes of
 * uct_gaudi_ctx_get_free (SynapseAI's own "any device" skips busy devices
 * but waits up to 60 s inside the call for one in reset, osal_linux.cpp:
 * 241-300, beyond UCX_GAUDI_OPEN_TIMEOUT).
 */
static ucs_status_t uct_gaudi_ctx_try_dev(const uct_gaudi_dev_info_t *info,
                                          uct_gaudi_ctx_choice_t *choice,
                                          double timeout,
                                          uct_gaudi_ctx_t **ctx_p)
{
    uct_gaudi_ctx_t *found = NULL;
    ucs_status_t status;
    uct_gaudi_hl_t hl;

    if (choice->backend == UCT_GAUDI_BACKEND_SYNAPSE) {
        status = uct_gaudi_ctx_syn_open(info, choice, timeout, 0, 1, ctx_p);
        if ((status == UCS_OK) || (status == UCS_ERR_BUSY) ||
            (status == UCS_ERR_NO_RESOURCE)) {
            return status;
        }
        status = uct_gaudi_ctx_syn_fallback(choice, info->asic, status);
        if (status != UCS_OK) {
            return status;
        }
    }

    status = uct_gaudi_ctx_open_node(info, timeout, 0, &hl, &found);
    if (status != UCS_OK) {
        return status;
    } else if (found != NULL) {
        return uct_gaudi_ctx_use_found(found, ctx_p);
    }

    status = uct_gaudi_ctx_create(info, &hl, "opened", ctx_p);
    if (status != UCS_OK) {
        uct_gaudi_hl_close(&hl);
        return status;
    }

    uct_gaudi_ctx_set_backend(*ctx_p, choice->why, NULL, 0, 0);
    return UCS_OK;
}

/*
 * The first device that opens (SynapseAI: that it acquires). OPEN_STATS
 * orders the candidates (idle ones first) but only the open is the truth;
 * devices in reset are retried with back-off last.
 */
static ucs_status_t uct_gaudi_ctx_get_free(uct_gaudi_ctx_t **ctx_p)
{
    const uct_gaudi_devices_t *devs = uct_gaudi_devices();
    double timeout = uct_gaudi_global_config()->open_timeout;
    const uct_gaudi_dev_info_t *info;
    unsigned i, pass, num_busy = 0;
    uct_gaudi_ctx_choice_t choice;
    ucs_status_t status;
    int *state;   /* 0: untried, 1: hint busy, 2: EAGAIN, 3: done */

    state = ucs_calloc(ucs_max(devs->count, 1), sizeof(*state),
                       "gaudi state");
    if (state == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    for (i = 0; i < devs->count; ++i) {
        if (uct_gaudi_ctx_lookup(&devs->dev[i], ctx_p)) {
            /* this process already owns one */
            status = uct_gaudi_ctx_check_choice(*ctx_p);
            goto out;
        }
        state[i] = uct_gaudi_device_looks_busy(&devs->dev[i]);
    }

    /* a node has one kind of device */
    uct_gaudi_ctx_choose(devs->dev[0].asic, &choice);

    /* pass 0: idle by the hint; 1: busy by the hint; 2: in reset */
    for (pass = 0; pass < 3; ++pass) {
        for (i = 0; i < devs->count; ++i) {
            if (state[i] != ((pass == 2) ? 2 : pass)) {
                continue;
            }

            info   = &devs->dev[i];
            status = uct_gaudi_ctx_try_dev(info, &choice,
                                           (pass == 2) ? timeout : 0, ctx_p);
            if ((status == UCS_OK) || (status == UCS_ERR_UNSUPPORTED)) {
                goto out;   /* opened, or the backend cannot be used */
            }

            ucs_debug("gaudi %s: not free: %s", info->name,
                      ucs_status_string(status));
            num_busy += (status == UCS_ERR_BUSY);
            state[i]  = (status == UCS_ERR_NO_RESOURCE) ? 2 : 3;
        }
    }

    ucs_error("gaudi: no free Gaudi device: %u of %u busy (owned by other "
              "processes), the others in reset or unusable; set "
              "UCX_GAUDI_DEVICE or UCX_GAUDI_DEVICE_FD", num_busy,
              devs->count);
    status = UCS_ERR_BUSY;
out:
    ucs_free(state);
    return status;
}

/*
 * Selection for get(-1): fd, SynapseAI, configured device, rank, free.
 * Without @a may_open only a device the application holds is used (its
 * fd, or SynapseAI's); UCS_ERR_NO_DEVICE, silently, when there is none.
 */
static ucs_status_t uct_gaudi_ctx_get_selected(int may_open,
                                               uct_gaudi_ctx_t **ctx_p)
{
    const uct_gaudi_global_config_t *config = uct_gaudi_global_config();
    const uct_gaudi_devices_t *devs         = uct_gaudi_devices();
    const uct_gaudi_dev_info_t *info;
    uct_gaudi_ctx_choice_t choice;
    const char *rank_var;
    ucs_status_t status;
    int fd, rank;

    status = uct_gaudi_configured_device(&info);
    if (status != UCS_OK) {
        return status;
    }

    /* SynapseAI loaded (the application's device, or the first free one)
     * or wanted: it owns the device, selection is its own */
    if ((config->device_fd < 0) && (devs->count > 0)) {
        uct_gaudi_ctx_choose((info != NULL) ? info->asic : devs->dev[0].asic,
                             &choice);
        if ((choice.backend == UCT_GAUDI_BACKEND_SYNAPSE) &&
            (config->synapse != UCS_NO) &&
            uct_gaudi_ctx_syn_loaded(config->synapse_lib)) {
            status = uct_gaudi_ctx_syn_open(info, &choice,
                                            config->open_timeout,
                                            info != NULL, may_open, ctx_p);
            if ((status == UCS_OK) ||
                ((status == UCS_ERR_NO_DEVICE) && !may_open) ||
                (uct_gaudi_ctx_syn_fallback(&choice, devs->dev[0].asic,
                                            status) != UCS_OK)) {
                return status;
            }
        }
    }

    fd = config->device_fd;
    if ((fd < 0) && (config->synapse != UCS_NO)) {
        status = uct_gaudi_ctx_synapse_fd(&fd);
        if ((status != UCS_OK) && (config->synapse == UCS_YES) &&
            may_open) {
            ucs_error("gaudi: UCX_GAUDI_SYNAPSE=yes but SynapseAI is not "
                      "loaded or holds no device");
            return UCS_ERR_NO_DEVICE;
        }
    }

    if (fd >= 0) {
        /* the application's fd: kernel CS beside its work */
        if (config->copy_backend == UCT_GAUDI_BACKEND_SYNAPSE) {
            ucs_error("gaudi: UCX_GAUDI_COPY_BACKEND=synapse refused: the "
                      "device is the %s fd %d, which SynapseAI does not "
                      "hold through %s", (config->device_fd >= 0) ?
                      "UCX_GAUDI_DEVICE_FD" : "application's", fd,
                      config->synapse_lib);
            return UCS_ERR_UNSUPPORTED;
        }
        return uct_gaudi_ctx_attach(fd, (config->device_fd >= 0) ?
                                    "UCX_GAUDI_DEVICE_FD" : "SynapseAI",
                                    info, ctx_p);
    }

    if (!may_open || (devs->count == 0)) {
        ucs_debug("gaudi: no Gaudi device %s", (devs->count == 0) ?
                  "found" : "held by the application");
        return UCS_ERR_NO_DEVICE;
    }

    if (info != NULL) {
        return uct_gaudi_ctx_get_dev(info, ctx_p);
    }

    rank = uct_gaudi_local_rank(&rank_var);
    if (rank >= 0) {
        info = &devs->dev[rank % devs->count];
        ucs_debug("gaudi: %s=%d selects %s of %u device(s)", rank_var, rank,
                  info->name, devs->count);
        return uct_gaudi_ctx_get_dev(info, ctx_p);
    }

    return uct_gaudi_ctx_get_free(ctx_p);
}

/* Claim the table; waiters block on the condition, not on a sleeper */
static void uct_gaudi_ctx_enter(void)
{
    pthread_mutex_lock(&uct_gaudi_ctx_table->lock);
    while (uct_gaudi_ctx_table->busy) {
        pthread_cond_wait(&uct_gaudi_ctx_table->cond,
                          &uct_gaudi_ctx_table->lock);
    }
    uct_gaudi_ctx_table->busy = 1;
    pthread_mutex_unlock(&uct_gaudi_ctx_table->lock);
    uct_gaudi_ctx_check_fork();
}

static void uct_gaudi_ctx_leave(void)
{
    pthread_mutex_lock(&uct_gaudi_ctx_table->lock);
    uct_gaudi_ctx_table->busy = 0;
    /* every waiter: claimers and puts wait on the same condition */
    pthread_cond_broadcast(&uct_gaudi_ctx_table->cond);
    pthread_mutex_unlock(&uct_gaudi_ctx_table->lock);
}

static ucs_status_t uct_gaudi_ctx_get_common(int index, int may_open,
                                             uct_gaudi_ctx_t **ctx_p)
{
    const uct_gaudi_dev_info_t *info;
    ucs_status_t status;

    uct_gaudi_ctx_enter();
    if (index >= 0) {
        info = uct_gaudi_device_by_index(index);
        if (info == NULL) {
            ucs_error("gaudi: no device with index %d", index);
            status = UCS_ERR_NO_DEVICE;
        } else {
            status = uct_gaudi_ctx_get_dev(info, ctx_p);
        }
    } else if (uct_gaudi_ctx_table->deflt != NULL) {
        ++uct_gaudi_ctx_table->deflt->refcount;
        *ctx_p = uct_gaudi_ctx_table->deflt;
        status = UCS_OK;
    } else {
        status = uct_gaudi_ctx_get_selected(may_open, ctx_p);
        if ((status == UCS_OK) && (uct_gaudi_ctx_table->deflt != NULL) &&
            (uct_gaudi_ctx_table->deflt != *ctx_p)) {
            /* another thread selected while this one's back-off had
             * released the table: the process uses the first selection */
            uct_gaudi_ctx_unref_claimed(*ctx_p);
            ++uct_gaudi_ctx_table->deflt->refcount;
            *ctx_p = uct_gaudi_ctx_table->deflt;
        } else if (status == UCS_OK) {
            uct_gaudi_ctx_table->deflt = *ctx_p;
        }
    }
    uct_gaudi_ctx_leave();
    return status;
}

ucs_status_t uct_gaudi_ctx_get(int index, uct_gaudi_ctx_t **ctx_p)
{
    return uct_gaudi_ctx_get_common(index, 1, ctx_p);
}

int uct_gaudi_ctx_app_synapse(void)
{
    const char *libname = uct_gaudi_global_config()->synapse_lib;
    int own;

    pthread_mutex_lock(&uct_gaudi_process.backend.lock);
    own = (uct_gaudi_process.backend.syn.handle != NULL) &&
          !uct_gaudi_process.backend.syn.preloaded;
    pthread_mutex_unlock(&uct_gaudi_process.backend.lock);
    return !own && uct_gaudi_ctx_syn_loaded(libname);
}

ucs_status_t uct_gaudi_ctx_borrow(uct_gaudi_ctx_t **ctx_p)
{
    return uct_gaudi_ctx_get_common(-1, 0, ctx_p);
}

/* The device get(-1) would take, without taking it: the one in use, the
 * application's, the configured one, the rank's, else the first that
 * looks idle (OPEN_STATS of the control node) */
ucs_status_t uct_gaudi_ctx_expected(const uct_gaudi_dev_info_t **info_p)
{
    const uct_gaudi_global_config_t *config = uct_gaudi_global_config();
    const uct_gaudi_devices_t *devs         = uct_gaudi_devices();
    const uct_gaudi_dev_info_t *info        = NULL;
    const char *rank_var;
    ucs_status_t status;
    unsigned i;
    int fd, rank, minor;

    if (devs->count == 0) {
        return UCS_ERR_NO_DEVICE;
    }

    uct_gaudi_ctx_enter();
    if (uct_gaudi_ctx_table->deflt != NULL) {
        info = uct_gaudi_ctx_table->deflt->info;
    }
    uct_gaudi_ctx_leave();
    if (info != NULL) {
        goto out;
    }

    status = uct_gaudi_configured_device(&info);
    if (status != UCS_OK) {
        return status;
    } else if (info != NULL) {
        goto out;
    }

    fd = config->device_fd;
    if ((fd < 0) && (config->synapse != UCS_NO) &&
        (uct_gaudi_ctx_synapse_fd(&fd) != UCS_OK)) {
        fd = -1;
    }
    minor = (fd >= 0) ? uct_gaudi_hl_fd_compute_minor(fd) : -1;
    if (minor >= 0) {
        info = uct_gaudi_device_by_minor(minor);
        if (info != NULL) {
            goto out;
        }
    }

    rank = uct_gaudi_local_rank(&rank_var);
    if (rank >= 0) {
        info = &devs->dev[rank % devs->count];
        goto out;
    }

    info = &devs->dev[0];
    for (i = 0; i < devs->count; ++i) {
        if (!uct_gaudi_device_looks_busy(&devs->dev[i])) {
            info = &devs->dev[i];
            break;
        }
    }

out:
    *info_p = info;
    return UCS_OK;
}

uct_gaudi_backend_t uct_gaudi_ctx_expected_backend(uct_gaudi_asic_t asic)
{
    const char *libname = uct_gaudi_global_config()->synapse_lib;
    uct_gaudi_ctx_choice_t choice;
    ucs_status_t status;

    pthread_mutex_lock(&uct_gaudi_process.backend.lock);
    if (uct_gaudi_process.backend.value < 0) {
        uct_gaudi_ctx_choose(asic, &choice);
        if ((choice.backend == UCT_GAUDI_BACKEND_SYNAPSE) &&
            !uct_gaudi_ctx_syn_loaded(libname)) {
            /* SynapseAI is to copy: the library must load (auto falls
             * back to the kernel backend, as at the take); it stays
             * loaded, as the take will use it */
            status = uct_gaudi_syn_load(libname, uct_gaudi_device_minor_known,
                                        &uct_gaudi_process.backend.syn);
            if (uct_gaudi_ctx_syn_fallback(&choice, asic, status) != UCS_OK) {
                choice.backend = UCT_GAUDI_BACKEND_SYNAPSE;
            }
        }
        uct_gaudi_process.backend.value = choice.backend;
        ucs_diag("gaudi: copy backend %s (%s), when the device is taken",
                 uct_gaudi_backend_names[choice.backend], choice.why);
    }
    pthread_mutex_unlock(&uct_gaudi_process.backend.lock);
    return (uct_gaudi_backend_t)uct_gaudi_process.backend.value;
}

/* Drop a reference, the table claimed or locked; the last one takes the
 * context out of the table: 1, to be closed by the caller */
static int uct_gaudi_ctx_unref(uct_gaudi_ctx_t *ctx)
{
    ucs_assert(ctx->refcount > 0);
    if (--ctx->refcount > 0) {
        return 0;
    }

    if (uct_gaudi_ctx_table->by_minor[ctx->info->minor] == ctx) {
        uct_gaudi_ctx_table->by_minor[ctx->info->minor] = NULL;
    }
    if (uct_gaudi_ctx_table->deflt == ctx) {
        uct_gaudi_ctx_table->deflt = NULL;
    }
    return 1;
}

void uct_gaudi_ctx_put(uct_gaudi_ctx_t *ctx)
{
    int last;

    pthread_mutex_lock(&uct_gaudi_ctx_table->lock);
    while (uct_gaudi_ctx_table->busy) {
        pthread_cond_wait(&uct_gaudi_ctx_table->cond,
                          &uct_gaudi_ctx_table->lock);
    }
    last = uct_gaudi_ctx_unref(ctx);
    pthread_mutex_unlock(&uct_gaudi_ctx_table->lock);

    if (last) {
        uct_gaudi_ctx_close(ctx);
    }
}

static void uct_gaudi_ctx_close(uct_gaudi_ctx_t *ctx)
{
    ucs_debug("gaudi %s: releasing device context (%s)", ctx->info->name,
              ctx->source);
    uct_gaudi_hl_close(&ctx->hl);   /* only closes what we opened */
    if (ctx->syn != NULL) {
        uct_gaudi_ctx_syn_close(ctx->syn, ctx->syn_device,
                                ctx->syn_acquired);
    }
    pthread_mutex_destroy(&ctx->lock);
    ucs_free(ctx);
}
