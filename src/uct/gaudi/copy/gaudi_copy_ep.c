/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * gaudi_cpy ep: data operations. Buffers become DMA addresses through the
 * memory layer (mem/gaudi_reg.h); device addresses are never dereferenced.
 * - short, bcopy: synchronous; host buffers go through the engine's
 *   pre-mapped bounce buffer (no registration, no lookup on the hot path);
 * - zcopy: asynchronous, one CS per operation, completed from progress;
 * - host to host before the iface has a device: the CPU copies.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gaudi_copy_ep.h"
#include "gaudi_copy_iface.h"

#include <uct/base/uct_iov.inl>
#include <ucs/debug/log.h>
#include <ucs/profile/profile.h>
#include <ucs/type/class.h>
#include <inttypes.h>
#include <string.h>


static UCS_F_ALWAYS_INLINE uct_gaudi_copy_iface_t *
uct_gaudi_copy_ep_iface(uct_ep_h tl_ep)
{
    return ucs_derived_of(tl_ep->iface, uct_gaudi_copy_iface_t);
}

/* Gaudi memory is told by its first byte; resolving checks the range */
static UCS_F_ALWAYS_INLINE int
uct_gaudi_copy_is_dev(uct_gaudi_copy_iface_t *iface, const void *ptr)
{
    return uct_gaudi_heap_in_window(iface->md->heap, (uintptr_t)ptr, 1);
}

/*
 * Before this iface has a device, the process may have no Gaudi memory at
 * all (the device is taken when the first Gaudi buffer appears, allocated
 * by UCX or borrowed from SynapseAI): ranges outside the Gaudi window are
 * then host memory on both ends, which the CPU copies without taking a
 * device (UCX's own suites move host buffers on every transport).
 */
static UCS_F_ALWAYS_INLINE int
uct_gaudi_copy_host_only(uct_gaudi_copy_iface_t *iface, const void *dst,
                         const void *src)
{
    return (iface->super.dma == NULL) && !uct_gaudi_copy_is_dev(iface, dst) &&
           ((src == NULL) || !uct_gaudi_copy_is_dev(iface, src));
}

/* The remote range must be covered by @a rkey of this device */
static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gaudi_copy_check_rkey(uct_gaudi_copy_iface_t *iface, uct_rkey_t rkey,
                          uint64_t remote_addr, size_t length)
{
    if ((rkey == UCT_INVALID_RKEY) || (length == 0)) {
        return UCS_OK;
    }

    return uct_gaudi_copy_rkey_check(iface->md, rkey, remote_addr, length);
}

/*
 * Synchronous copy of @a length bytes from @a src to @a dst, either of
 * which may be Gaudi memory (the engine's any-pair copy)
 */
static ucs_status_t uct_gaudi_copy_sync(uct_gaudi_copy_iface_t *iface,
                                        void *dst, const void *src,
                                        size_t length, const char *name)
{
    uct_gaudi_heap_t *heap = iface->md->heap;
    uct_gaudi_dma_end_t dst_end, src_end;
    ucs_status_t status;

    if (ucs_unlikely(length == 0)) {
        return UCS_OK;
    } else if (uct_gaudi_copy_host_only(iface, dst, src)) {
        memcpy(dst, src, length);
        return UCS_OK;
    }

    status = uct_gaudi_iface_op_start(&iface->super, 0);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gaudi_heap_dma_end(heap, dst, length, name, &dst_end);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gaudi_heap_dma_end(heap, src, length, name, &src_end);
    if (status != UCS_OK) {
        return status;
    }

    return uct_gaudi_dma_copy_sync(iface->super.dma, &dst_end, &src_end,
                                   length, name);
}

/*
 * A short copy is UCP's memory-type copy (ucp/dt/dt.c: a received message
 * unpacked into Gaudi memory, a sent one packed from it), whose status UCX
 * 1.13 logs and drops: a failed copy there would hand the application a
 * completed request with wrong data. So a failed copy is run once more
 * (copies are idempotent) before its error is returned.
 */
static ucs_status_t uct_gaudi_copy_short(uct_gaudi_copy_iface_t *iface,
                                         void *dst, const void *src,
                                         size_t length, const char *name)
{
    ucs_status_t status;

    status = uct_gaudi_copy_sync(iface, dst, src, length, name);
    if ((status == UCS_OK) || (status == UCS_ERR_NO_RESOURCE)) {
        return status;
    }

    ucs_diag("gaudi_cpy: %s of %zu bytes failed (%s): running it again",
             name, length, ucs_status_string(status));
    return uct_gaudi_copy_sync(iface, dst, src, length, name);
}

UCS_PROFILE_FUNC(ucs_status_t, uct_gaudi_copy_ep_put_short,
                 (tl_ep, buffer, length, remote_addr, rkey),
                 uct_ep_h tl_ep, const void *buffer, unsigned length,
                 uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_gaudi_copy_iface_t *iface = uct_gaudi_copy_ep_iface(tl_ep);
    ucs_status_t status;

    status = uct_gaudi_copy_check_rkey(iface, rkey, remote_addr, length);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gaudi_copy_short(iface, (void*)remote_addr, buffer, length,
                                  "put_short");
    UCT_TL_EP_STAT_OP(ucs_derived_of(tl_ep, uct_base_ep_t), PUT, SHORT,
                      length);
    ucs_trace_data("PUT_SHORT size %u from %p to 0x%" PRIx64 ": %s", length,
                   buffer, remote_addr, ucs_status_string(status));
    return status;
}

UCS_PROFILE_FUNC(ucs_status_t, uct_gaudi_copy_ep_get_short,
                 (tl_ep, buffer, length, remote_addr, rkey),
                 uct_ep_h tl_ep, void *buffer, unsigned length,
                 uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_gaudi_copy_iface_t *iface = uct_gaudi_copy_ep_iface(tl_ep);
    ucs_status_t status;

    status = uct_gaudi_copy_check_rkey(iface, rkey, remote_addr, length);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gaudi_copy_short(iface, buffer, (void*)remote_addr, length,
                                  "get_short");
    UCT_TL_EP_STAT_OP(ucs_derived_of(tl_ep, uct_base_ep_t), GET, SHORT,
                      length);
    ucs_trace_data("GET_SHORT size %u from 0x%" PRIx64 " to %p: %s", length,
                   remote_addr, buffer, ucs_status_string(status));
    return status;
}

/* put_bcopy to host memory without a device: packed, checked, copied */
static ssize_t
uct_gaudi_copy_put_bcopy_host(uct_gaudi_copy_iface_t *iface,
                              uct_pack_callback_t pack_cb, void *arg,
                              uint64_t remote_addr, uct_rkey_t rkey)
{
    ucs_status_t status;
    size_t length;
    void *buf;

    /* max_bcopy, as the iface reports it */
    buf = ucs_malloc(uct_gaudi_iface_bounce_size(&iface->super),
                     "gaudi_cpy put_bcopy");
    if (buf == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    length = pack_cb(buf, arg);
    status = uct_gaudi_copy_check_rkey(iface, rkey, remote_addr, length);
    if (status == UCS_OK) {
        memcpy((void*)remote_addr, buf, length);
    }
    ucs_free(buf);
    ucs_trace_data("PUT_BCOPY size %zu to host 0x%" PRIx64 ": %s", length,
                   remote_addr, ucs_status_string(status));
    return (status == UCS_OK) ? (ssize_t)length : (ssize_t)status;
}

ssize_t uct_gaudi_copy_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                                    void *arg, uint64_t remote_addr,
                                    uct_rkey_t rkey)
{
    uct_gaudi_copy_iface_t *iface = uct_gaudi_copy_ep_iface(tl_ep);
    uint64_t dma_addr;
    ucs_status_t status;
    size_t length, size;
    void *bounce;

    if (uct_gaudi_copy_host_only(iface, (void*)remote_addr, NULL)) {
        return uct_gaudi_copy_put_bcopy_host(iface, pack_cb, arg,
                                             remote_addr, rkey);
    }

    status = uct_gaudi_iface_op_start(&iface->super, 0);
    if (status != UCS_OK) {
        return status;
    }

    /* pack straight into the pre-mapped bounce buffer */
    bounce = uct_gaudi_dma_bounce(iface->super.dma, &size);
    length = pack_cb(bounce, arg);
    ucs_assert(length <= size);

    status = uct_gaudi_copy_check_rkey(iface, rkey, remote_addr, length);
    if ((status != UCS_OK) || (length == 0)) {
        goto out;
    }

    if (!uct_gaudi_copy_is_dev(iface, (void*)remote_addr)) {
        memcpy((void*)remote_addr, bounce, length);
        goto out;
    }

    status = uct_gaudi_heap_dma_addr(iface->md->heap, (void*)remote_addr,
                                     length, &dma_addr);
    if (status == UCS_OK) {
        status = uct_gaudi_dma_bounce_copy(iface->super.dma, 1, dma_addr,
                                           length, "put_bcopy");
    }

out:
    ucs_trace_data("PUT_BCOPY size %zu to 0x%" PRIx64 ": %s", length,
                   remote_addr, ucs_status_string(status));
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, ucs_derived_of(tl_ep, uct_base_ep_t),
                                 PUT, BCOPY, length);
    return (status == UCS_OK) ? (ssize_t)length : (ssize_t)status;
}

ucs_status_t uct_gaudi_copy_ep_get_bcopy(uct_ep_h tl_ep,
                                         uct_unpack_callback_t unpack_cb,
                                         void *arg, size_t length,
                                         uint64_t remote_addr, uct_rkey_t rkey,
                                         uct_completion_t *comp)
{
    uct_gaudi_copy_iface_t *iface = uct_gaudi_copy_ep_iface(tl_ep);
    uint64_t dma_addr;
    ucs_status_t status;
    void *bounce;
    size_t size;

    if (uct_gaudi_copy_host_only(iface, (void*)remote_addr, NULL)) {
        status = uct_gaudi_copy_check_rkey(iface, rkey, remote_addr, length);
        if (status == UCS_OK) {
            unpack_cb(arg, (void*)remote_addr, length);
        }
        ucs_trace_data("GET_BCOPY size %zu from host 0x%" PRIx64 ": %s",
                       length, remote_addr, ucs_status_string(status));
        return status;
    }

    status = uct_gaudi_iface_dma_get(&iface->super, "get_bcopy");
    if (status != UCS_OK) {
        return status;
    }

    bounce = uct_gaudi_dma_bounce(iface->super.dma, &size);
    if (length > size) {
        ucs_error("%s: get_bcopy of %zu bytes exceeds max_bcopy %zu",
                  uct_gaudi_dma_dev_name(iface->super.dma), length, size);
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    status = uct_gaudi_copy_check_rkey(iface, rkey, remote_addr, length);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gaudi_iface_op_start(&iface->super, 0);
    if (status != UCS_OK) {
        return status;
    }

    if ((length == 0) || !uct_gaudi_copy_is_dev(iface, (void*)remote_addr)) {
        unpack_cb(arg, (void*)remote_addr, length);
        goto out;
    }

    status = uct_gaudi_heap_dma_addr(iface->md->heap, (void*)remote_addr,
                                     length, &dma_addr);
    if (status == UCS_OK) {
        status = uct_gaudi_dma_bounce_copy(iface->super.dma, 0, dma_addr,
                                           length, "get_bcopy");
    }
    if (status != UCS_OK) {
        /* UCX 1.13's get protocols cannot take a synchronous failure */
        return uct_gaudi_iface_fail_later(&iface->super, comp, status);
    }

    unpack_cb(arg, bounce, length);

out:
    ucs_trace_data("GET_BCOPY size %zu from 0x%" PRIx64, length, remote_addr);
    UCT_TL_EP_STAT_OP(ucs_derived_of(tl_ep, uct_base_ep_t), GET, BCOPY,
                      length);
    return UCS_OK;
}


/* zcopy */

/* Turn @a iov and the remote range into DMA transfers held by @a desc */
static ucs_status_t
uct_gaudi_copy_zcopy_xfers(uct_gaudi_copy_iface_t *iface,
                           uct_gaudi_iface_desc_t *desc, const uct_iov_t *iov,
                           size_t iovcnt, uint64_t remote_addr, size_t total,
                           int is_put, uct_gaudi_dma_xfer_t *xfers,
                           unsigned *count_p)
{
    const uct_gaudi_dma_ref_t *remote, *local;
    unsigned count = 0;
    ucs_status_t status;
    size_t i, k, off = 0;
    void *buffer;

    /* remote: Gaudi memory (translated) or host memory (registered) */
    status = uct_gaudi_reg_dma_resolve(iface->super.reg, (void*)remote_addr,
                                       total, UCT_MEM_HANDLE_NULL,
                                       &desc->refs[desc->num_refs]);
    if (status != UCS_OK) {
        return status;
    }
    remote = &desc->refs[desc->num_refs++];

    for (i = 0; i < iovcnt; i++) {
        for (k = 0; (k < ucs_max(iov[i].count, 1)) && iov[i].length; k++) {
            if (count == iface->config.max_iov) {
                ucs_error("%s: zcopy of more than %u iov elements",
                          uct_gaudi_dma_dev_name(iface->super.dma),
                          iface->config.max_iov);
                return UCS_ERR_EXCEEDS_LIMIT;
            }

            buffer = UCS_PTR_BYTE_OFFSET(iov[i].buffer, k * iov[i].stride);
            status = uct_gaudi_reg_dma_resolve(
                    iface->super.reg, buffer, iov[i].length, iov[i].memh,
                    &desc->refs[desc->num_refs]);
            if (status != UCS_OK) {
                return status;
            }
            local = &desc->refs[desc->num_refs++];
            if (is_put) {
                uct_gaudi_reg_xfer(&xfers[count], remote, off, local, 0,
                                   iov[i].length);
            } else {
                uct_gaudi_reg_xfer(&xfers[count], local, 0, remote, off,
                                   iov[i].length);
            }
            off += iov[i].length;
            count++;
        }
    }

    *count_p = count;
    return UCS_OK;
}

/* A zcopy between host buffers without a device, done by the CPU: 1 */
static int uct_gaudi_copy_zcopy_host(uct_gaudi_copy_iface_t *iface,
                                     const uct_iov_t *iov, size_t iovcnt,
                                     uint64_t remote_addr, int is_put)
{
    void *remote = (void*)remote_addr, *buffer;
    size_t i, k;

    if (!uct_gaudi_copy_host_only(iface, remote, NULL)) {
        return 0;
    }
    for (i = 0; i < iovcnt; i++) {
        if (uct_gaudi_copy_is_dev(iface, iov[i].buffer)) {
            return 0;
        }
    }

    for (i = 0; i < iovcnt; i++) {
        for (k = 0; (k < ucs_max(iov[i].count, 1)) && iov[i].length; k++) {
            buffer = UCS_PTR_BYTE_OFFSET(iov[i].buffer, k * iov[i].stride);
            if (is_put) {
                memcpy(remote, buffer, iov[i].length);
            } else {
                memcpy(buffer, remote, iov[i].length);
            }
            remote = UCS_PTR_BYTE_OFFSET(remote, iov[i].length);
        }
    }
    return 1;
}

static ucs_status_t
uct_gaudi_copy_ep_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                        uint64_t remote_addr, uct_rkey_t rkey,
                        uct_completion_t *comp, int is_put, const char *name)
{
    uct_gaudi_copy_iface_t *iface = uct_gaudi_copy_ep_iface(tl_ep);
    uct_gaudi_dma_xfer_t xfers[UCT_GAUDI_COPY_MAX_IOV];
    size_t total = uct_iov_total_length(iov, iovcnt);
    uct_gaudi_iface_desc_t *desc;
    ucs_status_t status;
    unsigned count;

    if (ucs_unlikely(total > iface->config.max_zcopy)) {
        ucs_error("gaudi %s: %s of %zu bytes exceeds max_zcopy %zu",
                  uct_gaudi_heap_name(iface->md->heap), name, total,
                  iface->config.max_zcopy);
        return UCS_ERR_EXCEEDS_LIMIT;
    } else if (ucs_unlikely(total == 0)) {
        return UCS_OK;
    }

    status = uct_gaudi_copy_check_rkey(iface, rkey, remote_addr, total);
    if (status != UCS_OK) {
        return status;
    }

    if (uct_gaudi_copy_zcopy_host(iface, iov, iovcnt, remote_addr, is_put)) {
        return UCS_OK;
    }

    /* keep the order of pending requests; resolve nothing in vain */
    status = uct_gaudi_iface_op_start(&iface->super, 1);
    if (status != UCS_OK) {
        return status;
    }

    desc = uct_gaudi_iface_desc_get(&iface->super, comp);
    if (ucs_unlikely(desc == NULL)) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_gaudi_copy_zcopy_xfers(iface, desc, iov, iovcnt, remote_addr,
                                        total, is_put, xfers, &count);
    if (status == UCS_OK) {
        status = uct_gaudi_iface_submit(&iface->super, desc, xfers, count,
                                        name);
    }

    if (status != UCS_INPROGRESS) {
        uct_gaudi_iface_desc_put(desc);
    }
    return status;
}

UCS_PROFILE_FUNC(ucs_status_t, uct_gaudi_copy_ep_put_zcopy,
                 (tl_ep, iov, iovcnt, remote_addr, rkey, comp),
                 uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                 uint64_t remote_addr, uct_rkey_t rkey,
                 uct_completion_t *comp)
{
    ucs_status_t status;

    status = uct_gaudi_copy_ep_zcopy(tl_ep, iov, iovcnt, remote_addr, rkey,
                                     comp, 1, "put_zcopy");
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, ucs_derived_of(tl_ep, uct_base_ep_t),
                                 PUT, ZCOPY, uct_iov_total_length(iov, iovcnt));
    ucs_trace_data("PUT_ZCOPY %zu bytes to 0x%" PRIx64 ": %s",
                   uct_iov_total_length(iov, iovcnt), remote_addr,
                   ucs_status_string(status));
    return status;
}

UCS_PROFILE_FUNC(ucs_status_t, uct_gaudi_copy_ep_get_zcopy,
                 (tl_ep, iov, iovcnt, remote_addr, rkey, comp),
                 uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                 uint64_t remote_addr, uct_rkey_t rkey,
                 uct_completion_t *comp)
{
    ucs_status_t status;

    status = uct_gaudi_copy_ep_zcopy(tl_ep, iov, iovcnt, remote_addr, rkey,
                                     comp, 0, "get_zcopy");
    if (ucs_unlikely(UCS_STATUS_IS_ERR(status))) {
        /* UCX 1.13's get protocols cannot take a synchronous failure */
        status = uct_gaudi_iface_fail_later(
                &uct_gaudi_copy_ep_iface(tl_ep)->super, comp, status);
    }
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, ucs_derived_of(tl_ep, uct_base_ep_t),
                                 GET, ZCOPY, uct_iov_total_length(iov, iovcnt));
    ucs_trace_data("GET_ZCOPY %zu bytes from 0x%" PRIx64 ": %s",
                   uct_iov_total_length(iov, iovcnt), remote_addr,
                   ucs_status_string(status));
    return status;
}
