/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/dev/gaudi_device.h>
#include <uct/gaudi/dev/gaudi_process.h>

#include <ucs/debug/log.h>


/* The device found once, so that every UCX context names the same one.
 * Found with no lock held (it may scan every device's control node);
 * the first thread to finish publishes its answer */
const uct_gaudi_dev_info_t *uct_gaudi_device_info(void)
{
    const uct_gaudi_dev_info_t *info = NULL;
    ucs_status_t status;
    int tried;

    uct_gaudi_process_lock(&uct_gaudi_process.expected.lock);
    tried = uct_gaudi_process.expected.tried;
    info  = uct_gaudi_process.expected.info;
    uct_gaudi_process_unlock(&uct_gaudi_process.expected.lock);
    if (tried) {
        return info;
    }

    status = uct_gaudi_ctx_expected(&info);
    if (status != UCS_OK) {
        info = NULL;
    }

    uct_gaudi_process_lock(&uct_gaudi_process.expected.lock);
    tried = uct_gaudi_process.expected.tried;
    if (!tried) {
        uct_gaudi_process.expected.tried = 1;
        uct_gaudi_process.expected.info  = info;
    }
    info = uct_gaudi_process.expected.info;
    uct_gaudi_process_unlock(&uct_gaudi_process.expected.lock);

    if (tried) {
        return info;   /* another thread's answer */
    } else if (status == UCS_OK) {
        ucs_debug("gaudi: expecting %s (%s, %s, module %u); taken at the "
                  "first use of Gaudi memory", info->name, info->node_name,
                  info->pci_addr, info->module_id);
    } else if (uct_gaudi_devices()->count > 0) {
        ucs_diag("gaudi: no usable Gaudi device, Gaudi transports are "
                 "disabled in this process: %s", ucs_status_string(status));
    }
    return info;
}
