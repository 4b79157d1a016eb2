/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The habanalabs CB and CS ioctls: command buffers and command submission
 * (see gaudi_hl.h). "facts N" refers to section N of docs/driver-facts.md.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/hl/gaudi_hl_int.h>

#include <ucs/debug/log.h>

#include <sys/mman.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>


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
