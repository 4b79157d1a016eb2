/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Thin ioctl shim over the habanalabs driver: one function per driver
 * operation, no policy. This is the only code in the plugin that calls
 * open/ioctl/close/mmap on a device node. Design notes: docs/base.md.
 *
 * Conventions of every function below:
 * - returns UCS_OK or the status of uct_gaudi_hl_errno_status() of the
 *   driver's errno; on failure errno still holds that errno;
 * - a failure is logged with ucs_error naming the node, the operation and
 *   the errno text ("gaudi accel0: MEMORY ALLOC of 4096 bytes failed:
 *   Cannot allocate memory"), except failures that are expected by the
 *   contract of the call (documented per function), which go to ucs_debug;
 * - EINTR is retried.
 */

#ifndef UCT_GAUDI_HL_H_
#define UCT_GAUDI_HL_H_

#include <uct/gaudi/hl/gaudi_hl_abi.h>

#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

BEGIN_C_DECLS

#define UCT_GAUDI_HL_NAME_MAX 32
#define UCT_GAUDI_HL_DESC_MAX 64


/* uct_gaudi_hl_open() flags */
enum {
    /* Log every open failure with ucs_debug (discovery, back-off retries) */
    UCT_GAUDI_HL_OPEN_QUIET = UCS_BIT(0)
};


/* An open device node (compute or control) */
typedef struct uct_gaudi_hl {
    int            fd;       /* file descriptor of the node */
    int            minor;    /* N of accelN / hlN / *_controlDN, or -1 */
    int            control;  /* 1: control node (INFO only, facts 1.2) */
    int            owns_fd;  /* 1: opened by us, closed by uct_gaudi_hl_close */
    gaudi_hl_abi_t abi;      /* ioctl request code set (facts 1.5, 1.6) */
    char           name[UCT_GAUDI_HL_NAME_MAX]; /* "accel0", "hl_controlD1" */
    dev_t          rdev;     /* a borrowed fd: the device it was attached */
    ino_t          ino;      /* as, checked before each ioctl */
} uct_gaudi_hl_t;


/* The driver's DRM identity (DRM_IOCTL_VERSION, facts 1.5) */
typedef struct uct_gaudi_hl_drm_version {
    int  major;                        /* in-kernel driver: the kernel's */
    int  minor;
    int  patchlevel;
    char name[UCT_GAUDI_HL_NAME_MAX];  /* "habanalabs" */
    char date[UCT_GAUDI_HL_NAME_MAX];  /* may be empty (Linux >= 6.14) */
    char desc[UCT_GAUDI_HL_DESC_MAX];
} uct_gaudi_hl_drm_version_t;


/* errno -> ucs_status_t, the one mapping (table in docs/base.md) */
ucs_status_t uct_gaudi_hl_errno_status(int err);


/* Open / attach / close */

/**
 * Open compute or control node @a minor: the accel name first, then the
 * legacy name (facts 1.1), O_RDWR|O_CLOEXEC. Detects the ioctl code set by
 * INFO/HW_IP_INFO with the DRM code, then the legacy code on ENOTTY
 * (facts 1.5). A missing node (ENOENT/ENXIO/ENODEV, UCS_ERR_NO_DEVICE) is
 * always logged at debug level only.
 */
ucs_status_t uct_gaudi_hl_open(int minor, int control, unsigned flags,
                               uct_gaudi_hl_t *hl);

/**
 * Wrap an already open compute fd that the shim does not own (it is never
 * closed by us). Detects the ABI and the minor (from /proc/self/fd/N, then
 * /sys/dev/char). Fails with UCS_ERR_INVALID_PARAM if @a fd is a control
 * node or does not answer INFO.
 */
ucs_status_t uct_gaudi_hl_attach_fd(int fd, uct_gaudi_hl_t *hl);

/**
 * Minor of the compute node that @a fd is open on, from its path or its
 * char device, without any ioctl (safe on any fd); -1 if it is not open or
 * not named like a habanalabs compute node.
 */
int uct_gaudi_hl_fd_compute_minor(int fd);

/* Close the fd if owned; safe on a zeroed or already closed handle */
void uct_gaudi_hl_close(uct_gaudi_hl_t *hl);


/* INFO (facts 2); all of them work on control nodes too */

/* HW_IP_INFO, 304-byte form; fields past 256 B stay 0 on old kernels */
ucs_status_t uct_gaudi_hl_hw_ip_info(const uct_gaudi_hl_t *hl,
                                     struct gaudi_hl_hw_ip_info *hw_ip);

ucs_status_t uct_gaudi_hl_dram_usage(const uct_gaudi_hl_t *hl,
                                     struct hl_info_dram_usage *usage);

/* GAUDI_HL_DEVICE_STATUS_* */
ucs_status_t uct_gaudi_hl_device_status(const uct_gaudi_hl_t *hl,
                                        uint32_t *status);

ucs_status_t uct_gaudi_hl_open_stats(const uct_gaudi_hl_t *hl,
                                     struct hl_open_stats_info *stats);

/* GET_EVENTS: the notifier events of this open file since the last call,
 * which clears them (compute node only) */
ucs_status_t uct_gaudi_hl_get_events(const uct_gaudi_hl_t *hl,
                                     uint64_t *events);

/* PAGE_FAULT_EVENT: the device's first page fault since its compute node
 * was opened, all zero if none; UCS_ERR_UNSUPPORTED on Linux 6.1 */
ucs_status_t
uct_gaudi_hl_page_fault_info(const uct_gaudi_hl_t *hl,
                             struct gaudi_hl_page_fault_info *info);


/**
 * DRM_IOCTL_VERSION through libdrm's drmGetVersion(). Only DRM accel
 * compute nodes answer it (facts 1.5); legacy misc-era nodes, control
 * nodes and Habana builds without DRM accel answer ENOTTY, which gives
 * UCS_ERR_UNSUPPORTED. Every failure is logged at debug level only (the
 * identity is informational). Strings are truncated to the fields' sizes.
 */
ucs_status_t uct_gaudi_hl_drm_version(const uct_gaudi_hl_t *hl,
                                      uct_gaudi_hl_drm_version_t *version);


/* MEMORY (facts 3, 4) */

/* ALLOC device memory; flags HL_MEM_CONTIGUOUS/SHARED; page size default */
ucs_status_t uct_gaudi_hl_mem_alloc(const uct_gaudi_hl_t *hl, uint64_t size,
                                    uint32_t flags, uint64_t *handle);

ucs_status_t uct_gaudi_hl_mem_free(const uct_gaudi_hl_t *hl, uint64_t handle);

/* Gaudi1 (no DRAM MMU): give @a size bytes back to the driver's usage
 * accounting of ALLOC; its FREE reads a size, not a handle (facts 3.2) */
ucs_status_t uct_gaudi_hl_mem_free_size(const uct_gaudi_hl_t *hl,
                                        uint64_t size);

/* MAP an ALLOC handle into the device VA space */
ucs_status_t uct_gaudi_hl_mem_map_device(const uct_gaudi_hl_t *hl,
                                         uint64_t handle, uint64_t hint,
                                         uint64_t *va);

/* MAP host memory (HL_MEM_USERPTR); the VA keeps ptr's sub-page offset */
ucs_status_t uct_gaudi_hl_mem_map_host(const uct_gaudi_hl_t *hl,
                                       const void *ptr, size_t size,
                                       uint64_t hint, uint64_t *va);

/* UNMAP a VA exactly as returned by a map call */
ucs_status_t uct_gaudi_hl_mem_unmap(const uct_gaudi_hl_t *hl, uint64_t va);

/**
 * UNMAP of a device-memory mapping that may have been exported: EINVAL
 * (a dma-buf exported from it is still alive somewhere, e.g. imported by
 * another process, facts 3.3) and EBUSY (device not operational) are
 * expected by the contract (the caller keeps the mapping and retries) and
 * logged at debug level only.
 */
ucs_status_t uct_gaudi_hl_mem_unmap_exported(const uct_gaudi_hl_t *hl,
                                             uint64_t va);

/* EXPORT_DMABUF_FD {addr, mem_size, offset}; file flags e.g. O_RDWR|O_CLOEXEC */
ucs_status_t uct_gaudi_hl_export_dmabuf(const uct_gaudi_hl_t *hl,
                                        uint64_t addr, uint64_t size,
                                        uint64_t offset, uint32_t flags,
                                        int *dmabuf_fd);

/**
 * Probe for EXPORT_DMABUF_FD without side effects (address and size 0).
 * EINVAL (the driver checked the arguments) -> *supported = 1; EOPNOTSUPP
 * (Linux 6.1 on an ASIC with DRAM virtual memory, facts 4.1) or ENOTTY ->
 * *supported = 0, logged at debug level only. Other errors are returned.
 */
ucs_status_t uct_gaudi_hl_probe_export(const uct_gaudi_hl_t *hl,
                                       int *supported);

/* REG_DMABUF_FD (op 99, Habana driver only): import a dma-buf, get a VA */
ucs_status_t uct_gaudi_hl_reg_dmabuf(const uct_gaudi_hl_t *hl, int dmabuf_fd,
                                     uint64_t length, uint64_t *va);

/**
 * Probe for op 99 without side effects: REG_DMABUF_FD with a closed fd
 * number (INT_MAX).
 * EBADF (the driver knows op 99 and rejected the fd) -> *supported = 1;
 * EINVAL (upstream "unknown opcode", facts 4.3, 7.2) or ENOTTY/EOPNOTSUPP
 * -> *supported = 0. Both give UCS_OK and are logged at debug level only.
 * Other errors (e.g. EBUSY while the device is in reset) are returned.
 */
ucs_status_t uct_gaudi_hl_probe_reg_dmabuf(const uct_gaudi_hl_t *hl,
                                           int *supported);


/* Command buffers (facts 5.1) */

ucs_status_t uct_gaudi_hl_cb_create(const uct_gaudi_hl_t *hl, uint32_t size,
                                    uint32_t flags, uint64_t *handle);

ucs_status_t uct_gaudi_hl_cb_destroy(const uct_gaudi_hl_t *hl,
                                     uint64_t handle);

/* Device VA of a CB created with HL_CB_FLAGS_MAP */
ucs_status_t uct_gaudi_hl_cb_device_va(const uct_gaudi_hl_t *hl,
                                       uint64_t handle, uint64_t *va);

/* mmap a kernel CB; size = the page-aligned CB size (once per CB) */
ucs_status_t uct_gaudi_hl_cb_mmap(const uct_gaudi_hl_t *hl, uint64_t handle,
                                  size_t size, void **ptr_p);

ucs_status_t uct_gaudi_hl_cb_munmap(const uct_gaudi_hl_t *hl, void *ptr,
                                    size_t size);


/* Command submission (facts 5.2) */

/**
 * Submit @a num execute chunks. EAGAIN (too many CS in flight or queue
 * full) is flow control: UCS_ERR_NO_RESOURCE, logged at debug level only.
 */
ucs_status_t uct_gaudi_hl_cs_submit(const uct_gaudi_hl_t *hl,
                                    const struct hl_cs_chunk *chunks,
                                    unsigned num, uint32_t cs_flags,
                                    uint64_t *seq);

/**
 * WAIT_CS with a relative timeout (0 = poll).
 * UCS_OK: completed (or GONE); UCS_INPROGRESS: still busy (not logged);
 * UCS_ERR_TIMED_OUT: the CS timed out on the device; UCS_ERR_IO_ERROR:
 * aborted by a reset; UCS_ERR_BUSY: device not operational.
 * @a cs_status (may be NULL) gets HL_WAIT_CS_STATUS_*.
 */
ucs_status_t uct_gaudi_hl_cs_wait(const uct_gaudi_hl_t *hl, uint64_t seq,
                                  uint64_t timeout_us, uint32_t *cs_status);

END_C_DECLS

#endif
