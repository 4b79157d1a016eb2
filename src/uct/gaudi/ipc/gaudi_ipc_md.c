/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gaudi_ipc_md.h"

#include <uct/gaudi/gaudi_compat.h>
#include <uct/gaudi/gaudi_device.h>
#include <ucs/debug/log.h>
#include <ucs/type/class.h>
#include <string.h>


static ucs_config_field_t uct_gaudi_ipc_md_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_gaudi_ipc_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {NULL}
};


static ucs_status_t
uct_gaudi_ipc_md_query(uct_md_h md, uct_md_attr_t *md_attr)
{
    /* DMA-BUF export and import are not offered yet */
    md_attr->cap.flags            = 0;
    md_attr->cap.reg_mem_types    = 0;
    md_attr->cap.alloc_mem_types  = 0;
    md_attr->cap.access_mem_types = 0;
    md_attr->cap.detect_mem_types = 0;
    md_attr->cap.max_alloc        = 0;
    md_attr->cap.max_reg          = 0;
    md_attr->rkey_packed_size     = 0;
    md_attr->reg_cost             = ucs_linear_func_make(0, 0);
    memset(&md_attr->local_cpus, 0xff, sizeof(md_attr->local_cpus));
    return UCS_OK;
}

static uct_md_ops_t uct_gaudi_ipc_md_ops = {
    .close                  = (uct_md_close_func_t)ucs_empty_function,
    .query                  = uct_gaudi_ipc_md_query,
    .mem_alloc              = (uct_md_mem_alloc_func_t)
                                  ucs_empty_function_return_unsupported,
    .mem_free               = (uct_md_mem_free_func_t)
                                  ucs_empty_function_return_unsupported,
    .mem_advise             = (uct_md_mem_advise_func_t)
                                  ucs_empty_function_return_unsupported,
    .mem_reg                = (uct_md_mem_reg_func_t)
                                  ucs_empty_function_return_unsupported,
    .mem_dereg              = (uct_md_mem_dereg_func_t)
                                  ucs_empty_function_return_unsupported,
    .mem_query              = (uct_md_mem_query_func_t)
                                  ucs_empty_function_return_unsupported,
    .mkey_pack              = (uct_md_mkey_pack_func_t)
                                  ucs_empty_function_return_unsupported,
    .is_sockaddr_accessible = (uct_md_is_sockaddr_accessible_func_t)
                                  ucs_empty_function_return_zero_int,
    .detect_memory_type     = (uct_md_detect_memory_type_func_t)
                                  ucs_empty_function_return_unsupported
};

/* A singleton: the MD holds no state beyond the process's device */
static uct_md_t uct_gaudi_ipc_md = {
    .ops       = &uct_gaudi_ipc_md_ops,
    .component = &uct_gaudi_ipc_component
};

static ucs_status_t
uct_gaudi_ipc_md_open(uct_component_t *component, const char *md_name,
                      const uct_md_config_t *config, uct_md_h *md_p)
{
    uct_gaudi_ctx_t *ctx;
    ucs_status_t status;

    status = uct_gaudi_device_get(&ctx);
    if (status != UCS_OK) {
        return status;
    }

    *md_p = &uct_gaudi_ipc_md;
    return UCS_OK;
}

static ucs_status_t
uct_gaudi_ipc_query_md_resources(uct_component_t *component,
                                 uct_md_resource_desc_t **resources_p,
                                 unsigned *num_resources_p)
{
    uct_gaudi_ctx_t *ctx;

    if (!uct_gaudi_memory_type_available() ||
        (uct_gaudi_device_get(&ctx) != UCS_OK)) {
        return uct_md_query_empty_md_resource(resources_p, num_resources_p);
    }

    return uct_md_query_single_md_resource(component, resources_p,
                                           num_resources_p);
}

static ucs_status_t
uct_gaudi_ipc_rkey_unpack(uct_component_t *component,
                          const void *rkey_buffer, uct_rkey_t *rkey_p,
                          void **handle_p)
{
    ucs_error("gaudi_ipc: remote keys are not supported yet");
    return UCS_ERR_UNSUPPORTED;
}

uct_component_t uct_gaudi_ipc_component = {
    .query_md_resources = uct_gaudi_ipc_query_md_resources,
    .md_open            = uct_gaudi_ipc_md_open,
    .cm_open            = (uct_component_cm_open_func_t)
                              ucs_empty_function_return_unsupported,
    .rkey_unpack        = uct_gaudi_ipc_rkey_unpack,
    .rkey_ptr           = (uct_component_rkey_ptr_func_t)
                              ucs_empty_function_return_unsupported,
    .rkey_release       = (uct_component_rkey_release_func_t)
                              ucs_empty_function_return_success,
    .name               = UCT_GAUDI_IPC_COMPONENT_NAME,
    .md_config          = {
        .name           = "Gaudi-IPC memory domain",
        .prefix         = "GAUDI_IPC_",
        .table          = uct_gaudi_ipc_md_config_table,
        .size           = sizeof(uct_gaudi_ipc_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(
                              &uct_gaudi_ipc_component),
    .flags              = 0,
    .md_vfs_init        = (uct_component_md_vfs_init_func_t)
                              ucs_empty_function
};
UCT_COMPONENT_REGISTER(&uct_gaudi_ipc_component);
