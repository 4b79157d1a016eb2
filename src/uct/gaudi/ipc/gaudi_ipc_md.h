/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifndef UCT_GAUDI_IPC_MD_H_
#define UCT_GAUDI_IPC_MD_H_

#include <uct/base/uct_md.h>
#include <uct/gaudi/base/gaudi_base.h>

#define UCT_GAUDI_IPC_COMPONENT_NAME "gaudi_ipc"
#define UCT_GAUDI_IPC_TL_NAME        "gaudi_ipc"


extern uct_component_t uct_gaudi_ipc_component;


typedef struct uct_gaudi_ipc_md_config {
    uct_md_config_t super;
} uct_gaudi_ipc_md_config_t;

#endif
