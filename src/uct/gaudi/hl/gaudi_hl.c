/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Thin ioctl shim over the habanalabs driver (see gaudi_hl.h): the ioctl
 * itself, opening and attaching device nodes, INFO. MEMORY: gaudi_hl_mem.c;
 * CB and CS: gaudi_hl_cs.c.
 * "facts N" refers to section N of docs/driver-facts.md.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/hl/gaudi_hl_int.h>

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>

#include <xf86drm.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>


/* Request codes by ABI generation and operation (facts 1.6) */
static const unsigned long uct_gaudi_hl_request[GAUDI_HL_ABI_LAST]
                                               [GAUDI_HL_OP_LAST] = {
    [GAUDI_HL_ABI_ACCEL] = {
        [GAUDI_HL_OP_INFO]    = GAUDI_HL_DRM_IOCTL_INFO,
        [GAUDI_HL_OP_CB]      = GAUDI_HL_DRM_IOCTL_CB,
        [GAUDI_HL_OP_CS]      = GAUDI_HL_DRM_IOCTL_CS,
        [GAUDI_HL_OP_WAIT_CS] = GAUDI_HL_DRM_IOCTL_WAIT_CS,
        [GAUDI_HL_OP_MEMORY]  = GAUDI_HL_DRM_IOCTL_MEMORY,
        [GAUDI_HL_OP_DEBUG]   = GAUDI_HL_DRM_IOCTL_DEBUG
    },
    [GAUDI_HL_ABI_LEGACY] = {
        [GAUDI_HL_OP_INFO]    = GAUDI_HL_LEGACY_IOCTL_INFO,
        [GAUDI_HL_OP_CB]      = GAUDI_HL_LEGACY_IOCTL_CB,
        [GAUDI_HL_OP_CS]      = GAUDI_HL_LEGACY_IOCTL_CS,
        [GAUDI_HL_OP_WAIT_CS] = GAUDI_HL_LEGACY_IOCTL_WAIT_CS,
        [GAUDI_HL_OP_MEMORY]  = GAUDI_HL_LEGACY_IOCTL_MEMORY,
        [GAUDI_HL_OP_DEBUG]   = GAUDI_HL_LEGACY_IOCTL_DEBUG
    }
};


ucs_status_t uct_gaudi_hl_errno_status(int err)
{
    switch (err) {
    case 0:
        return UCS_OK;
    case ENOENT:
    case ENXIO:
    case ENODEV:
        return UCS_ERR_NO_DEVICE;
    case EBUSY:
        return UCS_ERR_BUSY;
    case EAGAIN:
        return UCS_ERR_NO_RESOURCE;
    case EPERM:
    case EACCES:
        return UCS_ERR_REJECTED;
    case ENOMEM:
    case ENOSPC:
        return UCS_ERR_NO_MEMORY;
    case EINVAL:
    case EBADF:
        return UCS_ERR_INVALID_PARAM;
    case EFAULT:
        return UCS_ERR_INVALID_ADDR;
    case ETIMEDOUT:
        return UCS_ERR_TIMED_OUT;
    case ENOTTY:
    case EOPNOTSUPP:
    case ENOSYS:
        return UCS_ERR_UNSUPPORTED;
    case EMFILE:
    case ENFILE:
        return UCS_ERR_EXCEEDS_LIMIT;
    case EINTR:
        return UCS_ERR_CANCELED;
    case EIO:
    default:
        return UCS_ERR_IO_ERROR;
    }
}

/*
 * Log a failed driver call and return its status. errno is set to @a err
 * on return, so callers may still look at it after the logging.
 */
ucs_status_t UCS_F_PRINTF(4, 5)
uct_gaudi_hl_fail(const char *name, int err, int quiet, const char *fmt, ...)
{
    char what[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);

    if (quiet) {
        ucs_debug("gaudi %s: %s failed: %s", name, what, strerror(err));
    } else {
        ucs_error("gaudi %s: %s failed: %s", name, what, strerror(err));
    }

    errno = err;
    return uct_gaudi_hl_errno_status(err);
}

/* ioctl with EINTR retried; returns 0 or the errno */
static int uct_gaudi_hl_ioctl_abi(int fd, gaudi_hl_abi_t abi, gaudi_hl_op_t op,
                                  void *arg)
{
    int ret;

    do {
        ret = ioctl(fd, uct_gaudi_hl_request[abi][op], arg);
    } while ((ret < 0) && (errno == EINTR));

    return (ret < 0) ? errno : 0;
}

/*
 * A borrowed fd is the application's: if it closed the number and opened
 * something else there, our ioctls would drive another device (or file).
 * 0 if @a hl still refers to the node it was attached as, else ENODEV.
 */
static int uct_gaudi_hl_check_borrowed(const uct_gaudi_hl_t *hl)
{
    struct stat st;

    if (hl->owns_fd || ((hl->rdev == 0) && (hl->ino == 0))) {
        return 0;
    }

    if (fstat(hl->fd, &st) < 0) {
        return errno;
    }
    if ((st.st_rdev == hl->rdev) && (st.st_ino == hl->ino)) {
        return 0;
    }

    ucs_error("gaudi %s: the borrowed fd %d is no longer that device (the "
              "application closed it and reused the number?): refusing to "
              "use it", hl->name, hl->fd);
    return ENODEV;
}

int uct_gaudi_hl_ioctl(const uct_gaudi_hl_t *hl, gaudi_hl_op_t op,
                       void *arg)
{
    int err = uct_gaudi_hl_check_borrowed(hl);

    return err ? err : uct_gaudi_hl_ioctl_abi(hl->fd, hl->abi, op, arg);
}

static int uct_gaudi_hl_info_raw(int fd, gaudi_hl_abi_t abi, uint32_t op,
                                 void *buf, size_t size)
{
    struct hl_info_args args;

    memset(&args, 0, sizeof(args));   /* pad must be 0 (facts 2.1) */
    memset(buf, 0, size);
    args.return_pointer = (uintptr_t)buf;
    args.return_size    = size;
    args.op             = op;
    return uct_gaudi_hl_ioctl_abi(fd, abi, GAUDI_HL_OP_INFO, &args);
}

/*
 * Find the ioctl code set: INFO/HW_IP_INFO with the DRM code, then with the
 * legacy code. A wrong guess is rejected harmlessly with ENOTTY by both
 * dispatchers (facts 1.5 "Recommended detection").
 */
static ucs_status_t uct_gaudi_hl_detect_abi(uct_gaudi_hl_t *hl)
{
    struct gaudi_hl_hw_ip_info hw_ip;
    gaudi_hl_abi_t abi;
    int err = ENOTTY;

    for (abi = GAUDI_HL_ABI_ACCEL; abi < GAUDI_HL_ABI_LAST; ++abi) {
        err = uct_gaudi_hl_info_raw(hl->fd, abi, HL_INFO_HW_IP_INFO, &hw_ip,
                                    sizeof(hw_ip));
        if (err != ENOTTY) {
            break;
        }
    }

    if (err != 0) {
        return uct_gaudi_hl_fail(hl->name, err, 0,
                                 "INFO HW_IP_INFO (ABI detection)");
    }

    hl->abi = abi;
    ucs_debug("gaudi %s: using %s ioctl codes", hl->name,
              (abi == GAUDI_HL_ABI_ACCEL) ? "DRM accel" : "legacy");
    return UCS_OK;
}

/* Why an open failed, in the driver's terms (facts 7.1, 7.2) */
static const char *uct_gaudi_hl_open_hint(int err)
{
    switch (err) {
    case EBUSY:
        return " (device busy: another process owns its compute context)";
    case EAGAIN:
        return " (device in reset or its previous user is being released)";
    case EPERM:
        return " (device disabled or needs a reset)";
    default:
        return "";
    }
}

static void uct_gaudi_hl_set_name(uct_gaudi_hl_t *hl, const char *path)
{
    const char *base = strrchr(path, '/');

    ucs_strncpy_zero(hl->name, (base != NULL) ? (base + 1) : path,
                     sizeof(hl->name));
}

ucs_status_t uct_gaudi_hl_open(int minor, int control, unsigned flags,
                               uct_gaudi_hl_t *hl)
{
    /* accel names first, then legacy names (facts 1.1) */
    const char *fmts[2];
    char path[PATH_MAX];
    ucs_status_t status;
    int i, fd, err, quiet;

    fmts[0] = control ? GAUDI_HL_ACCEL_CONTROL_FMT : GAUDI_HL_ACCEL_NODE_FMT;
    fmts[1] = control ? GAUDI_HL_LEGACY_CONTROL_FMT : GAUDI_HL_LEGACY_NODE_FMT;

    memset(hl, 0, sizeof(*hl));
    hl->fd      = -1;
    hl->minor   = minor;
    hl->control = !!control;

    fd  = -1;
    err = ENOENT;
    for (i = 0; (i < 2) && (err == ENOENT); ++i) {
        snprintf(path, sizeof(path), fmts[i], minor);
        uct_gaudi_hl_set_name(hl, path);
        do {
            fd = open(path, O_RDWR | O_CLOEXEC);
        } while ((fd < 0) && (errno == EINTR));
        err = (fd < 0) ? errno : 0;
    }

    if (fd < 0) {
        /* a missing node is normal during discovery */
        quiet = (flags & UCT_GAUDI_HL_OPEN_QUIET) || (err == ENOENT) ||
                (err == ENXIO) || (err == ENODEV);
        return uct_gaudi_hl_fail(hl->name, err, quiet, "open of %s%s", path,
                                 uct_gaudi_hl_open_hint(err));
    }

    hl->fd      = fd;
    hl->owns_fd = 1;

    status = uct_gaudi_hl_detect_abi(hl);
    if (status != UCS_OK) {
        err = errno;
        uct_gaudi_hl_close(hl);
        errno = err;
        return status;
    }

    ucs_debug("gaudi %s: opened %s fd %d", hl->name, path, fd);
    return UCS_OK;
}

/*
 * Parse a node basename: "accelN", "hlN" (compute) or "accel_controlDN",
 * "hl_controlDN" (control). Returns 1 on a full match.
 */
static int uct_gaudi_hl_parse_node_name(const char *base, int *minor_p,
                                        int *control_p)
{
    static const struct {
        const char *fmt;
        int        control;
    } forms[] = {
        {"accel_controlD%d%n", 1},
        {"hl_controlD%d%n",    1},
        {"accel%d%n",          0},
        {"hl%d%n",             0}
    };
    int i, minor, len;

    for (i = 0; i < ucs_static_array_size(forms); ++i) {
        len = -1;
        if ((sscanf(base, forms[i].fmt, &minor, &len) == 1) &&
            (len > 0) && (base[len] == '\0') && (minor >= 0)) {
            *minor_p   = minor;
            *control_p = forms[i].control;
            return 1;
        }
    }

    return 0;
}

/* Resolve a symlink to a device node and parse its basename into @a hl */
static int uct_gaudi_hl_parse_link(const char *link, uct_gaudi_hl_t *hl)
{
    char target[PATH_MAX];
    const char *base;
    int minor, control;
    ssize_t len;

    len = readlink(link, target, sizeof(target) - 1);
    if (len <= 0) {
        return 0;
    }

    target[len] = '\0';
    base        = strrchr(target, '/');
    base        = (base != NULL) ? (base + 1) : target;
    if (!uct_gaudi_hl_parse_node_name(base, &minor, &control)) {
        return 0;
    }

    hl->minor   = minor;
    hl->control = control;
    ucs_strncpy_zero(hl->name, base, sizeof(hl->name));
    return 1;
}

/* The node of an fd: its path, else its char device in sysfs */
static void uct_gaudi_hl_fd_node(int fd, uct_gaudi_hl_t *hl)
{
    char link[64];
    struct stat st;

    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    if (uct_gaudi_hl_parse_link(link, hl)) {
        return;
    }

    if ((fstat(fd, &st) == 0) && S_ISCHR(st.st_mode)) {
        snprintf(link, sizeof(link), "/sys/dev/char/%u:%u",
                 major(st.st_rdev), minor(st.st_rdev));
        (void)uct_gaudi_hl_parse_link(link, hl);
    }
}

int uct_gaudi_hl_fd_compute_minor(int fd)
{
    uct_gaudi_hl_t hl;

    memset(&hl, 0, sizeof(hl));
    hl.minor = -1;
    if ((fd < 0) || (fcntl(fd, F_GETFD) < 0)) {
        return -1;
    }

    uct_gaudi_hl_fd_node(fd, &hl);
    return hl.control ? -1 : hl.minor;
}

ucs_status_t uct_gaudi_hl_attach_fd(int fd, uct_gaudi_hl_t *hl)
{
    ucs_status_t status;
    struct stat st;

    memset(hl, 0, sizeof(*hl));
    hl->fd      = fd;
    hl->minor   = -1;
    hl->owns_fd = 0;
    snprintf(hl->name, sizeof(hl->name), "fd%d", fd);

    if (fd < 0) {
        return uct_gaudi_hl_fail(hl->name, EBADF, 0, "attach");
    }

    uct_gaudi_hl_fd_node(fd, hl);
    if (hl->control) {
        ucs_error("gaudi %s: fd %d is a control node, not a compute node",
                  hl->name, fd);
        errno = EINVAL;
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_gaudi_hl_detect_abi(hl);
    if (status == UCS_ERR_UNSUPPORTED) {
        ucs_error("gaudi %s: fd %d is not a habanalabs device node",
                  hl->name, fd);
        return UCS_ERR_INVALID_PARAM;
    } else if (status != UCS_OK) {
        return status;
    }

    if (fstat(fd, &st) == 0) {
        hl->rdev = st.st_rdev;
        hl->ino  = st.st_ino;
    }

    ucs_debug("gaudi %s: attached to fd %d (not owned)", hl->name, fd);
    return UCS_OK;
}

void uct_gaudi_hl_close(uct_gaudi_hl_t *hl)
{
    if (hl->owns_fd && (hl->fd >= 0)) {
        /* no EINTR retry: the fd is released even if close is interrupted */
        if (close(hl->fd) != 0) {
            ucs_debug("gaudi %s: close of fd %d failed: %m", hl->name,
                      hl->fd);
        }
    }

    hl->fd      = -1;
    hl->owns_fd = 0;
}


/* INFO */

static ucs_status_t uct_gaudi_hl_info(const uct_gaudi_hl_t *hl, uint32_t op,
                                      const char *op_name, void *buf,
                                      size_t size)
{
    int err = uct_gaudi_hl_check_borrowed(hl);

    if (err == 0) {
        err = uct_gaudi_hl_info_raw(hl->fd, hl->abi, op, buf, size);
    }
    if (err != 0) {
        return uct_gaudi_hl_fail(hl->name, err, 0, "INFO %s", op_name);
    }

    return UCS_OK;
}

ucs_status_t uct_gaudi_hl_hw_ip_info(const uct_gaudi_hl_t *hl,
                                     struct gaudi_hl_hw_ip_info *hw_ip)
{
    /* 304-byte form: the driver copies min(size, its size) (facts 2.1) */
    return uct_gaudi_hl_info(hl, HL_INFO_HW_IP_INFO, "HW_IP_INFO", hw_ip,
                             sizeof(*hw_ip));
}

ucs_status_t uct_gaudi_hl_dram_usage(const uct_gaudi_hl_t *hl,
                                     struct hl_info_dram_usage *usage)
{
    return uct_gaudi_hl_info(hl, HL_INFO_DRAM_USAGE, "DRAM_USAGE", usage,
                             sizeof(*usage));
}

ucs_status_t uct_gaudi_hl_device_status(const uct_gaudi_hl_t *hl,
                                        uint32_t *status)
{
    struct hl_info_device_status info;
    ucs_status_t ret;

    ret = uct_gaudi_hl_info(hl, HL_INFO_DEVICE_STATUS, "DEVICE_STATUS",
                            &info, sizeof(info));
    if (ret == UCS_OK) {
        *status = info.status;
    }

    return ret;
}

/* Read-and-clear of the open file's notifier events (facts 2.4) */
ucs_status_t uct_gaudi_hl_get_events(const uct_gaudi_hl_t *hl,
                                     uint64_t *events)
{
    return uct_gaudi_hl_info(hl, HL_INFO_GET_EVENTS, "GET_EVENTS", events,
                             sizeof(*events));
}

ucs_status_t
uct_gaudi_hl_page_fault_info(const uct_gaudi_hl_t *hl,
                             struct gaudi_hl_page_fault_info *info)
{
    int err = uct_gaudi_hl_check_borrowed(hl);

    if (err == 0) {
        /* all zero unless the driver has captured a fault (facts 2.4) */
        err = uct_gaudi_hl_info_raw(hl->fd, hl->abi,
                                    GAUDI_HL_INFO_PAGE_FAULT_EVENT, info,
                                    sizeof(*info));
    }
    if (err == EINVAL) {
        return UCS_ERR_UNSUPPORTED;   /* Linux 6.1: no such op */
    } else if (err != 0) {
        return uct_gaudi_hl_fail(hl->name, err, err == EBUSY,
                                 "INFO PAGE_FAULT_EVENT");
    }

    return UCS_OK;
}

ucs_status_t uct_gaudi_hl_open_stats(const uct_gaudi_hl_t *hl,
                                     struct hl_open_stats_info *stats)
{
    return uct_gaudi_hl_info(hl, HL_INFO_OPEN_STATS, "OPEN_STATS", stats,
                             sizeof(*stats));
}

/* A DRM string of known length (not NUL-terminated) into a field */
static void uct_gaudi_hl_drm_str(char *dst, size_t max, const char *src,
                                 int len)
{
    ucs_strncpy_zero(dst, (src != NULL) ? src : "",
                     ucs_min(max, (size_t)ucs_max(len, 0) + 1));
}

ucs_status_t uct_gaudi_hl_drm_version(const uct_gaudi_hl_t *hl,
                                      uct_gaudi_hl_drm_version_t *version)
{
    drmVersionPtr drm;
    int err;

    /* libdrm sizes the strings with a first ioctl, then fetches them */
    drm = drmGetVersion(hl->fd);
    if (drm == NULL) {
        err = (errno != 0) ? errno : EIO;
        /* informational: callers go on without it */
        return uct_gaudi_hl_fail(hl->name, err, 1, "DRM_IOCTL_VERSION");
    }

    version->major      = drm->version_major;
    version->minor      = drm->version_minor;
    version->patchlevel = drm->version_patchlevel;
    uct_gaudi_hl_drm_str(version->name, sizeof(version->name), drm->name,
                         drm->name_len);
    uct_gaudi_hl_drm_str(version->date, sizeof(version->date), drm->date,
                         drm->date_len);
    uct_gaudi_hl_drm_str(version->desc, sizeof(version->desc), drm->desc,
                         drm->desc_len);
    drmFreeVersion(drm);
    return UCS_OK;
}
