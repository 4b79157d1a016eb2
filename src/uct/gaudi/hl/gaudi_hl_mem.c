/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The habanalabs MEMORY ioctl: device memory, host and device mappings,
 * DMA-BUF export and import (see gaudi_hl.h). "facts N" refers to section
 * N of docs/driver-facts.md.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/hl/gaudi_hl_int.h>

#include <ucs/debug/log.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>


/* MEMORY args with the newer "in" forms (EXPORT {addr,size,offset}, op 99) */
typedef union {
    struct gaudi_hl_mem_in in;
    struct hl_mem_out      out;
} uct_gaudi_hl_mem_args_t;

static_assert(sizeof(uct_gaudi_hl_mem_args_t) == sizeof(union hl_mem_args),
              "MEMORY args size");


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
