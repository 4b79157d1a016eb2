/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifndef UCT_GAUDI_COPY_EP_H_
#define UCT_GAUDI_COPY_EP_H_

#include <ucs/sys/math.h>
#include <uct/base/uct_iface.h>


typedef struct uct_gaudi_copy_ep {
    uct_base_ep_t super;
} uct_gaudi_copy_ep_t;

UCS_CLASS_DECLARE_NEW_FUNC(uct_gaudi_copy_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_gaudi_copy_ep_t, uct_ep_t);

#endif
