/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The one owner of the per-process device state: the device this process
 * uses (its context, tried once) and the process-life reference on its
 * memory layer; shared by the gaudi_copy and gaudi_ipc components and the
 * public API.
 */

#ifndef UCT_GAUDI_DEVICE_H_
#define UCT_GAUDI_DEVICE_H_

#include <uct/gaudi/dev/gaudi_base.h>
#include <uct/gaudi/mem/gaudi_mem.h>
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
 * The memory layer of the process's device, for users that are not an MD
 * (the public API): a reference kept for the life of the process, so that
 * allocations outlive every UCX context.
 */
ucs_status_t uct_gaudi_device_heap(uct_gaudi_heap_t **heap_p);


/**
 * The memory layer reference of a new MD: the device is not taken, unless
 * the application holds it already (its fd or SynapseAI's: borrowed).
 */
ucs_status_t uct_gaudi_device_md_heap(uct_gaudi_heap_t **heap_p);


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
