/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Opening and closing device contexts: the compute node opened for the
 * kernel backend (waiting out a reset with back-off), the device SynapseAI
 * holds or acquires for the SynapseAI backend, or the application's fd.
 * Nothing here holds a process-wide lock: the caller owns the device's
 * slot in the table while it opens (gaudi_ctx.c), and every sleep and
 * every call that can wait runs with no lock held.
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
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>


/* EAGAIN back-off bounds */
#define UCT_GAUDI_OPEN_BACKOFF_MIN_US 1000
#define UCT_GAUDI_OPEN_BACKOFF_MAX_US 250000


/* "GAUDI_0 (accel0, 0000:19:00.0)" */
static const char *uct_gaudi_dev_desc(const uct_gaudi_dev_info_t *info,
                                      char *buf, size_t max)
{
    snprintf(buf, max, "%s (%s, %s)", info->name, info->node_name,
             info->has_bus_id ? info->pci_addr : "bus id unknown");
    return buf;
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

ucs_status_t uct_gaudi_ctx_create(const uct_gaudi_dev_info_t *info,
                                  const uct_gaudi_hl_t *hl,
                                  const char *source,
                                  uct_gaudi_ctx_t **ctx_p)
{
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
    pthread_mutex_init(&ctx->events.lock, NULL);
    uct_gaudi_driver_identify(&ctx->hl, &ctx->driver);
    ctx->backend = UCT_GAUDI_BACKEND_KERNEL;
    ucs_strncpy_zero(ctx->backend_why, source, sizeof(ctx->backend_why));

    ucs_debug("gaudi %s: device context on %s fd %d (%s)", info->name,
              hl->name, hl->fd, source);
    *ctx_p = ctx;
    return UCS_OK;
}

/* Sleep @a usec of a back-off: with no lock held */
static void uct_gaudi_ctx_backoff(unsigned usec)
{
    uct_gaudi_process_may_sleep();
    usleep(usec);
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
 * @a retry_busy while someone else still holds it; with no lock held (the
 * caller owns the device's slot, or selects for get(-1)).
 */
static ucs_status_t uct_gaudi_ctx_syn_acquire(const uct_gaudi_syn_t *syn,
                                              const uct_gaudi_dev_info_t *info,
                                              double timeout, int retry_busy,
                                              uct_gaudi_syn_device_t *device_p)
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
            /* may wait out a reset inside the call (up to 60 s) */
            uct_gaudi_process_may_sleep();
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

        uct_gaudi_ctx_backoff(delay_us);
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
 * The library is loaded here, with no lock held (its constructors run).
 */
ucs_status_t uct_gaudi_ctx_syn_open(const uct_gaudi_dev_info_t *info,
                                    const uct_gaudi_ctx_choice_t *choice,
                                    double timeout, int retry_busy,
                                    int may_acquire, uct_gaudi_ctx_t **ctx_p)
{
    const char *libname = uct_gaudi_global_config()->synapse_lib;
    uct_gaudi_syn_device_t device = UCT_GAUDI_SYN_DEVICE_ANY;
    const uct_gaudi_dev_info_t *held;
    int fd, type, acquired = 0;
    uct_gaudi_syn_t *syn;
    ucs_status_t status;
    uct_gaudi_hl_t hl;

    syn = ucs_calloc(1, sizeof(*syn), "gaudi syn");
    if (syn == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    uct_gaudi_process_may_sleep();
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
                                           &device);
        if (status != UCS_OK) {
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
ucs_status_t uct_gaudi_ctx_syn_fallback(uct_gaudi_ctx_choice_t *choice,
                                        uct_gaudi_asic_t asic,
                                        ucs_status_t status)
{
    const char *libname = uct_gaudi_global_config()->synapse_lib;
    const char *reason;

    if (status != UCS_ERR_UNSUPPORTED) {
        return status;   /* the library works, the device does not */
    } else if (choice->configured) {
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
 * rank restarts while its peers still cache its buffers. The caller owns
 * the device's slot: no other thread of the process opens it meanwhile.
 */
static ucs_status_t uct_gaudi_ctx_open_node(const uct_gaudi_dev_info_t *info,
                                            double timeout, int retry_busy,
                                            uct_gaudi_hl_t *hl)
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
        uct_gaudi_ctx_backoff(ucs_min(delay_us, (unsigned)left_us + 1));
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

/*
 * Open @a info for the chosen backend. A device the user named waits up to
 * @a timeout while it is in reset or busy and logs its failure; a
 * candidate of the free-device search (uct_gaudi_ctx_get_free) waits only
 * out a reset and returns UCS_ERR_BUSY quietly. SynapseAI acquires the
 * device by its bus id, so both backends go through the same passes
 * (SynapseAI's own "any device" skips busy devices but waits up to 60 s
 * inside the call for one in reset, osal_linux.cpp:241-300, beyond
 * UCX_GAUDI_OPEN_TIMEOUT).
 */
ucs_status_t uct_gaudi_ctx_open(const uct_gaudi_dev_info_t *info,
                                uct_gaudi_ctx_choice_t *choice,
                                double timeout, int named,
                                uct_gaudi_ctx_t **ctx_p)
{
    ucs_status_t status;
    uct_gaudi_hl_t hl;

    if (choice->backend == UCT_GAUDI_BACKEND_SYNAPSE) {
        status = uct_gaudi_ctx_syn_open(info, choice, timeout, named, 1,
                                        ctx_p);
        if ((status == UCS_OK) ||
            (!named && ((status == UCS_ERR_BUSY) ||
                        (status == UCS_ERR_NO_RESOURCE)))) {
            return status;
        }
        status = uct_gaudi_ctx_syn_fallback(choice, info->asic, status);
        if (status != UCS_OK) {
            return status;
        }
    }

    /* a named device: wait for a previous user's context to go too */
    status = uct_gaudi_ctx_open_node(info, timeout, named, &hl);
    if (status != UCS_OK) {
        if (named) {
            uct_gaudi_ctx_open_error(info, status, errno, timeout);
        }
        return status;
    }

    status = uct_gaudi_ctx_create(info, &hl, "opened", ctx_p);
    if (status != UCS_OK) {
        uct_gaudi_hl_close(&hl);
        return status;
    }

    uct_gaudi_ctx_set_backend(*ctx_p, choice->why, NULL, 0, 0);
    return UCS_OK;
}

/* Context around an fd the application owns, not in the table; its device
 * must be @a expected when the user also named a device */
ucs_status_t uct_gaudi_ctx_attach(int fd, const char *source,
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

    return uct_gaudi_ctx_create(info, &hl, source, ctx_p);
}

/* SynapseAI's fd, if libSynapse is loaded and holds a device */
ucs_status_t uct_gaudi_ctx_synapse_fd(int *fd_p)
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
void uct_gaudi_ctx_close(uct_gaudi_ctx_t *ctx)
{
    ucs_debug("gaudi %s: releasing device context (%s)", ctx->info->name,
              ctx->source);
    uct_gaudi_hl_close(&ctx->hl);   /* only closes what we opened */
    if (ctx->syn != NULL) {
        uct_gaudi_ctx_syn_close(ctx->syn, ctx->syn_device,
                                ctx->syn_acquired);
    }
    pthread_mutex_destroy(&ctx->events.lock);
    ucs_free(ctx);
}

int uct_gaudi_ctx_present(const uct_gaudi_ctx_t *ctx)
{
    uct_gaudi_syn_device_t device;
    int fd;

    if (ctx->hl.owns_fd || ctx->syn_acquired) {
        return 1;   /* ours until we close or release it */
    }
    /* no ioctl on an fd that may be someone else's now */
    if ((fcntl(ctx->hl.fd, F_GETFD) < 0) ||
        (uct_gaudi_hl_fd_compute_minor(ctx->hl.fd) != ctx->info->minor)) {
        return 0;
    }
    return (ctx->syn == NULL) ||
           ((uct_gaudi_syn_held_fd(ctx->syn, &fd, &device) == UCS_OK) &&
            (fd == ctx->hl.fd));
}
