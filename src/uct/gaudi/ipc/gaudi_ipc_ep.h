/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifndef UCT_GAUDI_IPC_EP_H_
#define UCT_GAUDI_IPC_EP_H_

#include "gaudi_ipc_iface.h"


typedef struct uct_gaudi_ipc_ep {
    uct_base_ep_t super;
    pid_t         pid;          /* the peer process */
    uint64_t      pidns;
    unsigned      num_pending;
} uct_gaudi_ipc_ep_t;


UCS_CLASS_DECLARE_NEW_FUNC(uct_gaudi_ipc_ep_t, uct_ep_t,
                           const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_gaudi_ipc_ep_t, uct_ep_t);

ucs_status_t uct_gaudi_ipc_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                        size_t iovcnt, uint64_t remote_addr,
                                        uct_rkey_t rkey,
                                        uct_completion_t *comp);

ucs_status_t uct_gaudi_ipc_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                        size_t iovcnt, uint64_t remote_addr,
                                        uct_rkey_t rkey,
                                        uct_completion_t *comp);

ucs_status_t uct_gaudi_ipc_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                        unsigned length, uint64_t remote_addr,
                                        uct_rkey_t rkey);

ucs_status_t uct_gaudi_ipc_ep_get_short(uct_ep_h tl_ep, void *buffer,
                                        unsigned length, uint64_t remote_addr,
                                        uct_rkey_t rkey);

ssize_t uct_gaudi_ipc_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                                   void *arg, uint64_t remote_addr,
                                   uct_rkey_t rkey);

ucs_status_t uct_gaudi_ipc_ep_get_bcopy(uct_ep_h tl_ep,
                                        uct_unpack_callback_t unpack_cb,
                                        void *arg, size_t length,
                                        uint64_t remote_addr, uct_rkey_t rkey,
                                        uct_completion_t *comp);

ucs_status_t uct_gaudi_ipc_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                    uct_completion_t *comp);

ucs_status_t uct_gaudi_ipc_ep_fence(uct_ep_h tl_ep, unsigned flags);

ucs_status_t uct_gaudi_ipc_ep_pending_add(uct_ep_h tl_ep,
                                          uct_pending_req_t *req,
                                          unsigned flags);

void uct_gaudi_ipc_ep_pending_purge(uct_ep_h tl_ep,
                                    uct_pending_purge_callback_t cb,
                                    void *arg);

/* Completion of a zcopy, from the DMA engine's progress */
void uct_gaudi_ipc_ep_zcopy_done(void *arg, ucs_status_t status);

#endif
