/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * gaudi_ipc endpoint and data operations. The endpoint extends the base
 * class's (uct_gaudi_ep_t, base/gaudi_iface.h) with the peer process it
 * was created for: an rkey is honoured only on the endpoint to the process
 * that packed it.
 */

#ifndef UCT_GAUDI_IPC_EP_H_
#define UCT_GAUDI_IPC_EP_H_

#include "gaudi_ipc_iface.h"


typedef struct uct_gaudi_ipc_ep {
    uct_gaudi_ep_t       super;
    uint64_t             system_id;  /* the peer's node (boot id) */
    uint64_t             pidns;      /* the peer's pid namespace */
    pid_t                pid;        /* the peer process */
    uct_keepalive_info_t keepalive;  /* its start time: exited or not */
    int                  failed;     /* its error was reported */
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

/* Whether the peer still runs; if not, the ep's error is reported
 * (uct_iface_handle_ep_err from progress) */
ucs_status_t uct_gaudi_ipc_ep_check(uct_ep_h tl_ep, unsigned flags,
                                    uct_completion_t *comp);

/* A zcopy is done: check its peer, release the import */
ucs_status_t uct_gaudi_ipc_ep_zcopy_done(uct_gaudi_iface_desc_t *desc,
                                         ucs_status_t status);

#endif
