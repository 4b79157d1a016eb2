/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gaudi_ipc_ep.h"

#include <uct/gaudi/base/gaudi_uct_compat.h>

#include <uct/base/uct_iov.inl>
#include <ucs/debug/log.h>
#include <inttypes.h>
#include <ucs/type/class.h>


static UCS_F_ALWAYS_INLINE uct_gaudi_ipc_iface_t *
uct_gaudi_ipc_ep_iface(uct_ep_h tl_ep)
{
    return ucs_derived_of(tl_ep->iface, uct_gaudi_ipc_iface_t);
}


/* UCX's per-operation data log, as its transports write it: every call,
 * empty and refused ones included */
static UCS_F_ALWAYS_INLINE void
uct_gaudi_ipc_ep_trace(const char *name, const void *local,
                       uint64_t remote_addr, size_t length,
                       ucs_status_t status)
{
    ucs_trace_data("gaudi_ipc: %s %p <-> 0x%" PRIx64 " %zu bytes: %s", name,
                   local, remote_addr, length, ucs_status_string(status));
}


/* Endpoint: the peer of the iface address (is_reachable checked it) */

static UCS_CLASS_INIT_FUNC(uct_gaudi_ipc_ep_t, const uct_ep_params_t *params)
{
    const uct_gaudi_ipc_device_addr_t *dev;
    const uct_gaudi_ipc_iface_addr_t *addr;

    UCS_CLASS_CALL_SUPER_INIT(uct_gaudi_ep_t, params);

    dev             = (const uct_gaudi_ipc_device_addr_t*)params->dev_addr;
    addr            = (const uct_gaudi_ipc_iface_addr_t*)params->iface_addr;
    self->system_id = dev->system_id;
    self->pidns     = addr->pidns;
    self->pid       = addr->pid;
    self->failed    = 0;

    /* the peer's start time tells its exit from a reuse of its pid */
    if (uct_ep_keepalive_init(&self->keepalive, self->pid) != UCS_OK) {
        ucs_error("gaudi_ipc: peer pid %d is not running", self->pid);
        return UCS_ERR_CONNECTION_RESET;
    }
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gaudi_ipc_ep_t)
{
}

UCS_CLASS_DEFINE(uct_gaudi_ipc_ep_t, uct_gaudi_ep_t);

/* An operation found the peer gone: report the ep's error once, now
 * rather than at the next keepalive round */
static void uct_gaudi_ipc_ep_peer_gone(uct_ep_h tl_ep, ucs_status_t status)
{
    uct_gaudi_ipc_ep_t *ep = ucs_derived_of(tl_ep, uct_gaudi_ipc_ep_t);

    if ((status == UCS_ERR_CONNECTION_RESET) && !ep->failed) {
        ep->failed = 1;
        uct_ep_keepalive_check(tl_ep, &ep->keepalive, ep->pid, 0, NULL);
    }
}

ucs_status_t uct_gaudi_ipc_ep_check(uct_ep_h tl_ep, unsigned flags,
                                    uct_completion_t *comp)
{
    uct_gaudi_ipc_ep_t *ep = ucs_derived_of(tl_ep, uct_gaudi_ipc_ep_t);

    UCT_GAUDI_EP_CHECK_PARAM(flags, comp);
    uct_ep_keepalive_check(tl_ep, &ep->keepalive, ep->pid, flags, comp);
    return UCS_OK;
}
UCS_CLASS_DEFINE_NEW_FUNC(uct_gaudi_ipc_ep_t, uct_ep_t,
                          const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_gaudi_ipc_ep_t, uct_ep_t);

/* The copy ran, but did its peer outlive it? If not, the data went
 * nowhere (put) or may be torn (get) */
static ucs_status_t
uct_gaudi_ipc_ep_check_peer(uct_gaudi_ipc_iface_t *iface,
                            uct_gaudi_ipc_region_t *region, size_t length,
                            const char *name, ucs_status_t status)
{
    uct_gaudi_ipc_peer_t *peer = region->peer;

    if ((status != UCS_OK) ||
        uct_gaudi_ipc_cache_peer_alive(&iface->cache, peer)) {
        return status;
    }

    /* once per peer: every copy in flight to it ends the same way, and
     * UCP reports the endpoint's failure itself */
    ucs_log(peer->reported ? UCS_LOG_LEVEL_DEBUG : UCS_LOG_LEVEL_ERROR,
            "gaudi_ipc: exporter pid %d exited during %s of %zu bytes "
            "(buffer 0x%" PRIx64 "): transfer failed", peer->pid, name,
            length, region->base);
    peer->reported = 1;
    return UCS_ERR_CONNECTION_RESET;
}

ucs_status_t uct_gaudi_ipc_ep_zcopy_done(uct_gaudi_iface_desc_t *super,
                                         ucs_status_t status)
{
    uct_gaudi_ipc_desc_t *desc     = ucs_derived_of(super,
                                                    uct_gaudi_ipc_desc_t);
    uct_gaudi_ipc_iface_t *iface   = ucs_derived_of(super->iface,
                                                    uct_gaudi_ipc_iface_t);
    uct_gaudi_ipc_region_t *region = desc->region;

    if (status != UCS_OK) {
        ucs_error("gaudi_ipc: %s of %zu bytes with pid %d buffer 0x%" PRIx64
                  " failed: %s", desc->name, desc->length, region->peer->pid,
                  region->base, ucs_status_string(status));
    }

    status = uct_gaudi_ipc_ep_check_peer(iface, region, desc->length,
                                         desc->name, status);
    uct_gaudi_ipc_cache_put(&iface->cache, region);
    return status;
}

/* The key was packed by the peer of @a ep, and [remote_addr, +length) lies
 * inside its registration. Unlike gaudi_cpy, gaudi_ipc cannot work without
 * one: the peer's memory is reached only through the key's export. */
static ucs_status_t
uct_gaudi_ipc_ep_check_key(uct_ep_h tl_ep, uct_rkey_t rkey,
                           uint64_t remote_addr, size_t length,
                           const char *name)
{
    uct_gaudi_ipc_ep_t *ep          = ucs_derived_of(tl_ep,
                                                     uct_gaudi_ipc_ep_t);
    const uct_gaudi_ipc_rkey_t *key = (const uct_gaudi_ipc_rkey_t*)rkey;

    if (ucs_unlikely(rkey == UCT_INVALID_RKEY)) {
        ucs_error("gaudi_ipc: %s of %zu bytes to 0x%" PRIx64 " on the "
                  "endpoint to pid %d without a remote key: refused (only "
                  "memory the peer registered on gaudi_ipc is reachable)",
                  name, length, remote_addr, ep->pid);
        return UCS_ERR_INVALID_PARAM;
    }

    if (ucs_unlikely((key->pid != ep->pid) || (key->pidns != ep->pidns) ||
                     (key->system_id != ep->system_id))) {
        ucs_error("gaudi_ipc: %s with an rkey of pid %d (pid namespace %"
                  PRIu64 ") on the endpoint to pid %d (pid namespace %"
                  PRIu64 "): refused", name, key->pid, key->pidns, ep->pid,
                  ep->pidns);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((remote_addr >= key->base) &&
        (length <= key->base + key->length - remote_addr)) {
        return UCS_OK;
    }

    ucs_error("gaudi_ipc: %s of [0x%" PRIx64 ", +%zu) outside pid %d "
              "buffer [0x%" PRIx64 ", +%" PRIu64 ")", name, remote_addr,
              length, key->pid, key->base, key->length);
    return UCS_ERR_INVALID_PARAM;
}

/* The peer's imported region of [remote_addr, +length), referenced */
static ucs_status_t
uct_gaudi_ipc_ep_import(uct_gaudi_ipc_iface_t *iface,
                        const uct_gaudi_ipc_rkey_t *key, uint64_t remote_addr,
                        size_t length, const char *name,
                        uct_gaudi_ipc_region_t **region_p, uint64_t *remote_p)
{
    uct_gaudi_ipc_region_t *region;
    ucs_status_t status;

    uint64_t offset;

    status = uct_gaudi_ipc_cache_get(&iface->cache, key, &region);
    if (status != UCS_OK) {
        return status;
    }

    /* bound by what was imported, whatever the key says: the bytes past
     * the import are other mappings of our device */
    offset = region->offset + (remote_addr - region->base);
    if (ucs_unlikely((remote_addr < region->base) ||
                     (offset > region->import_len) ||
                     (length > region->import_len - offset))) {
        ucs_error("gaudi_ipc: %s of [0x%" PRIx64 ", +%zu) outside the "
                  "import of pid %d buffer 0x%" PRIx64 " (%" PRIu64
                  " bytes at offset %" PRIu64 "): refused", name,
                  remote_addr, length, region->peer->pid, region->base,
                  region->import_len, region->offset);
        uct_gaudi_ipc_cache_put(&iface->cache, region);
        return UCS_ERR_INVALID_PARAM;
    }

    /* the imported VA is in the host (PMMU) range: PDMA addresses it like
     * host memory (facts 4.3) */
    *region_p = region;
    *remote_p = region->va + offset;
    return UCS_OK;
}

/* Checks of every operation, in the one order: the transport can copy,
 * the range is the key's, then the base class's queue and fence */
static ucs_status_t
uct_gaudi_ipc_ep_op_start(uct_ep_h tl_ep, uct_rkey_t rkey,
                          uint64_t remote_addr, size_t length, int async,
                          const char *name)
{
    uct_gaudi_ipc_iface_t *iface = uct_gaudi_ipc_ep_iface(tl_ep);
    ucs_status_t status;

    status = uct_gaudi_ipc_iface_ready(iface, name);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    status = uct_gaudi_ipc_ep_check_key(tl_ep, rkey, remote_addr, length,
                                        name);
    if (status != UCS_OK) {
        return status;
    }

    return uct_gaudi_iface_op_start(&iface->super, async);
}

static UCS_F_ALWAYS_INLINE ucs_status_t
uct_gaudi_ipc_ep_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                       uint64_t remote_addr, uct_rkey_t rkey,
                       uct_completion_t *comp, int is_put)
{
    uct_gaudi_ipc_iface_t *iface    = uct_gaudi_ipc_ep_iface(tl_ep);
    const uct_gaudi_ipc_rkey_t *key = (const uct_gaudi_ipc_rkey_t*)rkey;
    const char *name                = is_put ? "put_zcopy" : "get_zcopy";
    uct_gaudi_ipc_region_t *region;
    uct_gaudi_dma_ref_t *local, remote_ref;
    uct_gaudi_ipc_desc_t *desc;
    uct_gaudi_dma_xfer_t xfer;
    uint64_t remote;
    ucs_status_t status;
    size_t length;

    UCT_CHECK_IOV_SIZE(iovcnt, 1ul, name);
    status = uct_gaudi_ipc_iface_ready(iface, name);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    length = (iovcnt == 0) ? 0 : iov->length * iov->count;
    if (length == 0) {
        return UCS_OK;
    }
    if ((iov->count > 1) && (iov->stride != iov->length)) {
        return UCS_ERR_UNSUPPORTED; /* strided: not offered (max_iov 1) */
    }

    status = uct_gaudi_ipc_ep_op_start(tl_ep, rkey, remote_addr, length, 1,
                                       name);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gaudi_ipc_ep_import(iface, key, remote_addr, length, name,
                                     &region, &remote);
    if (status != UCS_OK) {
        uct_gaudi_ipc_ep_peer_gone(tl_ep, status);
        return status;
    }

    desc = (uct_gaudi_ipc_desc_t*)uct_gaudi_iface_desc_get(&iface->super,
                                                           comp);
    if (desc == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err_put;
    }

    /* the local buffer: our device memory, or host memory mapped through
     * the iface's registration cache */
    local  = &desc->super.refs[0];
    status = uct_gaudi_reg_dma_resolve(&iface->reg, iov->buffer, length,
                                       NULL, local);
    if (status != UCS_OK) {
        goto err_desc;
    }
    desc->super.num_refs = 1;
    desc->region         = region;
    desc->name           = name;
    desc->length         = length;

    uct_gaudi_reg_dev_ref(&remote_ref, remote);
    uct_gaudi_reg_xfer(&xfer, is_put ? &remote_ref : local, 0,
                       is_put ? local : &remote_ref, 0, length);
    status = uct_gaudi_iface_submit(&iface->super, &desc->super, &xfer,
                                         1, name);
    if (status != UCS_INPROGRESS) {
        goto err_desc;
    }

    if (is_put) {
        UCT_TL_EP_STAT_OP(ucs_derived_of(tl_ep, uct_base_ep_t), PUT, ZCOPY,
                          length);
    } else {
        UCT_TL_EP_STAT_OP(ucs_derived_of(tl_ep, uct_base_ep_t), GET, ZCOPY,
                          length);
    }
    return UCS_INPROGRESS;

err_desc:
    uct_gaudi_iface_desc_put(&desc->super);
err_put:
    uct_gaudi_ipc_cache_put(&iface->cache, region);
    return status;
}

/* A zcopy, traced whatever its outcome */
static ucs_status_t
uct_gaudi_ipc_ep_zcopy_traced(uct_ep_h tl_ep, const uct_iov_t *iov,
                              size_t iovcnt, uint64_t remote_addr,
                              uct_rkey_t rkey, uct_completion_t *comp,
                              int is_put)
{
    ucs_status_t status;

    status = uct_gaudi_ipc_ep_zcopy(tl_ep, iov, iovcnt, remote_addr, rkey,
                                    comp, is_put);
    uct_gaudi_ipc_ep_trace(is_put ? "put_zcopy" : "get_zcopy",
                           (iovcnt > 0) ? iov->buffer : NULL, remote_addr,
                           uct_iov_total_length(iov, iovcnt), status);
    return status;
}

ucs_status_t uct_gaudi_ipc_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                        size_t iovcnt, uint64_t remote_addr,
                                        uct_rkey_t rkey,
                                        uct_completion_t *comp)
{
    return uct_gaudi_ipc_ep_zcopy_traced(tl_ep, iov, iovcnt, remote_addr,
                                         rkey, comp, 1);
}

ucs_status_t uct_gaudi_ipc_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                        size_t iovcnt, uint64_t remote_addr,
                                        uct_rkey_t rkey,
                                        uct_completion_t *comp)
{
    ucs_status_t status;

    status = uct_gaudi_ipc_ep_zcopy_traced(tl_ep, iov, iovcnt, remote_addr,
                                           rkey, comp, 0);
    if (ucs_unlikely(UCS_STATUS_IS_ERR(status))) {
        /* UCX 1.13's get protocols cannot take a synchronous failure
         * (ucp/rma/get_offload.c: their abort asserts) */
        status = uct_gaudi_iface_fail_later(
                &uct_gaudi_ipc_ep_iface(tl_ep)->super, comp, status);
    }
    return status;
}


/*
 * Synchronous copies (short, bcopy): what UCP asks of a transport before it
 * takes it as an RMA lane (ucp/wireup/select.c, ucp_wireup_add_rma_lanes);
 * UCX 1.13's new protocols then put/get Gaudi memory on gaudi_ipc.
 */

/*
 * One synchronous copy between @a local (host or this process's Gaudi
 * memory; NULL: the engine's bounce buffer) and the peer's
 * [remote_addr, +length)
 */
static ucs_status_t
uct_gaudi_ipc_ep_sync_xfer(uct_ep_h tl_ep, void *local,
                           uint64_t remote_addr, uct_rkey_t rkey,
                           size_t length, int is_put, const char *name)
{
    uct_gaudi_ipc_iface_t *iface    = uct_gaudi_ipc_ep_iface(tl_ep);
    const uct_gaudi_ipc_rkey_t *key = (const uct_gaudi_ipc_rkey_t*)rkey;
    uct_gaudi_dma_end_t local_end, remote_end;
    uct_gaudi_ipc_region_t *region;
    ucs_status_t status;

    status = uct_gaudi_ipc_ep_import(iface, key, remote_addr, length, name,
                                     &region, &remote_end.dma_addr);
    if (status != UCS_OK) {
        uct_gaudi_ipc_ep_peer_gone(tl_ep, status);
        return status;
    }

    remote_end.host = NULL;
    if (local == NULL) {
        status = uct_gaudi_dma_bounce_copy(iface->super.dma, is_put,
                                           remote_end.dma_addr, length, name);
    } else {
        status = uct_gaudi_heap_dma_end(iface->reg.heap, local, length, name,
                                        &local_end);
        if (status == UCS_OK) {
            status = uct_gaudi_dma_copy_sync(iface->super.dma,
                                             is_put ? &remote_end : &local_end,
                                             is_put ? &local_end : &remote_end,
                                             length, name);
        }
    }

    status = uct_gaudi_ipc_ep_check_peer(iface, region, length, name, status);
    uct_gaudi_ipc_cache_put(&iface->cache, region);
    uct_gaudi_ipc_ep_peer_gone(tl_ep, status);
    return status;
}

/* A short operation: checks, then the copy */
static ucs_status_t
uct_gaudi_ipc_ep_short(uct_ep_h tl_ep, void *buffer, unsigned length,
                       uint64_t remote_addr, uct_rkey_t rkey, int is_put,
                       const char *name)
{
    ucs_status_t status;

    if (length == 0) {
        return UCS_OK;
    }

    status = uct_gaudi_ipc_ep_op_start(tl_ep, rkey, remote_addr, length, 0,
                                       name);
    if (status != UCS_OK) {
        return status;
    }

    return uct_gaudi_ipc_ep_sync_xfer(tl_ep, buffer, remote_addr, rkey,
                                      length, is_put, name);
}

ucs_status_t uct_gaudi_ipc_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                        unsigned length, uint64_t remote_addr,
                                        uct_rkey_t rkey)
{
    ucs_status_t status;

    status = uct_gaudi_ipc_ep_short(tl_ep, (void*)buffer, length, remote_addr,
                                    rkey, 1, "put_short");
    uct_gaudi_ipc_ep_trace("put_short", buffer, remote_addr, length, status);
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, ucs_derived_of(tl_ep, uct_base_ep_t),
                                 PUT, SHORT, length);
    return status;
}

ucs_status_t uct_gaudi_ipc_ep_get_short(uct_ep_h tl_ep, void *buffer,
                                        unsigned length, uint64_t remote_addr,
                                        uct_rkey_t rkey)
{
    ucs_status_t status;

    status = uct_gaudi_ipc_ep_short(tl_ep, buffer, length, remote_addr, rkey,
                                    0, "get_short");
    uct_gaudi_ipc_ep_trace("get_short", buffer, remote_addr, length, status);
    UCT_TL_EP_STAT_OP_IF_SUCCESS(status, ucs_derived_of(tl_ep, uct_base_ep_t),
                                 GET, SHORT, length);
    return status;
}

ssize_t uct_gaudi_ipc_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                                   void *arg, uint64_t remote_addr,
                                   uct_rkey_t rkey)
{
    uct_gaudi_ipc_iface_t *iface = uct_gaudi_ipc_ep_iface(tl_ep);
    size_t size, length;
    ucs_status_t status;
    void *bounce;

    status = uct_gaudi_ipc_iface_ready(iface, "put_bcopy");
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    status = uct_gaudi_iface_op_start(&iface->super, 0);
    if (status != UCS_OK) {
        return status;
    }

    /* pack first: the range to import is known only then */
    bounce = uct_gaudi_dma_bounce(iface->super.dma, &size);
    length = pack_cb(bounce, arg);
    if (ucs_unlikely(length > size)) {
        ucs_error("gaudi_ipc: put_bcopy packed %zu bytes, max_bcopy is %zu",
                  length, size);
        status = UCS_ERR_EXCEEDS_LIMIT;
    } else if (length > 0) {
        status = uct_gaudi_ipc_ep_check_key(tl_ep, rkey, remote_addr, length,
                                            "put_bcopy");
        if (status == UCS_OK) {
            status = uct_gaudi_ipc_ep_sync_xfer(tl_ep, NULL, remote_addr,
                                                rkey, length, 1, "put_bcopy");
        }
    }

    uct_gaudi_ipc_ep_trace("put_bcopy", bounce, remote_addr, length, status);
    if (status != UCS_OK) {
        return status;
    }

    UCT_TL_EP_STAT_OP(ucs_derived_of(tl_ep, uct_base_ep_t), PUT, BCOPY,
                      length);
    return length;
}

/* get_bcopy's copy into the bounce buffer, unpacked from there */
static ucs_status_t
uct_gaudi_ipc_ep_get_bcopy_sync(uct_ep_h tl_ep, uct_unpack_callback_t unpack_cb,
                                void *arg, size_t length, uint64_t remote_addr,
                                uct_rkey_t rkey)
{
    uct_gaudi_ipc_iface_t *iface = uct_gaudi_ipc_ep_iface(tl_ep);
    ucs_status_t status;
    size_t size;
    void *bounce;

    status = uct_gaudi_ipc_ep_op_start(tl_ep, rkey, remote_addr, length, 0,
                                       "get_bcopy");
    if (status != UCS_OK) {
        return status;
    }

    bounce = uct_gaudi_dma_bounce(iface->super.dma, &size);
    if (ucs_unlikely(length > size)) {
        ucs_error("gaudi_ipc: get_bcopy of %zu bytes exceeds max_bcopy %zu",
                  length, size);
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    status = uct_gaudi_ipc_ep_sync_xfer(tl_ep, NULL, remote_addr, rkey,
                                        length, 0, "get_bcopy");
    if (status != UCS_OK) {
        return status;
    }

    unpack_cb(arg, bounce, length);
    UCT_TL_EP_STAT_OP(ucs_derived_of(tl_ep, uct_base_ep_t), GET, BCOPY,
                      length);
    return UCS_OK;
}

ucs_status_t uct_gaudi_ipc_ep_get_bcopy(uct_ep_h tl_ep,
                                        uct_unpack_callback_t unpack_cb,
                                        void *arg, size_t length,
                                        uint64_t remote_addr, uct_rkey_t rkey,
                                        uct_completion_t *comp)
{
    ucs_status_t status = UCS_OK;

    if (length > 0) {
        status = uct_gaudi_ipc_ep_get_bcopy_sync(tl_ep, unpack_cb, arg,
                                                 length, remote_addr, rkey);
    }

    uct_gaudi_ipc_ep_trace("get_bcopy", NULL, remote_addr, length, status);
    if ((status != UCS_OK) && (status != UCS_ERR_EXCEEDS_LIMIT)) {
        /* UCX 1.13's get protocols cannot take a synchronous failure */
        return uct_gaudi_iface_fail_later(
                &uct_gaudi_ipc_ep_iface(tl_ep)->super, comp, status);
    }
    return status;
}
