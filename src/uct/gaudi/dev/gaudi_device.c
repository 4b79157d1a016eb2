/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/dev/gaudi_device.h>
#include <uct/gaudi/compat/gaudi_compat.h>

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <ucs/debug/log.h>
#include <ucs/sys/string.h>


static struct {
    pthread_mutex_t  lock;
    int              tried;
    ucs_status_t     status;
    uct_gaudi_ctx_t  *ctx;
    uct_gaudi_heap_t *heap;   /* the public API's, never dropped */
} uct_gaudi_device = {
    .lock   = PTHREAD_MUTEX_INITIALIZER,
    .tried  = 0,
    .status = UCS_ERR_NO_DEVICE,
    .ctx    = NULL,
    .heap   = NULL
};


/* Open the device on first use; call with the lock held */
static void uct_gaudi_device_try(void)
{
    if (!uct_gaudi_device.tried) {
        /* Tried once: a busy or absent device is reported once, not by
         * every UCX context the process creates */
        uct_gaudi_device.tried  = 1;
        uct_gaudi_device.status = uct_gaudi_ctx_get(-1,
                                                    &uct_gaudi_device.ctx);
        if (uct_gaudi_device.status == UCS_OK) {
            ucs_debug("gaudi: using %s (%s, %s, module %u) via %s",
                      uct_gaudi_device.ctx->info->name,
                      uct_gaudi_device.ctx->info->node_name,
                      uct_gaudi_device.ctx->info->pci_addr,
                      uct_gaudi_device.ctx->info->module_id,
                      uct_gaudi_device.ctx->source);
        } else if (uct_gaudi_devices()->count > 0) {
            ucs_diag("gaudi: no usable Gaudi device, Gaudi transports are"
                     " disabled in this process: %s",
                     ucs_status_string(uct_gaudi_device.status));
        }
    }
}

ucs_status_t uct_gaudi_device_get(uct_gaudi_ctx_t **ctx_p)
{
    ucs_status_t status;

    pthread_mutex_lock(&uct_gaudi_device.lock);
    uct_gaudi_device_try();
    status = uct_gaudi_device.status;
    *ctx_p = uct_gaudi_device.ctx;
    pthread_mutex_unlock(&uct_gaudi_device.lock);
    return status;
}

ucs_status_t uct_gaudi_device_heap(uct_gaudi_heap_t **heap_p)
{
    ucs_status_t status;

    pthread_mutex_lock(&uct_gaudi_device.lock);
    uct_gaudi_device_try();
    status = uct_gaudi_device.status;
    if ((status == UCS_OK) && (uct_gaudi_device.heap == NULL)) {
        status = uct_gaudi_heap_get(uct_gaudi_device.ctx,
                                    &uct_gaudi_device.heap);
    }
    *heap_p = uct_gaudi_device.heap;
    pthread_mutex_unlock(&uct_gaudi_device.lock);
    return status;
}

UCS_STATIC_CLEANUP {
    if (uct_gaudi_device.ctx != NULL) {
        uct_gaudi_ctx_put(uct_gaudi_device.ctx);
        uct_gaudi_device.ctx = NULL;
    }
}

ucs_status_t
uct_gaudi_device_query_md_resources(uct_component_t *component,
                                    uct_md_resource_desc_t **resources_p,
                                    unsigned *num_resources_p)
{
    uct_gaudi_ctx_t *ctx;

    if (!uct_gaudi_memory_type_available(component) ||
        (uct_gaudi_device_get(&ctx) != UCS_OK)) {
        return uct_md_query_empty_md_resource(resources_p, num_resources_p);
    }

    return uct_md_query_single_md_resource(component, resources_p,
                                           num_resources_p);
}

ucs_status_t
uct_gaudi_device_query_tl_resources(uct_md_h md,
                                    uct_tl_device_resource_t **tl_devices_p,
                                    unsigned *num_tl_devices_p)
{
    char dev_name[UCT_DEVICE_NAME_MAX];
    uct_gaudi_ctx_t *ctx;
    ucs_status_t status;

    status = uct_gaudi_device_get(&ctx);
    if (status != UCS_OK) {
        *tl_devices_p     = NULL;
        *num_tl_devices_p = 0;
        return UCS_OK;
    }

    ucs_snprintf_zero(dev_name, sizeof(dev_name), "gaudi_%d",
                      ctx->info->index);
    return uct_single_device_resource(md, dev_name, UCT_DEVICE_TYPE_ACC,
                                      ctx->info->sys_dev, tl_devices_p,
                                      num_tl_devices_p);
}
