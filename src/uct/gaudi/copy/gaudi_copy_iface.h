/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifndef UCT_GAUDI_COPY_IFACE_H_
#define UCT_GAUDI_COPY_IFACE_H_

#include <ucs/sys/math.h>
#include <uct/base/uct_iface.h>
#include <uct/gaudi/base/gaudi_base.h>


/* Only the process's own iface is reachable: an in-process memtype EP */
typedef uint64_t uct_gaudi_copy_iface_addr_t;


typedef struct uct_gaudi_copy_iface_config {
    uct_iface_config_t super;
} uct_gaudi_copy_iface_config_t;


typedef struct uct_gaudi_copy_iface {
    uct_base_iface_t            super;
    uct_gaudi_copy_iface_addr_t id;
    uct_gaudi_ctx_t             *ctx;
} uct_gaudi_copy_iface_t;

#endif
