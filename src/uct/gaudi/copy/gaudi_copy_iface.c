/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gaudi_copy_iface.h"
#include "gaudi_copy_md.h"
#include "gaudi_copy_ep.h"

#include <uct/gaudi/gaudi_device.h>
#include <ucs/type/class.h>
#include <ucs/sys/string.h>


static ucs_config_field_t uct_gaudi_copy_iface_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_gaudi_copy_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {NULL}
};


static void UCS_CLASS_DELETE_FUNC_NAME(uct_gaudi_copy_iface_t)(uct_iface_t*);


static ucs_status_t
uct_gaudi_copy_iface_get_address(uct_iface_h tl_iface,
                                 uct_iface_addr_t *iface_addr)
{
    uct_gaudi_copy_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gaudi_copy_iface_t);

    *(uct_gaudi_copy_iface_addr_t*)iface_addr = iface->id;
    return UCS_OK;
}

static int uct_gaudi_copy_iface_is_reachable(const uct_iface_h tl_iface,
                                             const uct_device_addr_t *dev_addr,
                                             const uct_iface_addr_t *iface_addr)
{
    uct_gaudi_copy_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gaudi_copy_iface_t);

    return (iface_addr != NULL) &&
           (iface->id == *(const uct_gaudi_copy_iface_addr_t*)iface_addr);
}

static ucs_status_t uct_gaudi_copy_iface_query(uct_iface_h tl_iface,
                                               uct_iface_attr_t *iface_attr)
{
    uct_gaudi_copy_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gaudi_copy_iface_t);

    uct_base_iface_query(&iface->super, iface_attr);

    /* No data operation is offered yet (the DMA engine is not wired in),
     * so UCP never selects this transport for data */
    iface_attr->iface_addr_len      = sizeof(uct_gaudi_copy_iface_addr_t);
    iface_attr->device_addr_len     = 0;
    iface_attr->ep_addr_len         = 0;
    iface_attr->cap.flags           = UCT_IFACE_FLAG_CONNECT_TO_IFACE;
    iface_attr->latency             = ucs_linear_func_make(10e-6, 0);
    iface_attr->bandwidth.dedicated = 0;
    iface_attr->bandwidth.shared    = 1.0 * UCS_MBYTE;
    iface_attr->overhead            = 0;
    iface_attr->priority            = 0;
    return UCS_OK;
}

static uct_iface_ops_t uct_gaudi_copy_iface_ops = {
    .ep_pending_add           = (uct_ep_pending_add_func_t)
                                    ucs_empty_function_return_busy,
    .ep_pending_purge         = (uct_ep_pending_purge_func_t)
                                    ucs_empty_function,
    .ep_flush                 = uct_base_ep_flush,
    .ep_fence                 = uct_base_ep_fence,
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_gaudi_copy_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(uct_gaudi_copy_ep_t),
    .iface_flush              = uct_base_iface_flush,
    .iface_fence              = uct_base_iface_fence,
    .iface_progress_enable    = (uct_iface_progress_enable_func_t)
                                    ucs_empty_function,
    .iface_progress_disable   = (uct_iface_progress_disable_func_t)
                                    ucs_empty_function,
    .iface_progress           = (uct_iface_progress_func_t)
                                    ucs_empty_function_return_zero,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(
                                    uct_gaudi_copy_iface_t),
    .iface_query              = uct_gaudi_copy_iface_query,
    .iface_get_device_address = (uct_iface_get_device_address_func_t)
                                    ucs_empty_function_return_success,
    .iface_get_address        = uct_gaudi_copy_iface_get_address,
    .iface_is_reachable       = uct_gaudi_copy_iface_is_reachable
};

static uct_iface_internal_ops_t uct_gaudi_copy_iface_internal_ops = {
    .iface_estimate_perf = uct_base_iface_estimate_perf,
    .iface_vfs_refresh   = (uct_iface_vfs_refresh_func_t)ucs_empty_function,
    .ep_query            = (uct_ep_query_func_t)
                               ucs_empty_function_return_unsupported,
    .ep_invalidate       = (uct_ep_invalidate_func_t)
                               ucs_empty_function_return_unsupported
};

static UCS_CLASS_INIT_FUNC(uct_gaudi_copy_iface_t, uct_md_h md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    uct_gaudi_copy_md_t *gmd = ucs_derived_of(md, uct_gaudi_copy_md_t);

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, &uct_gaudi_copy_iface_ops,
                              &uct_gaudi_copy_iface_internal_ops, md, worker,
                              params, tl_config
                              UCS_STATS_ARG(params->stats_root)
                              UCS_STATS_ARG(UCT_GAUDI_COPY_TL_NAME));

    self->id  = ucs_generate_uuid((uintptr_t)self);
    self->ctx = gmd->ctx;
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gaudi_copy_iface_t)
{
}

UCS_CLASS_DEFINE(uct_gaudi_copy_iface_t, uct_base_iface_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_gaudi_copy_iface_t, uct_iface_t, uct_md_h,
                          uct_worker_h, const uct_iface_params_t*,
                          const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_gaudi_copy_iface_t, uct_iface_t);

UCT_TL_DEFINE(&uct_gaudi_copy_component, gaudi_cpy,
              uct_gaudi_device_query_tl_resources, uct_gaudi_copy_iface_t,
              "GAUDI_COPY_", uct_gaudi_copy_iface_config_table,
              uct_gaudi_copy_iface_config_t);
