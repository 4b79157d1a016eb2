/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The UCT resources of both components: one MD and one TL device on the
 * device this process uses (dev/gaudi_device.h).
 */

#ifndef UCT_GAUDI_RESOURCE_H_
#define UCT_GAUDI_RESOURCE_H_

#include <uct/gaudi/base/gaudi_uct_compat.h>


/**
 * One MD resource when the process has a device to use and the memory
 * type slot is free, else none: md_open failing would fail ucp_init, so
 * both components offer nothing instead.
 */
ucs_status_t
uct_gaudi_query_md_resources(uct_component_t *component,
                                    uct_md_resource_desc_t **resources_p,
                                    unsigned *num_resources_p);


/* One TL device resource for the process's device */
ucs_status_t
uct_gaudi_query_tl_resources(uct_md_h md,
                                    uct_tl_device_resource_t **tl_devices_p,
                                    unsigned *num_tl_devices_p);

#endif
