/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Selection: which device get(-1) takes (the application's fd or
 * SynapseAI's device, UCX_GAUDI_DEVICE, the launcher's local rank, else
 * the first free device) and which copy backend a device gets; the device
 * and backend expected before any is taken. Policy only: the table is
 * gaudi_ctx.c, opening gaudi_open.c, and no lock here is held across an
 * open, a scan or a library load (docs/base.md "Selection").
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

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>


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


typedef enum {
    UCT_GAUDI_SELECT_AUTO,
    UCT_GAUDI_SELECT_INDEX,
    UCT_GAUDI_SELECT_MODULE
} uct_gaudi_select_mode_t;


/* Whether the process has loaded SynapseAI @a libname */
int uct_gaudi_ctx_syn_loaded(const char *libname)
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
void uct_gaudi_ctx_choose(uct_gaudi_asic_t asic,
                          uct_gaudi_ctx_choice_t *choice)
{
    const uct_gaudi_global_config_t *config = uct_gaudi_global_config();
    const char *reason;

    choice->configured = (config->copy_backend != UCT_GAUDI_BACKEND_AUTO);
    if (choice->configured) {
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
ucs_status_t uct_gaudi_ctx_check_choice(const uct_gaudi_ctx_t *ctx)
{
    uct_gaudi_ctx_choice_t choice;

    uct_gaudi_ctx_choose(ctx->info->asic, &choice);
    if (choice.configured && (choice.backend != ctx->backend)) {
        ucs_error("gaudi %s: copy backend %s (%s) refused: the device "
                  "already copies with %s (%s), one backend per device and "
                  "process", ctx->info->name,
                  uct_gaudi_backend_names[choice.backend], choice.why,
                  uct_gaudi_backend_names[ctx->backend], ctx->backend_why);
        return UCS_ERR_ALREADY_EXISTS;
    }

    return UCS_OK;
}

ucs_status_t uct_gaudi_ctx_slot_enter(const uct_gaudi_dev_info_t *info,
                                      ucs_time_t deadline,
                                      uct_gaudi_ctx_t **ctx_p)
{
    ucs_status_t status = uct_gaudi_ctx_slot_take(info, deadline, ctx_p);

    if (status == UCS_OK) {
        status = uct_gaudi_ctx_check_choice(*ctx_p);
        if (status != UCS_OK) {
            uct_gaudi_ctx_put(*ctx_p);
        }
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
 * Put @a mine, a context made before its device was known (SynapseAI's
 * "any device", the application's fd), in the table; a context of the
 * same device there already is used instead (it is the same fd or the
 * same SynapseAI device), unless it copies with the kernel backend while
 * SynapseAI now holds the device.
 */
static ucs_status_t uct_gaudi_ctx_insert(uct_gaudi_ctx_t *mine,
                                         ucs_time_t deadline,
                                         uct_gaudi_ctx_t **ctx_p)
{
    ucs_status_t status;

    status = uct_gaudi_ctx_slot_take(mine->info, deadline, ctx_p);
    if (status == UCS_INPROGRESS) {
        uct_gaudi_ctx_slot_publish(mine->info, mine);
        *ctx_p = mine;
        return UCS_OK;
    }

    if ((status == UCS_OK) && (mine->backend == UCT_GAUDI_BACKEND_SYNAPSE) &&
        ((*ctx_p)->backend != UCT_GAUDI_BACKEND_SYNAPSE)) {
        ucs_error("gaudi %s: SynapseAI holds a device this process already "
                  "uses with the kernel backend", mine->info->name);
        uct_gaudi_ctx_put(*ctx_p);
        status = UCS_ERR_ALREADY_EXISTS;
    }
    uct_gaudi_ctx_close(mine);
    return status;
}

/* Take a device through SynapseAI: @a info (with its slot), or with NULL
 * the one SynapseAI holds or picks */
static ucs_status_t uct_gaudi_ctx_syn_take(const uct_gaudi_dev_info_t *info,
                                           const uct_gaudi_ctx_choice_t *choice,
                                           int may_open, ucs_time_t deadline,
                                           uct_gaudi_ctx_t **ctx_p)
{
    double timeout = uct_gaudi_global_config()->open_timeout;
    uct_gaudi_ctx_t *ctx = NULL;
    ucs_status_t status;

    if (info == NULL) {
        status = uct_gaudi_ctx_syn_open(NULL, choice, timeout, 0, may_open,
                                        &ctx);
        return (status == UCS_OK) ?
               uct_gaudi_ctx_insert(ctx, deadline, ctx_p) : status;
    }

    status = uct_gaudi_ctx_slot_enter(info, deadline, ctx_p);
    if (status != UCS_INPROGRESS) {
        return status;
    }

    status = uct_gaudi_ctx_syn_open(info, choice, timeout, 1, may_open, &ctx);
    uct_gaudi_ctx_slot_publish(info, (status == UCS_OK) ? ctx : NULL);
    *ctx_p = ctx;
    return status;
}

/* Try one candidate of the free-device search, waiting out a reset up to
 * @a timeout; a device another thread takes is waited for */
static ucs_status_t uct_gaudi_ctx_try_dev(const uct_gaudi_dev_info_t *info,
                                          uct_gaudi_ctx_choice_t *choice,
                                          double timeout, ucs_time_t deadline,
                                          uct_gaudi_ctx_t **ctx_p)
{
    uct_gaudi_ctx_t *ctx = NULL;
    ucs_status_t status;

    status = uct_gaudi_ctx_slot_enter(info, deadline, ctx_p);
    if (status != UCS_INPROGRESS) {
        return status;
    }

    status = uct_gaudi_ctx_open(info, choice, timeout, 0, &ctx);
    uct_gaudi_ctx_slot_publish(info, (status == UCS_OK) ? ctx : NULL);
    *ctx_p = ctx;
    return status;
}

/*
 * The first device that opens (SynapseAI: that it acquires). OPEN_STATS
 * orders the candidates (idle ones first) but only the open is the truth;
 * devices in reset are retried with back-off last. A device this process
 * took already (e.g. by index) is the process's.
 */
static ucs_status_t uct_gaudi_ctx_get_free(ucs_time_t deadline,
                                           uct_gaudi_ctx_t **ctx_p)
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
                                           (pass == 2) ? timeout : 0,
                                           deadline, ctx_p);
            if ((status == UCS_OK) || (status == UCS_ERR_UNSUPPORTED) ||
                (status == UCS_ERR_ALREADY_EXISTS)) {
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
ucs_status_t uct_gaudi_ctx_select(int may_open, ucs_time_t deadline,
                                  uct_gaudi_ctx_t **ctx_p)
{
    const uct_gaudi_global_config_t *config = uct_gaudi_global_config();
    const uct_gaudi_devices_t *devs         = uct_gaudi_devices();
    const uct_gaudi_dev_info_t *info;
    uct_gaudi_ctx_choice_t choice;
    uct_gaudi_ctx_t *ctx;
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
            status = uct_gaudi_ctx_syn_take(info, &choice, may_open,
                                            deadline, ctx_p);
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
        status = uct_gaudi_ctx_attach(fd, (config->device_fd >= 0) ?
                                      "UCX_GAUDI_DEVICE_FD" : "SynapseAI",
                                      info, &ctx);
        return (status == UCS_OK) ?
               uct_gaudi_ctx_insert(ctx, deadline, ctx_p) : status;
    }

    if (!may_open || (devs->count == 0)) {
        ucs_debug("gaudi: no Gaudi device %s", (devs->count == 0) ?
                  "found" : "held by the application");
        return UCS_ERR_NO_DEVICE;
    }

    if (info != NULL) {
        return uct_gaudi_ctx_take(info, deadline, ctx_p);
    }

    rank = uct_gaudi_local_rank(&rank_var);
    if (rank >= 0) {
        info = &devs->dev[rank % devs->count];
        ucs_debug("gaudi: %s=%d selects %s of %u device(s)", rank_var, rank,
                  info->name, devs->count);
        return uct_gaudi_ctx_take(info, deadline, ctx_p);
    }

    return uct_gaudi_ctx_get_free(deadline, ctx_p);
}

int uct_gaudi_ctx_app_synapse(void)
{
    const char *libname = uct_gaudi_global_config()->synapse_lib;
    int own;

    uct_gaudi_process_lock(&uct_gaudi_process.backend.lock);
    own = (uct_gaudi_process.backend.syn != NULL) &&
          !uct_gaudi_process.backend.syn->preloaded;
    uct_gaudi_process_unlock(&uct_gaudi_process.backend.lock);
    return !own && uct_gaudi_ctx_syn_loaded(libname);
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

    info = uct_gaudi_ctx_default_info();
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
    uct_gaudi_syn_t *syn = NULL;
    ucs_status_t status;
    int value;

    uct_gaudi_process_lock(&uct_gaudi_process.backend.lock);
    value = uct_gaudi_process.backend.value;
    uct_gaudi_process_unlock(&uct_gaudi_process.backend.lock);
    if (value >= 0) {
        return (uct_gaudi_backend_t)value;
    }

    /* decided with no lock held: a load runs the library's constructors */
    uct_gaudi_ctx_choose(asic, &choice);
    if ((choice.backend == UCT_GAUDI_BACKEND_SYNAPSE) &&
        !uct_gaudi_ctx_syn_loaded(libname)) {
        /* SynapseAI is to copy: the library must load (auto falls back to
         * the kernel backend, as at the take); it stays loaded, as the
         * take will use it */
        syn    = ucs_calloc(1, sizeof(*syn), "gaudi syn");
        status = UCS_ERR_NO_MEMORY;
        if (syn != NULL) {
            uct_gaudi_process_may_sleep();
            status = uct_gaudi_syn_load(libname, uct_gaudi_device_minor_known,
                                        syn);
        }
        if (status != UCS_OK) {
            ucs_free(syn);
            syn = NULL;
        }
        if (uct_gaudi_ctx_syn_fallback(&choice, asic, status) != UCS_OK) {
            choice.backend = UCT_GAUDI_BACKEND_SYNAPSE;
        }
    }

    uct_gaudi_process_lock(&uct_gaudi_process.backend.lock);
    if (uct_gaudi_process.backend.value < 0) {
        uct_gaudi_process.backend.value = choice.backend;
        uct_gaudi_process.backend.syn   = syn;
        syn                             = NULL;
        ucs_diag("gaudi: copy backend %s (%s), when the device is taken",
                 uct_gaudi_backend_names[choice.backend], choice.why);
    }
    value = uct_gaudi_process.backend.value;
    uct_gaudi_process_unlock(&uct_gaudi_process.backend.lock);

    if (syn != NULL) {
        /* another thread decided first */
        uct_gaudi_syn_unload(syn);
        ucs_free(syn);
    }
    return (uct_gaudi_backend_t)value;
}
