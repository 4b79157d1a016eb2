/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifndef UCT_GAUDI_IPC_IFACE_H_
#define UCT_GAUDI_IPC_IFACE_H_

#include <ucs/sys/math.h>
#include <uct/base/uct_iface.h>
#include <uct/gaudi/base/gaudi_base.h>


typedef struct uct_gaudi_ipc_iface_config {
    uct_iface_config_t super;
} uct_gaudi_ipc_iface_config_t;


typedef struct uct_gaudi_ipc_iface {
    uct_base_iface_t super;
    uct_gaudi_ctx_t  *ctx;
} uct_gaudi_ipc_iface_t;


typedef struct uct_gaudi_ipc_ep {
    uct_base_ep_t super;
} uct_gaudi_ipc_ep_t;

#endif
