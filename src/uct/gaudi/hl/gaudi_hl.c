/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Thin ioctl shim over the habanalabs driver (see gaudi_hl.h).
 * "facts N" refers to section N of docs/driver-facts.md.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/hl/gaudi_hl.h>

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


/* MEMORY args with the newer "in" forms (EXPORT {addr,size,offset}, op 99) */
typedef union {
    struct gaudi_hl_mem_in in;
    struct hl_mem_out      out;
} uct_gaudi_hl_mem_args_t;

static_assert(sizeof(uct_gaudi_hl_mem_args_t) == sizeof(union hl_mem_args),
              "MEMORY args size");


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
static ucs_status_t UCS_F_PRINTF(4, 5)
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

static int uct_gaudi_hl_ioctl(const uct_gaudi_hl_t *hl, gaudi_hl_op_t op,
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


/* MEMORY */

ucs_status_t uct_gaudi_hl_mem_alloc(const uct_gaudi_hl_t *hl, uint64_t size,
                                    uint32_t flags, uint64_t *handle)
{
    union hl_mem_args args;
    int err;

    memset(&args, 0, sizeof(args));
    args.in.op             = HL_MEM_OP_ALLOC;
    args.in.flags          = flags;
    args.in.alloc.mem_size = size;
    /* page_size 0: the driver's default allocation page (facts 3.2) */

    err = uct_gaudi_hl_ioctl(hl, GAUDI_HL_OP_MEMORY, &args);
    if (err != 0) {
        return uct_gaudi_hl_fail(hl->name, err, 0,
                                 "MEMORY ALLOC of %" PRIu64 " bytes", size);
    }

    *handle = args.out.handle;
    return UCS_OK;
}

ucs_status_t uct_gaudi_hl_mem_free(const uct_gaudi_hl_t *hl, uint64_t handle)
{
    union hl_mem_args args;
    int err;

    memset(&args, 0, sizeof(args));
    args.in.op          = HL_MEM_OP_FREE;
    args.in.free.handle = handle;

    err = uct_gaudi_hl_ioctl(hl, GAUDI_HL_OP_MEMORY, &args);
    if (err != 0) {
        return uct_gaudi_hl_fail(hl->name, err, 0,
                                 "MEMORY FREE of handle 0x%" PRIx64, handle);
    }

    return UCS_OK;
}

ucs_status_t uct_gaudi_hl_mem_free_size(const uct_gaudi_hl_t *hl,
                                        uint64_t size)
{
    union hl_mem_args args;
    int err;

    /* the Gaudi1 FREE path reads alloc.mem_size, which aliases
     * free.handle in the union */
    memset(&args, 0, sizeof(args));
    args.in.op             = HL_MEM_OP_FREE;
    args.in.alloc.mem_size = size;

    err = uct_gaudi_hl_ioctl(hl, GAUDI_HL_OP_MEMORY, &args);
    if (err != 0) {
        return uct_gaudi_hl_fail(hl->name, err, 0,
                                 "MEMORY FREE of %" PRIu64 " bytes", size);
    }

    return UCS_OK;
}

ucs_status_t uct_gaudi_hl_mem_map_device(const uct_gaudi_hl_t *hl,
                                         uint64_t handle, uint64_t hint,
                                         uint64_t *va)
{
    union hl_mem_args args;
    int err;

    memset(&args, 0, sizeof(args));
    args.in.op                   = HL_MEM_OP_MAP;
    args.in.map_device.handle    = handle;
    args.in.map_device.hint_addr = hint;

    err = uct_gaudi_hl_ioctl(hl, GAUDI_HL_OP_MEMORY, &args);
    if (err != 0) {
        return uct_gaudi_hl_fail(hl->name, err, 0,
                                 "MEMORY MAP of device handle 0x%" PRIx64,
                                 handle);
    }

    *va = args.out.device_virt_addr;
    return UCS_OK;
}

ucs_status_t uct_gaudi_hl_mem_map_host(const uct_gaudi_hl_t *hl,
                                       const void *ptr, size_t size,
                                       uint64_t hint, uint64_t *va)
{
    union hl_mem_args args;
    int err;

    memset(&args, 0, sizeof(args));
    args.in.op                      = HL_MEM_OP_MAP;
    args.in.flags                   = HL_MEM_USERPTR;
    args.in.map_host.host_virt_addr = (uintptr_t)ptr;
    args.in.map_host.hint_addr      = hint;
    args.in.map_host.mem_size       = size;

    err = uct_gaudi_hl_ioctl(hl, GAUDI_HL_OP_MEMORY, &args);
    if (err != 0) {
        /* the driver pins with FOLL_LONGTERM|FOLL_WRITE (facts 9.10) */
        return uct_gaudi_hl_fail(hl->name, err, 0,
                                 "MEMORY MAP of host memory %p length %zu%s",
                                 ptr, size, (err != EFAULT) ? "" :
                                 " (not pinnable: unmapped, read-only, or on "
                                 "Linux >= 6.5 a writable shared file "
                                 "mapping)");
    }

    *va = args.out.device_virt_addr;
    return UCS_OK;
}

/* UNMAP; errors for which @a quiet(err) holds are logged at debug level */
static ucs_status_t uct_gaudi_hl_unmap(const uct_gaudi_hl_t *hl, uint64_t va,
                                       int (*quiet)(int err), const char *what)
{
    union hl_mem_args args;
    int err;

    memset(&args, 0, sizeof(args));
    args.in.op                     = HL_MEM_OP_UNMAP;
    args.in.unmap.device_virt_addr = va;

    err = uct_gaudi_hl_ioctl(hl, GAUDI_HL_OP_MEMORY, &args);
    if (err != 0) {
        return uct_gaudi_hl_fail(hl->name, err, quiet(err),
                                 "MEMORY UNMAP of %s 0x%" PRIx64, what, va);
    }

    return UCS_OK;
}

static int uct_gaudi_hl_never_quiet(int err)
{
    return 0;
}

/* EINVAL: a dma-buf of the mapping is alive (facts 3.3); EBUSY: device not
 * operational (facts 3.1). The caller of the exported form retries later */
static int uct_gaudi_hl_unmap_exported_quiet(int err)
{
    return (err == EINVAL) || (err == EBUSY);
}

ucs_status_t uct_gaudi_hl_mem_unmap(const uct_gaudi_hl_t *hl, uint64_t va)
{
    return uct_gaudi_hl_unmap(hl, va, uct_gaudi_hl_never_quiet, "va");
}

ucs_status_t uct_gaudi_hl_mem_unmap_exported(const uct_gaudi_hl_t *hl,
                                             uint64_t va)
{
    return uct_gaudi_hl_unmap(hl, va, uct_gaudi_hl_unmap_exported_quiet,
                              "exported va");
}

ucs_status_t uct_gaudi_hl_export_dmabuf(const uct_gaudi_hl_t *hl,
                                        uint64_t addr, uint64_t size,
                                        uint64_t offset, uint32_t flags,
                                        int *dmabuf_fd)
{
    uct_gaudi_hl_mem_args_t args;
    int err;

    /* {addr, mem_size, offset} is also right for the 6.1 form (facts 4.1) */
    memset(&args, 0, sizeof(args));
    args.in.op                        = HL_MEM_OP_EXPORT_DMABUF_FD;
    args.in.flags                     = flags;
    args.in.export_dmabuf_fd.addr     = addr;
    args.in.export_dmabuf_fd.mem_size = size;
    args.in.export_dmabuf_fd.offset   = offset;

    err = uct_gaudi_hl_ioctl(hl, GAUDI_HL_OP_MEMORY, &args);
    if (err != 0) {
        return uct_gaudi_hl_fail(hl->name, err, 0,
                                 "MEMORY EXPORT_DMABUF_FD of va 0x%" PRIx64
                                 " length %" PRIu64 " offset %" PRIu64,
                                 addr, size, offset);
    }

    *dmabuf_fd = args.out.fd;
    return UCS_OK;
}

ucs_status_t uct_gaudi_hl_probe_export(const uct_gaudi_hl_t *hl,
                                       int *supported)
{
    uct_gaudi_hl_mem_args_t args;
    int err;

    /*
     * Address 0, size 0: a driver that exports checks the arguments and
     * says EINVAL (no mapping at 0, less than a page); Linux 6.1 refuses
     * export on ASICs with DRAM virtual memory (Gaudi2) before any check
     * with EOPNOTSUPP (facts 4.1, 7.2).
     */
    memset(&args, 0, sizeof(args));
    args.in.op    = HL_MEM_OP_EXPORT_DMABUF_FD;
    args.in.flags = O_RDWR | O_CLOEXEC;

    err = uct_gaudi_hl_ioctl(hl, GAUDI_HL_OP_MEMORY, &args);
    switch (err) {
    case 0:
        close(args.out.fd);   /* cannot happen; do not leak it if it did */
        /* fall through */
    case EINVAL:
        *supported = 1;
        break;
    case EOPNOTSUPP:
    case ENOTTY:
        *supported = 0;
        break;
    default:
        return uct_gaudi_hl_fail(hl->name, err, 0,
                                 "MEMORY EXPORT_DMABUF_FD probe");
    }

    ucs_debug("gaudi %s: MEMORY EXPORT_DMABUF_FD probe: %s (%s)", hl->name,
              *supported ? "supported" : "not supported", strerror(err));
    return UCS_OK;
}

static int uct_gaudi_hl_reg_dmabuf_raw(const uct_gaudi_hl_t *hl,
                                       int dmabuf_fd, uint64_t length,
                                       uint64_t *va)
{
    uct_gaudi_hl_mem_args_t args;
    int err;

    memset(&args, 0, sizeof(args));
    args.in.op                   = GAUDI_HL_MEM_OP_REG_DMABUF_FD;
    args.in.reg_dmabuf_fd.fd     = (int64_t)dmabuf_fd;
    args.in.reg_dmabuf_fd.length = length;

    err = uct_gaudi_hl_ioctl(hl, GAUDI_HL_OP_MEMORY, &args);
    if (err == 0) {
        *va = args.out.device_virt_addr;
    }

    return err;
}

ucs_status_t uct_gaudi_hl_reg_dmabuf(const uct_gaudi_hl_t *hl, int dmabuf_fd,
                                     uint64_t length, uint64_t *va)
{
    int err = uct_gaudi_hl_reg_dmabuf_raw(hl, dmabuf_fd, length, va);

    if (err != 0) {
        return uct_gaudi_hl_fail(hl->name, err, 0,
                                 "MEMORY REG_DMABUF_FD of dmabuf fd %d "
                                 "length %" PRIu64, dmabuf_fd, length);
    }

    return UCS_OK;
}

ucs_status_t uct_gaudi_hl_probe_reg_dmabuf(const uct_gaudi_hl_t *hl,
                                           int *supported)
{
    uint64_t va;
    int err;

    /*
     * A closed fd number with a one-page length: a driver that knows op 99
     * fails to get the dma-buf (dma_buf_get -> EBADF), the upstream driver
     * rejects the opcode itself (EINVAL, facts 4.3, 7.2). Same idea as IB's
     * ibv_reg_dmabuf_mr(fd = -1) probe. INT_MAX is above any fd limit
     * (fs.nr_open < INT_MAX), so it is never open; a negative fd could be
     * range-checked (EINVAL) before the lookup by some driver revision.
     */
    err = uct_gaudi_hl_reg_dmabuf_raw(hl, INT_MAX, 4096, &va);
    switch (err) {
    case 0:
        /* cannot happen with fd -1; do not leak the mapping if it did */
        (void)uct_gaudi_hl_mem_unmap(hl, va);
        /* fall through */
    case EBADF:
        *supported = 1;
        break;
    case EINVAL:
    case ENOTTY:
    case EOPNOTSUPP:
        *supported = 0;
        break;
    default:
        return uct_gaudi_hl_fail(hl->name, err, 0,
                                 "MEMORY REG_DMABUF_FD probe");
    }

    ucs_debug("gaudi %s: MEMORY REG_DMABUF_FD probe: %s (%s)", hl->name,
              *supported ? "supported" : "not supported", strerror(err));
    return UCS_OK;
}


/* Command buffers */

ucs_status_t uct_gaudi_hl_cb_create(const uct_gaudi_hl_t *hl, uint32_t size,
                                    uint32_t flags, uint64_t *handle)
{
    union hl_cb_args args;
    int err;

    memset(&args, 0, sizeof(args));
    args.in.op      = HL_CB_OP_CREATE;
    args.in.cb_size = size;
    args.in.flags   = flags;

    err = uct_gaudi_hl_ioctl(hl, GAUDI_HL_OP_CB, &args);
    if (err != 0) {
        return uct_gaudi_hl_fail(hl->name, err, 0,
                                 "CB CREATE of %u bytes flags 0x%x", size,
                                 flags);
    }

    *handle = args.out.cb_handle;
    return UCS_OK;
}

ucs_status_t uct_gaudi_hl_cb_destroy(const uct_gaudi_hl_t *hl,
                                     uint64_t handle)
{
    union hl_cb_args args;
    int err;

    memset(&args, 0, sizeof(args));
    args.in.op        = HL_CB_OP_DESTROY;
    args.in.cb_handle = handle;

    err = uct_gaudi_hl_ioctl(hl, GAUDI_HL_OP_CB, &args);
    if (err != 0) {
        return uct_gaudi_hl_fail(hl->name, err, 0,
                                 "CB DESTROY of handle 0x%" PRIx64, handle);
    }

    return UCS_OK;
}

ucs_status_t uct_gaudi_hl_cb_device_va(const uct_gaudi_hl_t *hl,
                                       uint64_t handle, uint64_t *va)
{
    union hl_cb_args args;
    int err;

    memset(&args, 0, sizeof(args));
    args.in.op        = HL_CB_OP_INFO;
    args.in.cb_handle = handle;
    args.in.flags     = HL_CB_FLAGS_GET_DEVICE_VA;

    err = uct_gaudi_hl_ioctl(hl, GAUDI_HL_OP_CB, &args);
    if (err != 0) {
        return uct_gaudi_hl_fail(hl->name, err, 0,
                                 "CB INFO GET_DEVICE_VA of handle 0x%" PRIx64,
                                 handle);
    }

    *va = args.out.device_va;
    return UCS_OK;
}

ucs_status_t uct_gaudi_hl_cb_mmap(const uct_gaudi_hl_t *hl, uint64_t handle,
                                  size_t size, void **ptr_p)
{
    void *ptr;

    /* the CB handle is the mmap offset on the compute fd (facts 5.1) */
    ptr = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, hl->fd,
               (off_t)handle);
    if (ptr == MAP_FAILED) {
        return uct_gaudi_hl_fail(hl->name, errno, 0,
                                 "mmap of CB handle 0x%" PRIx64
                                 " length %zu", handle, size);
    }

    *ptr_p = ptr;
    return UCS_OK;
}

ucs_status_t uct_gaudi_hl_cb_munmap(const uct_gaudi_hl_t *hl, void *ptr,
                                    size_t size)
{
    if (munmap(ptr, size) != 0) {
        return uct_gaudi_hl_fail(hl->name, errno, 0,
                                 "munmap of CB %p length %zu", ptr, size);
    }

    return UCS_OK;
}


/* Command submission */

ucs_status_t uct_gaudi_hl_cs_submit(const uct_gaudi_hl_t *hl,
                                    const struct hl_cs_chunk *chunks,
                                    unsigned num, uint32_t cs_flags,
                                    uint64_t *seq)
{
    union hl_cs_args args;
    int err;

    memset(&args, 0, sizeof(args));   /* pad must be 0 (facts 5.2) */
    args.in.chunks_execute     = (uintptr_t)chunks;
    args.in.num_chunks_execute = num;
    args.in.cs_flags           = cs_flags;

    err = uct_gaudi_hl_ioctl(hl, GAUDI_HL_OP_CS, &args);
    if (err != 0) {
        /* EAGAIN: too many CS in flight / queue full, retry later */
        return uct_gaudi_hl_fail(hl->name, err, err == EAGAIN,
                                 "CS of %u chunk(s) flags 0x%x", num,
                                 cs_flags);
    }

    *seq = args.out.seq;
    return UCS_OK;
}

ucs_status_t uct_gaudi_hl_cs_wait(const uct_gaudi_hl_t *hl, uint64_t seq,
                                  uint64_t timeout_us, uint32_t *cs_status)
{
    union hl_wait_cs_args args;
    uint32_t status;
    int err;

    memset(&args, 0, sizeof(args));
    args.in.seq        = seq;
    args.in.timeout_us = timeout_us;

    err    = uct_gaudi_hl_ioctl(hl, GAUDI_HL_OP_WAIT_CS, &args);
    status = args.out.status;
    if (cs_status != NULL) {
        *cs_status = status;
    }

    if (err != 0) {
        /* ETIMEDOUT (status TIMEDOUT), EIO (ABORTED), EBUSY (facts 5.2).
         * EBUSY (device in reset) is quiet: pollers see it on every poll
         * until the reset ends and report it once themselves */
        return uct_gaudi_hl_fail(hl->name, err, err == EBUSY,
                                 "WAIT_CS of seq %" PRIu64, seq);
    }

    switch (status) {
    case HL_WAIT_CS_STATUS_COMPLETED:
        return UCS_OK;   /* also with HL_WAIT_CS_STATUS_FLAG_GONE */
    case HL_WAIT_CS_STATUS_BUSY:
        return UCS_INPROGRESS;
    case HL_WAIT_CS_STATUS_TIMEDOUT:
        return uct_gaudi_hl_fail(hl->name, ETIMEDOUT, 0,
                                 "WAIT_CS of seq %" PRIu64, seq);
    default:
        return uct_gaudi_hl_fail(hl->name, EIO, 0,
                                 "WAIT_CS of seq %" PRIu64 " (status %u)",
                                 seq, status);
    }
}
