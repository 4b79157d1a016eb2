/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gaudi_ipc_ep.h"

#include <ucs/debug/log.h>
#include <inttypes.h>
#include <ucs/type/class.h>


static UCS_CLASS_INIT_FUNC(uct_gaudi_ipc_ep_t, const uct_ep_params_t *params)
{
    uct_gaudi_ipc_iface_t *iface = ucs_derived_of(params->iface,
                                                  uct_gaudi_ipc_iface_t);
    const uct_gaudi_ipc_iface_addr_t *addr;

    UCT_EP_PARAMS_CHECK_DEV_IFACE_ADDRS(params);
    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    addr              = (const uct_gaudi_ipc_iface_addr_t*)params->iface_addr;
    self->pid         = addr->pid;
    self->pidns       = addr->pidns;
    self->num_pending = 0;
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gaudi_ipc_ep_t)
{
    uct_gaudi_ipc_ep_pending_purge(&self->super.super, NULL, NULL);
}

UCS_CLASS_DEFINE(uct_gaudi_ipc_ep_t, uct_base_ep_t)
UCS_CLASS_DEFINE_NEW_FUNC(uct_gaudi_ipc_ep_t, uct_ep_t,
                          const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_gaudi_ipc_ep_t, uct_ep_t);


void uct_gaudi_ipc_ep_zcopy_done(void *arg, ucs_status_t status)
{
    uct_gaudi_ipc_desc_t *desc     = arg;
    uct_gaudi_ipc_iface_t *iface   = desc->iface;
    uct_gaudi_ipc_region_t *region = desc->region;

    if (status != UCS_OK) {
        ucs_error("gaudi_ipc: %s of %zu bytes with pid %d buffer 0x%" PRIx64
                  " failed: %s", desc->name, desc->length, region->peer->pid,
                  region->base, ucs_status_string(status));
    } else if (!uct_gaudi_ipc_cache_peer_alive(&iface->cache,
                                               region->peer)) {
        /* the copy ran, but its peer is gone: the data went nowhere (put)
         * or may be torn (get) */
        ucs_error("gaudi_ipc: exporter pid %d exited during %s of %zu bytes "
                  "(buffer 0x%" PRIx64 "): transfer failed",
                  region->peer->pid, desc->name, desc->length, region->base);
        status = UCS_ERR_CONNECTION_RESET;
    }

    uct_gaudi_reg_dma_release(&iface->reg, &desc->local);
    uct_gaudi_ipc_cache_put(&iface->cache, region);
    ++iface->xfer.delivered;

    if (!iface->xfer.closing && (desc->comp != NULL)) {
        uct_invoke_completion(desc->comp, status);
    }
    ucs_mpool_put(desc);
}

/* [remote_addr, +length) must lie inside the registration of the key */
static ucs_status_t
uct_gaudi_ipc_ep_check_key(const uct_gaudi_ipc_rkey_t *key,
                           uint64_t remote_addr, size_t length,
                           const char *name)
{
    if ((remote_addr >= key->base) &&
        (length <= key->base + key->length - remote_addr)) {
        return UCS_OK;
    }

    ucs_error("gaudi_ipc: %s of [0x%" PRIx64 ", +%zu) outside pid %d "
              "buffer [0x%" PRIx64 ", +%" PRIu64 ")", name, remote_addr,
              length, key->pid, key->base, key->length);
    return UCS_ERR_INVALID_PARAM;
}

static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gaudi_ipc_ep_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                       uint64_t remote_addr, uct_rkey_t rkey,
                       uct_completion_t *comp, int is_put)
{
    uct_gaudi_ipc_iface_t *iface    = ucs_derived_of(tl_ep->iface,
                                                     uct_gaudi_ipc_iface_t);
    const uct_gaudi_ipc_rkey_t *key = (const uct_gaudi_ipc_rkey_t*)rkey;
    const char *name                = is_put ? "put_zcopy" : "get_zcopy";
    uct_gaudi_ipc_region_t *region;
    uct_gaudi_ipc_desc_t *desc;
    uct_gaudi_dma_xfer_t xfer;
    uint64_t remote;
    ucs_status_t status;
    size_t length;

    UCT_CHECK_IOV_SIZE(iovcnt, 1ul, name);
    if (ucs_unlikely(iface->dma == NULL)) {
        ucs_error("gaudi_ipc: %s: %s", name, iface->reason);
        return UCS_ERR_UNSUPPORTED;
    }

    length = (iovcnt == 0) ? 0 : iov->length * iov->count;
    if (length == 0) {
        return UCS_OK;
    }
    if ((iov->count > 1) && (iov->stride != iov->length)) {
        return UCS_ERR_UNSUPPORTED; /* strided: not offered (max_iov 1) */
    }

    status = uct_gaudi_ipc_ep_check_key(key, remote_addr, length, name);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gaudi_iface_fence_wait(&iface->xfer, iface->dma);
    if (status != UCS_OK) {
        return status;
    }

    if (uct_gaudi_iface_must_queue(&iface->xfer) ||
        !uct_gaudi_dma_can_submit(iface->dma)) {
        return UCS_ERR_NO_RESOURCE;
    }

    status = uct_gaudi_ipc_cache_get(&iface->cache, key, &region);
    if (status != UCS_OK) {
        return status;
    }

    desc = ucs_mpool_get(&iface->desc_mp);
    if (desc == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err_put;
    }

    /* the local buffer: our device memory, or host memory mapped through
     * the copy MD's registration cache */
    status = uct_gaudi_reg_dma_resolve(&iface->reg, iov->buffer, length,
                                           NULL, &desc->local);
    if (status != UCS_OK) {
        goto err_desc;
    }

    /* the imported VA is in the host (PMMU) range: PDMA addresses it like
     * host memory (facts 4.3) */
    remote   = region->va + region->offset + (remote_addr - region->base);
    xfer.src = is_put ? desc->local.dma_addr : remote;
    xfer.dst = is_put ? remote : desc->local.dma_addr;
    xfer.length = length;

    desc->iface  = iface;
    desc->comp   = comp;
    desc->region = region;
    desc->name   = name;
    desc->length = length;

    status = uct_gaudi_dma_submit(iface->dma, &xfer, 1, name,
                                  uct_gaudi_ipc_ep_zcopy_done, desc);
    if (status != UCS_INPROGRESS) {
        if (status == UCS_OK) {
            status = UCS_ERR_IO_ERROR; /* cannot happen: length > 0 */
        }
        uct_gaudi_reg_dma_release(&iface->reg, &desc->local);
        goto err_desc;
    }

    ++iface->xfer.submitted;
    if (is_put) {
        UCT_TL_EP_STAT_OP(ucs_derived_of(tl_ep, uct_base_ep_t), PUT, ZCOPY,
                          length);
    } else {
        UCT_TL_EP_STAT_OP(ucs_derived_of(tl_ep, uct_base_ep_t), GET, ZCOPY,
                          length);
    }
    ucs_trace_data("gaudi_ipc: %s %p <-> pid %d 0x%" PRIx64 " %zu bytes",
                   name, iov->buffer, key->pid, remote_addr, length);
    return UCS_INPROGRESS;

err_desc:
    ucs_mpool_put(desc);
err_put:
    uct_gaudi_ipc_cache_put(&iface->cache, region);
    return status;
}

ucs_status_t uct_gaudi_ipc_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                        size_t iovcnt, uint64_t remote_addr,
                                        uct_rkey_t rkey,
                                        uct_completion_t *comp)
{
    return uct_gaudi_ipc_ep_zcopy(tl_ep, iov, iovcnt, remote_addr, rkey,
                                  comp, 1);
}

ucs_status_t uct_gaudi_ipc_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                        size_t iovcnt, uint64_t remote_addr,
                                        uct_rkey_t rkey,
                                        uct_completion_t *comp)
{
    return uct_gaudi_ipc_ep_zcopy(tl_ep, iov, iovcnt, remote_addr, rkey,
                                  comp, 0);
}


/*
 * Synchronous copies (short, bcopy): what UCP asks of a transport before it
 * takes it as an RMA lane (ucp/wireup/select.c, ucp_wireup_add_rma_lanes);
 * UCX 1.13's new protocols then put/get Gaudi memory on gaudi_ipc.
 */

/* Import the peer's range and take a reference on its region */
static ucs_status_t
uct_gaudi_ipc_ep_sync_begin(uct_gaudi_ipc_iface_t *iface,
                            const uct_gaudi_ipc_rkey_t *key,
                            uint64_t remote_addr, size_t length,
                            const char *name,
                            uct_gaudi_ipc_region_t **region_p,
                            uint64_t *remote_p)
{
    uct_gaudi_ipc_region_t *region;
    ucs_status_t status;

    if (ucs_unlikely(iface->dma == NULL)) {
        ucs_error("gaudi_ipc: %s: %s", name, iface->reason);
        return UCS_ERR_UNSUPPORTED;
    }

    status = uct_gaudi_ipc_ep_check_key(key, remote_addr, length, name);
    if (status != UCS_OK) {
        return status;
    }

    /* queued requests go first */
    if (uct_gaudi_iface_must_queue(&iface->xfer)) {
        return UCS_ERR_NO_RESOURCE;
    }

    status = uct_gaudi_iface_fence_wait(&iface->xfer, iface->dma);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gaudi_ipc_cache_get(&iface->cache, key, &region);
    if (status != UCS_OK) {
        return status;
    }

    *region_p = region;
    *remote_p = region->va + region->offset + (remote_addr - region->base);
    return UCS_OK;
}

/* Drop the region; a copy whose exporter died meanwhile went nowhere */
static ucs_status_t
uct_gaudi_ipc_ep_sync_end(uct_gaudi_ipc_iface_t *iface,
                          uct_gaudi_ipc_region_t *region, size_t length,
                          const char *name, ucs_status_t status)
{
    if ((status == UCS_OK) &&
        !uct_gaudi_ipc_cache_peer_alive(&iface->cache, region->peer)) {
        ucs_error("gaudi_ipc: exporter pid %d exited during %s of %zu bytes "
                  "(buffer 0x%" PRIx64 "): transfer failed",
                  region->peer->pid, name, length, region->base);
        status = UCS_ERR_CONNECTION_RESET;
    }
    uct_gaudi_ipc_cache_put(&iface->cache, region);
    return status;
}

/* @a local (host or this process's Gaudi memory) <-> @a remote */
static ucs_status_t
uct_gaudi_ipc_ep_sync_copy(uct_gaudi_ipc_iface_t *iface, void *local,
                           uint64_t remote, size_t length, int is_put,
                           const char *name)
{
    uct_gaudi_dma_ref_t ref;
    uct_gaudi_dma_xfer_t xfer;
    ucs_status_t status;

    if (!uct_gaudi_heap_in_window(iface->reg.heap, (uintptr_t)local,
                                  length)) {
        /* host memory: staged through the engine's mapped bounce buffer */
        return uct_gaudi_dma_short(iface->dma, is_put, local, remote, length,
                                   name);
    }

    status = uct_gaudi_reg_dma_resolve(&iface->reg, local, length, NULL,
                                           &ref);
    if (status != UCS_OK) {
        return status;
    }
    xfer.src    = is_put ? ref.dma_addr : remote;
    xfer.dst    = is_put ? remote : ref.dma_addr;
    xfer.length = length;
    status      = uct_gaudi_dma_copy(iface->dma, &xfer, 1, name);
    uct_gaudi_reg_dma_release(&iface->reg, &ref);
    return status;
}

/*
 * One synchronous copy between @a local (host or this process's Gaudi
 * memory; NULL: the engine's bounce buffer) and the peer's
 * [remote_addr, +length)
 */
static ucs_status_t
uct_gaudi_ipc_ep_sync_xfer(uct_gaudi_ipc_iface_t *iface, void *local,
                           uint64_t remote_addr, uct_rkey_t rkey,
                           size_t length, int is_put, const char *name)
{
    uct_gaudi_ipc_region_t *region;
    uint64_t remote;
    ucs_status_t status;

    if (length == 0) {
        return UCS_OK;
    }

    status = uct_gaudi_ipc_ep_sync_begin(iface,
                                         (const uct_gaudi_ipc_rkey_t*)rkey,
                                         remote_addr, length, name, &region,
                                         &remote);
    if (status != UCS_OK) {
        return status;
    }

    if (local == NULL) {
        status = uct_gaudi_dma_bounce_copy(iface->dma, is_put, remote, length,
                                           name);
    } else {
        status = uct_gaudi_ipc_ep_sync_copy(iface, local, remote, length,
                                            is_put, name);
    }
    return uct_gaudi_ipc_ep_sync_end(iface, region, length, name, status);
}

ucs_status_t uct_gaudi_ipc_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                        unsigned length, uint64_t remote_addr,
                                        uct_rkey_t rkey)
{
    ucs_status_t status;

    status = uct_gaudi_ipc_ep_sync_xfer(ucs_derived_of(tl_ep->iface,
                                                       uct_gaudi_ipc_iface_t),
                                        (void*)buffer, remote_addr, rkey,
                                        length, 1, "put_short");
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, ucs_derived_of(tl_ep, uct_base_ep_t),
                                 PUT, SHORT, length);
    return status;
}

ucs_status_t uct_gaudi_ipc_ep_get_short(uct_ep_h tl_ep, void *buffer,
                                        unsigned length, uint64_t remote_addr,
                                        uct_rkey_t rkey)
{
    ucs_status_t status;

    status = uct_gaudi_ipc_ep_sync_xfer(ucs_derived_of(tl_ep->iface,
                                                       uct_gaudi_ipc_iface_t),
                                        buffer, remote_addr, rkey, length, 0,
                                        "get_short");
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, ucs_derived_of(tl_ep, uct_base_ep_t),
                                 GET, SHORT, length);
    return status;
}

ssize_t uct_gaudi_ipc_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                                   void *arg, uint64_t remote_addr,
                                   uct_rkey_t rkey)
{
    uct_gaudi_ipc_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                                  uct_gaudi_ipc_iface_t);
    size_t size, length;
    ucs_status_t status;
    void *bounce;

    if (ucs_unlikely(iface->dma == NULL)) {
        ucs_error("gaudi_ipc: put_bcopy: %s", iface->reason);
        return UCS_ERR_UNSUPPORTED;
    }

    /* pack first: the range to import is known only then */
    bounce = uct_gaudi_dma_bounce(iface->dma, &size);
    length = pack_cb(bounce, arg);
    if (ucs_unlikely(length > size)) {
        ucs_error("gaudi_ipc: put_bcopy packed %zu bytes, max_bcopy is %zu",
                  length, size);
        return UCS_ERR_EXCEEDS_LIMIT;
    } else if (length == 0) {
        return 0;
    }

    status = uct_gaudi_ipc_ep_sync_xfer(iface, NULL, remote_addr, rkey,
                                        length, 1, "put_bcopy");
    if (status != UCS_OK) {
        return status;
    }

    UCT_TL_EP_STAT_OP(ucs_derived_of(tl_ep, uct_base_ep_t), PUT, BCOPY,
                      length);
    return length;
}

ucs_status_t uct_gaudi_ipc_ep_get_bcopy(uct_ep_h tl_ep,
                                        uct_unpack_callback_t unpack_cb,
                                        void *arg, size_t length,
                                        uint64_t remote_addr, uct_rkey_t rkey,
                                        uct_completion_t *comp)
{
    uct_gaudi_ipc_iface_t *iface = ucs_derived_of(tl_ep->iface,
                                                  uct_gaudi_ipc_iface_t);
    ucs_status_t status;
    size_t size;
    void *bounce;

    if (length == 0) {
        return UCS_OK;
    } else if (ucs_unlikely(iface->dma == NULL)) {
        ucs_error("gaudi_ipc: get_bcopy: %s", iface->reason);
        return UCS_ERR_UNSUPPORTED;
    }

    bounce = uct_gaudi_dma_bounce(iface->dma, &size);
    if (ucs_unlikely(length > size)) {
        ucs_error("gaudi_ipc: get_bcopy of %zu bytes exceeds max_bcopy %zu",
                  length, size);
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    status = uct_gaudi_ipc_ep_sync_xfer(iface, NULL, remote_addr, rkey,
                                        length, 0, "get_bcopy");
    if (status != UCS_OK) {
        return status;
    }

    unpack_cb(arg, bounce, length);
    UCT_TL_EP_STAT_OP(ucs_derived_of(tl_ep, uct_base_ep_t), GET, BCOPY,
                      length);
    return UCS_OK;
}
