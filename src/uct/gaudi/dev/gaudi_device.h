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
 * The selected device's context, opened on first use and then kept for the
 * life of the process: closing a Gaudi2 compute node resets the device
 * (facts 7.1), so UCX contexts coming and going must not close it.
 * Fails (and says why, once) when no device is usable; callers then offer
 * no resources, so that UCP initializes without Gaudi instead of failing.
 */
ucs_status_t uct_gaudi_device_get(uct_gaudi_ctx_t **ctx_p);


/**
 * The memory layer of the process's device, for users that are not an MD
 * (the public API): a reference kept for the life of the process, so that
 * allocations outlive every UCX context.
 */
ucs_status_t uct_gaudi_device_heap(uct_gaudi_heap_t **heap_p);


/**
 * One MD resource when the process has a usable device and the memory type
 * slot is free, else none: md_open failing would fail ucp_init, so both
 * components offer nothing instead.
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
