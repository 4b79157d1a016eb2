/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * ioctl dispatch (facts 1.2, 1.5, 1.6) and compute context lifetime.
 */

#include "hlsim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <unistd.h>

/* DRM_IOCTL_VERSION layout (include/uapi/drm/drm.h), not installed here */
struct hlsim_drm_version {
    int      version_major;
    int      version_minor;
    int      version_patchlevel;
    size_t   name_len;
    uint64_t name;
    size_t   date_len;
    uint64_t date;
    size_t   desc_len;
    uint64_t desc;
};
#define HLSIM_DRM_IOCTL_VERSION _IOWR('d', 0x00, struct hlsim_drm_version)

static int hlsim_drm_str(uint64_t uptr, size_t *ulen, const char *s)
{
    size_t len = strlen(s), n = HLSIM_MIN(*ulen, len);
    int    rc  = 0;

    if (n && uptr) {
        rc = hlsim_copy_to_user(uptr, s, n);
    }
    *ulen = len;
    return rc;
}

/*
 * DRM identity per flavour (docs/hlsim.md). In-kernel accel driver: name,
 * date and desc of its drm_driver, version = the running kernel's (Linux
 * drivers/accel/habanalabs/common/habanalabs_drv.c). Habana's driver: its
 * own version.h numbers (HabanaAI/drivers.accel.habanalabs.kernel
 * common/version.h).
 */
static int hlsim_drm_version(struct hlsim_drm_version *v)
{
    const char    *date = "20260305";
    struct utsname uts;

    v->version_major      = 1;
    v->version_minor      = 24;
    v->version_patchlevel = 1;
    if (!hlsim_cfg.habana) {
        date                  = "20190505";
        v->version_patchlevel = 0;
        if ((uname(&uts) != 0) ||
            (sscanf(uts.release, "%d.%d.%d", &v->version_major,
                    &v->version_minor, &v->version_patchlevel) < 2)) {
            return -EIO;
        }
    }
    if (hlsim_drm_str(v->name, &v->name_len, "habanalabs") ||
        hlsim_drm_str(v->date, &v->date_len, date) ||
        hlsim_drm_str(v->desc, &v->desc_len,
                      "Driver for HabanaLabs's AI Accelerators")) {
        return -EFAULT;
    }
    return 0;
}

static const size_t hlsim_op_size[GAUDI_HL_OP_LAST] = {
    [GAUDI_HL_OP_INFO]    = sizeof(struct hl_info_args),
    [GAUDI_HL_OP_CB]      = sizeof(union hl_cb_args),
    [GAUDI_HL_OP_CS]      = sizeof(union hl_cs_args),
    [GAUDI_HL_OP_WAIT_CS] = sizeof(union hl_wait_cs_args),
    [GAUDI_HL_OP_MEMORY]  = sizeof(union hl_mem_args),
    [GAUDI_HL_OP_DEBUG]   = sizeof(struct hl_debug_args),
};

int hlsim_ioctl(hlsim_file_t *f, int fd, unsigned long req, void *arg)
{
    union {
        struct hl_info_args      info;
        union hl_cb_args         cb;
        union hl_cs_args         cs;
        union hl_wait_cs_args    wait;
        union hl_mem_args        mem;
        struct hl_debug_args     debug;
        struct hlsim_drm_version version;
    } k;
    unsigned nr = _IOC_NR(req), dir = _IOC_DIR(req);
    size_t   usize = _IOC_SIZE(req), ksize, n;
    int      op, rc;

    (void)fd;
    if (f->kind == HLSIM_F_DMABUF) {
        return -ENOTTY;
    }
    if (f->kind == HLSIM_F_CONTROL) {
        /* only INFO, compared by number only (facts 1.2) */
        if (nr != (f->accel ? GAUDI_HL_DRM_COMMAND_BASE : 1)) {
            return -ENOTTY;
        }
        op = GAUDI_HL_OP_INFO;
    } else if (f->accel) {
        /* drm_ioctl: type byte must be 'd' (facts 1.5) */
        if (_IOC_TYPE(req) != 'd') {
            return -ENOTTY;
        }
        /* a DRM core ioctl: Habana's build without DRM accel has no DRM
         * core, its own dispatcher knows nr 0x40.. only (facts 1.5) */
        if ((nr == 0) && (req == HLSIM_DRM_IOCTL_VERSION) &&
            !(hlsim_cfg.habana && hlsim_cfg.no_drm)) {
            op = -1;
        } else if ((nr >= GAUDI_HL_DRM_COMMAND_BASE) &&
                   (nr < GAUDI_HL_DRM_COMMAND_BASE + GAUDI_HL_OP_LAST)) {
            op = nr - GAUDI_HL_DRM_COMMAND_BASE;
        } else {
            return -ENOTTY;
        }
    } else {
        /* misc-era dispatcher: _IOC_NR 1..6 only (facts 1.5) */
        if ((nr < 1) || (nr > GAUDI_HL_OP_LAST)) {
            return -ENOTTY;
        }
        op = nr - 1;
    }

    /* size-tolerant copies like drm_ioctl: zero-extend, truncate */
    ksize = (op < 0) ? sizeof(k.version) : hlsim_op_size[op];
    n     = HLSIM_MIN(usize, ksize);
    memset(&k, 0, sizeof(k));
    if ((dir & _IOC_WRITE) && hlsim_copy_from_user(&k, (uintptr_t)arg, n)) {
        return -EFAULT;
    }

    switch (op) {
    case -1:
        rc = hlsim_drm_version(&k.version);
        break;
    case GAUDI_HL_OP_INFO:
        rc = hlsim_info(f, &k.info);
        break;
    case GAUDI_HL_OP_CB:
        rc = hlsim_cb(f, &k.cb);
        break;
    case GAUDI_HL_OP_CS:
        __atomic_add_fetch(&hlsim_counters[HLSIM_COUNTER_CS_IOCTLS], 1,
                           __ATOMIC_RELAXED);
        rc = hlsim_cs(f, &k.cs);
        break;
    case GAUDI_HL_OP_WAIT_CS:
        __atomic_add_fetch(&hlsim_counters[HLSIM_COUNTER_WAIT_CS_IOCTLS], 1,
                           __ATOMIC_RELAXED);
        rc = hlsim_wait_cs(f, &k.wait);
        break;
    case GAUDI_HL_OP_MEMORY:
        rc = hlsim_mem(f, &k.mem);
        break;
    default:
        /* the driver refuses DEBUG unless in debug mode: not emulated */
        rc = -EFAULT;
        break;
    }

    if ((dir & _IOC_READ) && hlsim_copy_to_user((uintptr_t)arg, &k, n)) {
        return -EFAULT;
    }
    return rc;
}

/* @fd: the compute node file; on tmpfs it holds the CBs (hlsim_cb.c) */
hlsim_ctx_t *hlsim_ctx_create(int dev, int fd)
{
    hlsim_devcfg_t *d = &hlsim_cfg.dev[dev];
    hlsim_ctx_t    *ctx;
    struct statfs   sfs;
    struct stat     st;

    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return NULL;
    }
    ctx->dev         = dev;
    ctx->next_handle = 1;
    ctx->cb_memfd    = -1;
    ctx->next_seq    = 1;
    if (!hlsim_real.fstat(fd, &st) && !fstatfs(fd, &sfs)) {
        ctx->mem_dev = st.st_dev;
        ctx->mem_ino = st.st_ino;
        ctx->cb_node = (sfs.f_type == HLSIM_TMPFS_MAGIC) &&
                       ((uint64_t)st.st_size >= HLSIM_CB_FILE_END);
    }
    if (d->asic != HLSIM_GAUDI1) {
        ctx->npages    = d->hbm_size / d->page_size;
        ctx->page_used = calloc(ctx->npages, 1);
        if (ctx->page_used == NULL) {
            free(ctx);
            return NULL;
        }
        ctx->page_used[0] = 1;   /* reserved for driver and FW (facts 3.4) */
    }
    pthread_mutex_lock(&hlsim_lock);
    hlsim_ctx_register(ctx, 1);
    hlsim_counters[HLSIM_COUNTER_CONTEXTS]++;
    pthread_mutex_unlock(&hlsim_lock);
    return ctx;
}

/*
 * What still holds the context at the last close (K612
 * common/device.c:598-625): CSs in flight (command_submission.c:921) and
 * CBs the user still has mapped (command_buffer.c:223). Lock held.
 */
static void hlsim_ctx_in_use(hlsim_ctx_t *ctx, int *cs, int *cb_mapped)
{
    hlsim_cb_t *cb;

    hlsim_cb_sweep(ctx);
    *cs        = ctx->in_flight;
    *cb_mapped = 0;
    for (cb = ctx->cbs; cb != NULL; cb = cb->next) {
        *cb_mapped |= (cb->user != NULL) || cb->zombie;
    }
}

/*
 * The reset upon device release of every ASIC but Gaudi1 (and Goya)
 * (K612 common/habanalabs_drv.c:356-378, common/device.c:484, 530-531): a
 * compute reset, not queued to a work item, so it runs inside the
 * closer's close() (device.c:1749-1762 queue hard resets only); opens get
 * EAGAIN meanwhile (facts 7.1); counted nowhere (:1981-1994). Ignored
 * while another reset runs (:1688-1697).
 */
static void hlsim_release_reset(int dev)
{
    uint64_t until;

    if ((hlsim_cfg.dev[dev].asic == HLSIM_GAUDI1) ||
        hlsim_dmabufs_alive(dev) || hlsim_dev_in_reset(dev)) {
        return;
    }
    if (!hlsim_cfg.release_reset_ms) {
        /* a reset of no duration, which still ends NEEDS_RESET */
        if (hlsim_dev_status(dev) == GAUDI_HL_DEVICE_STATUS_NEEDS_RESET) {
            hlsim_dev_set_status(dev, GAUDI_HL_DEVICE_STATUS_OPERATIONAL, 0);
        }
        return;
    }
    until = hlsim_now_ns() + hlsim_cfg.release_reset_ms * 1000000ULL;
    hlsim_dev_set_status(dev,
                         GAUDI_HL_DEVICE_STATUS_IN_RESET_AFTER_DEVICE_RELEASE,
                         until);
    while (hlsim_now_ns() < until) {
        usleep((until - hlsim_now_ns()) / 1000 + 1);
    }
    (void)hlsim_dev_status(dev);   /* ends it, unless a hard reset took over */
}

/* Last reference to the compute fd gone: free everything (facts 3.2) */
void hlsim_ctx_release(hlsim_ctx_t *ctx)
{
    hlsim_shdev_t *sd = &hlsim_shm->dev[ctx->dev];
    int            dev = ctx->dev, cs = 0, cb_mapped = 0, hard = 0;
    uint64_t       ms;

    if (!ctx->inherited) {
        __atomic_store_n(&sd->in_release, 1, __ATOMIC_RELEASE);
        pthread_mutex_lock(&hlsim_lock);
        hlsim_ctx_in_use(ctx, &cs, &cb_mapped);
        pthread_mutex_unlock(&hlsim_lock);
    }
    if (cs || cb_mapped) {
        /* accel and Habana: a hard reset; Linux 6.1 only logs a notice
         * (K61 common/device.c:478-480) */
        hlsim_log("dev%d: closed with %d CS in flight%s: device still in "
                  "use%s", dev, cs, cb_mapped ? " and a CB mapped" : "",
                  hlsim_cfg.legacy ? "" : ", hard reset");
        hard = !hlsim_cfg.legacy;
    }
    if (hard) {
        /* a live CB mapping keeps the closer on the driver's list of
         * users: it is killed with them (device.c:1455-1468) */
        hlsim_dev_reset_kill(dev, hlsim_cfg.reset_ms,
                             cb_mapped ? getpid() : 0);
    }
    hlsim_cs_ctx_fini(ctx);
    pthread_mutex_lock(&hlsim_lock);
    hlsim_mem_ctx_fini(ctx);
    pthread_mutex_unlock(&hlsim_lock);
    if (!ctx->inherited) {
        __atomic_sub_fetch(&sd->dram_used, ctx->ctx_dram, __ATOMIC_ACQ_REL);
        ms = (hlsim_now_ns() - __atomic_load_n(&sd->last_open_ns,
                                               __ATOMIC_ACQUIRE)) / 1000000;
        __atomic_store_n(&sd->last_session_ms, ms, __ATOMIC_RELEASE);
        /* Linux 6.1 never releases a context a stuck CS holds (K61
         * common/device.c:478-480): no reset upon release, a device that
         * needs a reset keeps needing one */
        if (!(hlsim_cfg.legacy && cs)) {
            hlsim_release_reset(dev);
        }
        __atomic_store_n(&sd->compute_active, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&sd->owner_pid, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&sd->in_release, 0, __ATOMIC_RELEASE);
    }
    free(ctx->page_used);
    free(ctx->cs_ring);
    free(ctx);
    pthread_mutex_lock(&hlsim_lock);
    hlsim_counters[HLSIM_COUNTER_CONTEXTS]--;
    pthread_mutex_unlock(&hlsim_lock);
}
