/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/base/gaudi_resource.h>
#include <uct/gaudi/dev/gaudi_device.h>

#include <ucs/sys/string.h>


ucs_status_t
uct_gaudi_query_md_resources(uct_component_t *component,
                                    uct_md_resource_desc_t **resources_p,
                                    unsigned *num_resources_p)
{
    if (!uct_gaudi_memory_type_available(component) ||
        (uct_gaudi_device_info() == NULL)) {
        return uct_md_query_empty_md_resource(resources_p, num_resources_p);
    }

    return uct_md_query_single_md_resource(component, resources_p,
                                           num_resources_p);
}

ucs_status_t
uct_gaudi_query_tl_resources(uct_md_h md,
                                    uct_tl_device_resource_t **tl_devices_p,
                                    unsigned *num_tl_devices_p)
{
    const uct_gaudi_dev_info_t *info = uct_gaudi_device_info();
    char dev_name[UCT_DEVICE_NAME_MAX];

    if (info == NULL) {
        *tl_devices_p     = NULL;
        *num_tl_devices_p = 0;
        return UCS_OK;
    }

    ucs_snprintf_zero(dev_name, sizeof(dev_name), "gaudi_%d", info->index);
    return uct_single_device_resource(md, dev_name, UCT_DEVICE_TYPE_ACC,
                                      info->sys_dev, tl_devices_p,
                                      num_tl_devices_p);
}
