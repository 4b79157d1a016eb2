/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gaudi_copy_ep.h"
#include "gaudi_copy_iface.h"

#include <ucs/type/class.h>


static UCS_CLASS_INIT_FUNC(uct_gaudi_copy_ep_t, const uct_ep_params_t *params)
{
    uct_gaudi_copy_iface_t *iface = ucs_derived_of(params->iface,
                                                   uct_gaudi_copy_iface_t);

    UCT_EP_PARAMS_CHECK_DEV_IFACE_ADDRS(params);
    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gaudi_copy_ep_t)
{
}

UCS_CLASS_DEFINE(uct_gaudi_copy_ep_t, uct_base_ep_t)
UCS_CLASS_DEFINE_NEW_FUNC(uct_gaudi_copy_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_gaudi_copy_ep_t, uct_ep_t);
