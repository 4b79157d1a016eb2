/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The emulated NIC's interface and endpoints: put and get zcopy between
 * memory regions of two processes. Each interface runs an engine thread,
 * the NIC's responder: it serves the remote keys of this process's MRs
 * (a put writes into the MR, a get reads it) over the connections peers
 * open to its socket, with no help from the application's threads, as
 * the hardware does. The initiator side moves the data of an operation
 * before it returns (UCS_OK): its local MR is read (put) or written (get)
 * by the NIC itself, through the dma-buf for device memory.
 */

#ifndef _GNU_SOURCE
#  define _GNU_SOURCE   /* accept4, pipe2, POLLRDHUP */
#endif
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "nicsim_int.h"

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <ucs/type/class.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define UCT_NICSIM_MAX_ZCOPY (1ul << 30)
#define UCT_NICSIM_MAX_CONNS 256


static ucs_config_field_t uct_nicsim_iface_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_nicsim_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"BW", "12500MBs",
     "Bandwidth reported to UCX (a 100 Gb/s NIC).",
     ucs_offsetof(uct_nicsim_iface_config_t, bw), UCS_CONFIG_TYPE_BW},

    {"LAT", "2us",
     "Latency reported to UCX.",
     ucs_offsetof(uct_nicsim_iface_config_t, latency),
     UCS_CONFIG_TYPE_TIME},

    {"FABRIC", "nicsim0",
     "Name of the fabric: NICs of one fabric reach each other.",
     ucs_offsetof(uct_nicsim_iface_config_t, fabric),
     UCS_CONFIG_TYPE_STRING},

    {NULL}
};


/* Whole messages on a blocking stream socket: 0, or -1 (peer gone) */
static int uct_nicsim_send_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        p   += n;
        len -= n;
    }
    return 0;
}

static int uct_nicsim_recv_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = recv(fd, p, len, MSG_WAITALL);
        if (n <= 0) {
            if ((n < 0) && (errno == EINTR)) {
                continue;
            }
            return -1;
        }
        p   += n;
        len -= n;
    }
    return 0;
}


/* ---- responder (engine thread) ---- */

/* One request of a peer: -1 when the connection is to be dropped */
static int uct_nicsim_engine_serve(int fd, void *bounce)
{
    uct_nicsim_rep_t rep = {.magic = UCT_NICSIM_WIRE_MAGIC};
    ucs_status_t status;
    uct_nicsim_req_t req;
    uct_nicsim_mr_t *mr;
    uint64_t pos;
    size_t n;
    int rc = 0;

    if (uct_nicsim_recv_all(fd, &req, sizeof(req)) ||
        (req.magic != UCT_NICSIM_WIRE_MAGIC) ||
        ((req.op != UCT_NICSIM_OP_PUT) && (req.op != UCT_NICSIM_OP_GET))) {
        return -1;
    }

    /* the MR stays while the request is served (dereg waits) */
    uct_nicsim_mr_table_rdlock();
    mr = uct_nicsim_mr_find(req.rkey_id);
    if ((mr == NULL) || !uct_nicsim_mr_covers(mr, req.address, req.length)) {
        ucs_debug("nicsim: remote %s of [0x%" PRIx64 ", +%" PRIu64 "] with "
                  "key %" PRIx64 " refused: %s",
                  (req.op == UCT_NICSIM_OP_PUT) ? "put" : "get", req.address,
                  req.length, req.rkey_id,
                  (mr == NULL) ? "no such memory region" : "out of range");
        uct_nicsim_count_remote_refused();
        status = UCS_ERR_INVALID_ADDR;   /* a remote access error */
    } else {
        status = UCS_OK;
    }

    if (req.op == UCT_NICSIM_OP_PUT) {
        for (pos = 0; pos < req.length; pos += n) {
            n = ucs_min(req.length - pos, UCT_NICSIM_CHUNK);
            if (uct_nicsim_recv_all(fd, bounce, n)) {
                rc = -1;
                goto out;
            }
            if (status == UCS_OK) {
                status = uct_nicsim_mr_access(mr, req.address + pos, bounce,
                                              n, 1, "remote put");
            }
        }
        rep.status = status;
        rc         = uct_nicsim_send_all(fd, &rep, sizeof(rep));
        goto out;
    }

    rep.status = status;
    if (uct_nicsim_send_all(fd, &rep, sizeof(rep)) || (status != UCS_OK)) {
        rc = (status == UCS_OK) ? -1 : 0;
        goto out;
    }
    for (pos = 0; pos < req.length; pos += n) {
        n = ucs_min(req.length - pos, UCT_NICSIM_CHUNK);
        /* a failure once data flows drops the connection: the initiator
         * sees its get fail */
        if ((uct_nicsim_mr_access(mr, req.address + pos, bounce, n, 0,
                                  "remote get") != UCS_OK) ||
            uct_nicsim_send_all(fd, bounce, n)) {
            rc = -1;
            goto out;
        }
    }
out:
    uct_nicsim_mr_table_unlock();
    return rc;
}

static void uct_nicsim_engine_accept(uct_nicsim_iface_t *iface,
                                     struct pollfd *fds, int *nfds)
{
    int one = 1;
    int fd;

    fd = accept4(iface->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        return;
    }
    if (*nfds == UCT_NICSIM_MAX_CONNS + 2) {
        ucs_error("nicsim: more than %d connections to one interface",
                  UCT_NICSIM_MAX_CONNS);
        close(fd);
        return;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    fds[*nfds].fd     = fd;
    fds[*nfds].events = POLLIN;
    ++(*nfds);
}

static void *uct_nicsim_engine(void *arg)
{
    uct_nicsim_iface_t *iface = arg;
    struct pollfd fds[UCT_NICSIM_MAX_CONNS + 2];
    void *bounce;
    int nfds, i;

    bounce = ucs_malloc(UCT_NICSIM_CHUNK, "nicsim_engine");
    if (bounce == NULL) {
        ucs_error("nicsim: no memory for the engine's buffer");
        return NULL;
    }

    fds[0].fd     = iface->wake[0];
    fds[0].events = POLLIN;
    fds[1].fd     = iface->listen_fd;
    fds[1].events = POLLIN;
    nfds          = 2;
    for (;;) {
        if (poll(fds, nfds, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            ucs_error("nicsim: engine poll failed: %m");
            break;
        }
        if (fds[0].revents) {
            break;
        }
        if (fds[1].revents & POLLIN) {
            uct_nicsim_engine_accept(iface, fds, &nfds);
        }
        for (i = 2; i < nfds; ++i) {
            if (!fds[i].revents ||
                (uct_nicsim_engine_serve(fds[i].fd, bounce) == 0)) {
                continue;
            }
            close(fds[i].fd);
            fds[i] = fds[--nfds];
            --i;
        }
    }

    for (i = 2; i < nfds; ++i) {
        close(fds[i].fd);
    }
    ucs_free(bounce);
    return NULL;
}


/* ---- initiator (endpoint) ---- */

static ucs_status_t uct_nicsim_ep_lost(uct_nicsim_ep_t *ep, const char *what,
                                       size_t length)
{
    if (!ep->failed) {
        ucs_error("nicsim: connection to %s:%d lost during %s of %zu bytes",
                  inet_ntoa(ep->peer.sin_addr), ntohs(ep->peer.sin_port),
                  what, length);
    }
    ep->failed = 1;
    return UCS_ERR_CONNECTION_RESET;
}

static ucs_status_t
uct_nicsim_ep_rma(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                  uint64_t remote_addr, uct_rkey_t rkey, uint32_t op)
{
    uct_nicsim_ep_t *ep         = ucs_derived_of(tl_ep, uct_nicsim_ep_t);
    uct_nicsim_iface_t *iface   = ucs_derived_of(tl_ep->iface,
                                                 uct_nicsim_iface_t);
    const uct_nicsim_rkey_t *key = (const void*)rkey;
    const char *what            = (op == UCT_NICSIM_OP_PUT) ? "put_zcopy" :
                                                              "get_zcopy";
    const uct_nicsim_mr_t *mr;
    uct_nicsim_req_t req;
    uct_nicsim_rep_t rep;
    ucs_status_t status;
    uint64_t local, pos;
    size_t length, n;

    if (ep->failed) {
        return UCS_ERR_CONNECTION_RESET;
    }

    if ((iovcnt != 1) || (iov->count > 1)) {
        ucs_error("nicsim: %s with %zu iov entries of count %u: only one "
                  "contiguous buffer is supported", what, iovcnt,
                  (iovcnt > 0) ? iov->count : 0);
        return UCS_ERR_UNSUPPORTED;
    }

    length = (iov->count == 0) ? 0 : iov->length;
    local  = (uintptr_t)iov->buffer;
    mr     = iov->memh;
    if ((mr == UCT_MEM_HANDLE_NULL) || (rkey == UCT_INVALID_RKEY)) {
        ucs_error("nicsim: %s of %zu bytes without a %s: refused", what,
                  length, (rkey == UCT_INVALID_RKEY) ? "remote key" :
                  "local registration");
        return UCS_ERR_INVALID_PARAM;
    }

    if (!uct_nicsim_mr_covers(mr, local, length)) {
        ucs_error("nicsim: %s of [0x%" PRIx64 ", +%zu) outside its local "
                  "memory region [0x%" PRIx64 ", +%zu)", what, local, length,
                  mr->address, mr->length);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((remote_addr < key->address) || (length > key->length) ||
        (remote_addr - key->address > key->length - length)) {
        ucs_error("nicsim: %s of [0x%" PRIx64 ", +%zu) outside the remote "
                  "key of pid %u [0x%" PRIx64 ", +%" PRIu64 ")", what,
                  remote_addr, length, key->pid, key->address, key->length);
        return UCS_ERR_INVALID_PARAM;
    }

    req.magic   = UCT_NICSIM_WIRE_MAGIC;
    req.op      = op;
    req.rkey_id = key->id;
    req.address = remote_addr;
    req.length  = length;
    if (uct_nicsim_send_all(ep->fd, &req, sizeof(req))) {
        return uct_nicsim_ep_lost(ep, what, length);
    }

    if (op == UCT_NICSIM_OP_PUT) {
        for (pos = 0; pos < length; pos += n) {
            n      = ucs_min(length - pos, UCT_NICSIM_CHUNK);
            status = uct_nicsim_mr_access(mr, local + pos, iface->bounce, n,
                                          0, what);
            if (status != UCS_OK) {
                /* the request is half sent: the connection is unusable */
                uct_nicsim_ep_lost(ep, what, length);
                return status;
            }
            if (uct_nicsim_send_all(ep->fd, iface->bounce, n)) {
                return uct_nicsim_ep_lost(ep, what, length);
            }
        }
    }

    if (uct_nicsim_recv_all(ep->fd, &rep, sizeof(rep)) ||
        (rep.magic != UCT_NICSIM_WIRE_MAGIC)) {
        return uct_nicsim_ep_lost(ep, what, length);
    }

    if (rep.status != UCS_OK) {
        ucs_error("nicsim: %s of [0x%" PRIx64 ", +%zu) refused by pid %u: "
                  "%s", what, remote_addr, length, key->pid,
                  ucs_status_string((ucs_status_t)rep.status));
        return (ucs_status_t)rep.status;
    }

    if (op == UCT_NICSIM_OP_GET) {
        for (pos = 0; pos < length; pos += n) {
            n = ucs_min(length - pos, UCT_NICSIM_CHUNK);
            if (uct_nicsim_recv_all(ep->fd, iface->bounce, n)) {
                return uct_nicsim_ep_lost(ep, what, length);
            }
            status = uct_nicsim_mr_access(mr, local + pos, iface->bounce, n,
                                          1, what);
            if (status != UCS_OK) {
                uct_nicsim_ep_lost(ep, what, length);
                return status;
            }
        }
    }

    return UCS_OK;
}

static ucs_status_t
uct_nicsim_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                        uint64_t remote_addr, uct_rkey_t rkey,
                        uct_completion_t *comp)
{
    return uct_nicsim_ep_rma(tl_ep, iov, iovcnt, remote_addr, rkey,
                             UCT_NICSIM_OP_PUT);
}

static ucs_status_t
uct_nicsim_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                        uint64_t remote_addr, uct_rkey_t rkey,
                        uct_completion_t *comp)
{
    return uct_nicsim_ep_rma(tl_ep, iov, iovcnt, remote_addr, rkey,
                             UCT_NICSIM_OP_GET);
}

/* The peer never speaks first: a readable or hung-up idle connection is
 * a peer that is gone. Reported from progress. */
static ucs_status_t uct_nicsim_ep_check(uct_ep_h tl_ep, unsigned flags,
                                        uct_completion_t *comp)
{
    uct_nicsim_ep_t *ep = ucs_derived_of(tl_ep, uct_nicsim_ep_t);
    struct pollfd pfd   = {.fd = ep->fd, .events = POLLIN | POLLRDHUP};

    UCT_GAUDI_EP_CHECK_PARAM(flags, comp);
    if ((poll(&pfd, 1, 0) > 0) && pfd.revents) {
        ep->failed = 1;
    }
    return UCS_OK;
}

static UCS_CLASS_INIT_FUNC(uct_nicsim_ep_t, const uct_ep_params_t *params)
{
    uct_nicsim_iface_t *iface = ucs_derived_of(params->iface,
                                               uct_nicsim_iface_t);
    const uct_nicsim_iface_addr_t *addr;
    int one = 1;

    UCT_EP_PARAMS_CHECK_DEV_IFACE_ADDRS(params);
    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    addr = (const uct_nicsim_iface_addr_t*)params->iface_addr;
    memset(&self->peer, 0, sizeof(self->peer));
    self->peer.sin_family      = AF_INET;
    self->peer.sin_addr.s_addr = addr->ip;
    self->peer.sin_port        = addr->port;
    self->failed               = 0;
    self->reported             = 0;

    self->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (self->fd < 0) {
        ucs_error("nicsim: socket() failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    setsockopt(self->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(self->fd, (struct sockaddr*)&self->peer,
                sizeof(self->peer)) < 0) {
        ucs_error("nicsim: cannot connect to the NIC at %s:%d: %m",
                  inet_ntoa(self->peer.sin_addr), ntohs(self->peer.sin_port));
        close(self->fd);
        return UCS_ERR_UNREACHABLE;
    }

    ucs_list_add_tail(&iface->eps, &self->list);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_nicsim_ep_t)
{
    ucs_list_del(&self->list);
    close(self->fd);
}

UCS_CLASS_DEFINE(uct_nicsim_ep_t, uct_base_ep_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_nicsim_ep_t, uct_ep_t,
                                 const uct_ep_params_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_nicsim_ep_t, uct_ep_t);


/* ---- interface ---- */

/* Endpoints whose peer is gone are reported to UCX, one per call (the
 * handler may destroy endpoints) */
static unsigned uct_nicsim_iface_progress(uct_iface_h tl_iface)
{
    uct_nicsim_iface_t *iface = ucs_derived_of(tl_iface, uct_nicsim_iface_t);
    uct_nicsim_ep_t *ep;

    ucs_list_for_each(ep, &iface->eps, list) {
        if (ep->failed && !ep->reported) {
            ep->reported = 1;
            uct_iface_handle_ep_err(tl_iface, &ep->super.super,
                                    UCS_ERR_CONNECTION_RESET);
            return 1;
        }
    }
    return 0;
}

static ucs_status_t uct_nicsim_iface_query(uct_iface_h tl_iface,
                                           uct_iface_attr_t *attr)
{
    uct_nicsim_iface_t *iface = ucs_derived_of(tl_iface, uct_nicsim_iface_t);

    uct_base_iface_query(&iface->super, attr);

    attr->cap.put.max_zcopy       = UCT_NICSIM_MAX_ZCOPY;
    attr->cap.put.opt_zcopy_align = 1;
    attr->cap.put.align_mtu       = 1;
    attr->cap.put.max_iov         = 1;
    attr->cap.get.max_zcopy       = UCT_NICSIM_MAX_ZCOPY;
    attr->cap.get.opt_zcopy_align = 1;
    attr->cap.get.align_mtu       = 1;
    attr->cap.get.max_iov         = 1;
    attr->cap.flags               = UCT_IFACE_FLAG_PUT_ZCOPY |
                                    UCT_IFACE_FLAG_GET_ZCOPY |
                                    UCT_IFACE_FLAG_CONNECT_TO_IFACE |
                                    /* UCP takes only rma_bw lanes with a
                                     * pending queue; ours is never needed
                                     * (pending_add: "busy", send now) */
                                    UCT_IFACE_FLAG_PENDING |
                                    UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                                    UCT_IFACE_FLAG_EP_CHECK;
    attr->iface_addr_len          = sizeof(uct_nicsim_iface_addr_t);
    attr->device_addr_len         = sizeof(uct_nicsim_dev_addr_t);
    attr->ep_addr_len             = 0;
    attr->latency                 = ucs_linear_func_make(iface->latency, 0);
    attr->bandwidth.dedicated     = 0;
    attr->bandwidth.shared        = iface->bw;
    attr->overhead                = 1e-6;
    attr->priority                = 0;
    return UCS_OK;
}

static ucs_status_t
uct_nicsim_iface_get_device_address(uct_iface_h tl_iface,
                                    uct_device_addr_t *dev_addr)
{
    uct_nicsim_iface_t *iface = ucs_derived_of(tl_iface, uct_nicsim_iface_t);

    ((uct_nicsim_dev_addr_t*)dev_addr)->fabric = iface->fabric;
    return UCS_OK;
}

static ucs_status_t uct_nicsim_iface_get_address(uct_iface_h tl_iface,
                                                 uct_iface_addr_t *iface_addr)
{
    uct_nicsim_iface_t *iface = ucs_derived_of(tl_iface, uct_nicsim_iface_t);
    uct_nicsim_iface_addr_t *addr = (uct_nicsim_iface_addr_t*)iface_addr;

    addr->ip   = iface->addr.sin_addr.s_addr;
    addr->port = iface->addr.sin_port;
    return UCS_OK;
}

static int uct_nicsim_iface_is_reachable(const uct_iface_h tl_iface,
                                         const uct_device_addr_t *dev_addr,
                                         const uct_iface_addr_t *iface_addr)
{
    uct_nicsim_iface_t *iface = ucs_derived_of(tl_iface, uct_nicsim_iface_t);

    return (dev_addr != NULL) && (iface_addr != NULL) &&
           (((const uct_nicsim_dev_addr_t*)dev_addr)->fabric ==
            iface->fabric);
}

static UCS_CLASS_DECLARE_DELETE_FUNC(uct_nicsim_iface_t, uct_iface_t);

static uct_iface_ops_t uct_nicsim_iface_ops = {
    .ep_put_zcopy             = uct_nicsim_ep_put_zcopy,
    .ep_get_zcopy             = uct_nicsim_ep_get_zcopy,
    .ep_pending_add           = (uct_ep_pending_add_func_t)
                                    ucs_empty_function_return_busy,
    .ep_pending_purge         = (uct_ep_pending_purge_func_t)
                                    ucs_empty_function,
    .ep_flush                 = uct_base_ep_flush,
    .ep_fence                 = uct_base_ep_fence,
    .ep_check                 = uct_nicsim_ep_check,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_nicsim_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(uct_nicsim_ep_t),
    .iface_flush              = uct_base_iface_flush,
    .iface_fence              = uct_base_iface_fence,
    .iface_progress_enable    = uct_base_iface_progress_enable,
    .iface_progress_disable   = uct_base_iface_progress_disable,
    .iface_progress           = uct_nicsim_iface_progress,
    .iface_event_fd_get       = (uct_iface_event_fd_get_func_t)
                                    ucs_empty_function_return_unsupported,
    .iface_event_arm          = (uct_iface_event_arm_func_t)
                                    ucs_empty_function_return_busy,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(
                                    uct_nicsim_iface_t),
    .iface_query              = uct_nicsim_iface_query,
    .iface_get_device_address = uct_nicsim_iface_get_device_address,
    .iface_get_address        = uct_nicsim_iface_get_address,
    .iface_is_reachable       = uct_nicsim_iface_is_reachable
};

UCT_GAUDI_IS_REACHABLE_ADAPTER(uct_nicsim_iface_is_reachable_v2,
                               uct_nicsim_iface_is_reachable)

static uct_iface_internal_ops_t uct_nicsim_iface_internal_ops = {
    .iface_estimate_perf = uct_base_iface_estimate_perf,
    .iface_vfs_refresh   = (uct_iface_vfs_refresh_func_t)ucs_empty_function,
    .ep_query            = (uct_ep_query_func_t)
                               ucs_empty_function_return_unsupported,
    UCT_GAUDI_IFACE_INTERNAL_OPS(uct_nicsim_iface_is_reachable_v2)
};

/* A fabric is named; its id travels in the device address */
static uint64_t uct_nicsim_fabric_id(const char *name)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */

    for (; *name != '\0'; ++name) {
        h = (h ^ (uint8_t)*name) * 1099511628211ull;
    }
    return h;
}

static ucs_status_t uct_nicsim_iface_listen(uct_nicsim_iface_t *iface)
{
    socklen_t len = sizeof(iface->addr);

    iface->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (iface->listen_fd < 0) {
        ucs_error("nicsim: socket() failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    memset(&iface->addr, 0, sizeof(iface->addr));
    iface->addr.sin_family      = AF_INET;
    iface->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if ((bind(iface->listen_fd, (struct sockaddr*)&iface->addr,
              sizeof(iface->addr)) < 0) ||
        (listen(iface->listen_fd, 64) < 0) ||
        (getsockname(iface->listen_fd, (struct sockaddr*)&iface->addr,
                     &len) < 0)) {
        ucs_error("nicsim: cannot listen on the loopback: %m");
        close(iface->listen_fd);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

static UCS_CLASS_INIT_FUNC(uct_nicsim_iface_t, uct_md_h md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    const uct_nicsim_iface_config_t *config =
            ucs_derived_of(tl_config, uct_nicsim_iface_config_t);
    ucs_status_t status;
    int ret;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, &uct_nicsim_iface_ops,
                              &uct_nicsim_iface_internal_ops, md, worker,
                              params, tl_config
                              UCS_STATS_ARG(params->stats_root)
                              UCS_STATS_ARG(UCT_NICSIM_NAME));

    self->fabric  = uct_nicsim_fabric_id(config->fabric);
    self->bw      = UCT_GAUDI_CONFIG_BW_IS_AUTO(config->bw) ? 12500e6 :
                    config->bw;
    self->latency = config->latency;
    ucs_list_head_init(&self->eps);

    self->bounce = ucs_malloc(UCT_NICSIM_CHUNK, "nicsim_bounce");
    if (self->bounce == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_nicsim_iface_listen(self);
    if (status != UCS_OK) {
        goto err_free;
    }

    if (pipe2(self->wake, O_CLOEXEC) < 0) {
        ucs_error("nicsim: pipe2() failed: %m");
        status = UCS_ERR_IO_ERROR;
        goto err_close;
    }

    ret = pthread_create(&self->engine, NULL, uct_nicsim_engine, self);
    if (ret != 0) {
        ucs_error("nicsim: cannot start the engine thread: %s",
                  strerror(ret));
        status = UCS_ERR_IO_ERROR;
        goto err_pipe;
    }

    ucs_debug("nicsim: interface %p serves its NIC at %s:%d", self,
              inet_ntoa(self->addr.sin_addr), ntohs(self->addr.sin_port));
    return UCS_OK;

err_pipe:
    close(self->wake[0]);
    close(self->wake[1]);
err_close:
    close(self->listen_fd);
err_free:
    ucs_free(self->bounce);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(uct_nicsim_iface_t)
{
    char c = 0;

    if (write(self->wake[1], &c, 1) != 1) {
        ucs_error("nicsim: cannot stop the engine thread: %m");
    }
    pthread_join(self->engine, NULL);
    close(self->wake[0]);
    close(self->wake[1]);
    close(self->listen_fd);
    ucs_free(self->bounce);
}

UCS_CLASS_DEFINE(uct_nicsim_iface_t, uct_base_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_nicsim_iface_t, uct_iface_t, uct_md_h,
                                 uct_worker_h, const uct_iface_params_t*,
                                 const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_nicsim_iface_t, uct_iface_t);

static ucs_status_t
uct_nicsim_query_tl_devices(uct_md_h md, uct_tl_device_resource_t **devices_p,
                            unsigned *num_devices_p)
{
    return uct_single_device_resource(md, UCT_NICSIM_DEV_NAME,
                                      UCT_DEVICE_TYPE_NET,
                                      UCS_SYS_DEVICE_ID_UNKNOWN, devices_p,
                                      num_devices_p);
}

UCT_TL_DEFINE(&uct_nicsim_component, nicsim, uct_nicsim_query_tl_devices,
              uct_nicsim_iface_t, "NICSIM_", uct_nicsim_iface_config_table,
              uct_nicsim_iface_config_t);
