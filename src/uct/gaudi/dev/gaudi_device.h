/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The device this process uses, found once; shared by the gaudi_copy and
 * gaudi_ipc components (their resources: base/gaudi_resource.h) and the
 * public API.
 */

#ifndef UCT_GAUDI_DEVICE_H_
#define UCT_GAUDI_DEVICE_H_

#include <uct/gaudi/dev/gaudi_dev.h>
#include <ucs/sys/math.h>


/**
 * The device this process is expected to use (uct_gaudi_ctx_expected),
 * found once without opening a compute node, or NULL when there is none
 * (said once); both components then offer no resources. MDs and ifaces
 * open on it before the device is taken: the memory layer takes it at
 * the first use of Gaudi memory (uct_gaudi_heap_take, docs/base.md).
 */
const uct_gaudi_dev_info_t *uct_gaudi_device_info(void);

#endif
