/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The device this process uses, found once, and the UCT resources on it;
 * shared by the gaudi_copy and gaudi_ipc components and the public API.
 */

#ifndef UCT_GAUDI_DEVICE_H_
#define UCT_GAUDI_DEVICE_H_

#include <uct/gaudi/dev/gaudi_base.h>
#include <ucs/sys/math.h>
#include <uct/base/uct_iface.h>


/**
 * The device this process is expected to use (uct_gaudi_ctx_expected),
 * found once without opening a compute node, or NULL when there is none
 * (said once); both components then offer no resources. MDs and ifaces
 * open on it before the device is taken: the memory layer takes it at
 * the first use of Gaudi memory (uct_gaudi_heap_take, docs/base.md).
 */
const uct_gaudi_dev_info_t *uct_gaudi_device_info(void);


/**
 * One MD resource when the process has a device to use and the memory
 * type slot is free, else none: md_open failing would fail ucp_init, so
 * both components offer nothing instead.
 */
ucs_status_t
uct_gaudi_device_query_md_resources(uct_component_t *component,
                                    uct_md_resource_desc_t **resources_p,
                                    unsigned *num_resources_p);


/* One TL device resource for the process's device */
ucs_status_t
uct_gaudi_device_query_tl_resources(uct_md_h md,
                                    uct_tl_device_resource_t **tl_devices_p,
                                    unsigned *num_tl_devices_p);

#endif
