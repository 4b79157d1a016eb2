/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * UCX_GAUDI_* process-wide configuration: device selection and ownership.
 * Registered with UCX's global config list so `ucx_info -c` shows it.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/dev/gaudi_process.h>

#include <ucs/config/parser.h>
#include <uct/gaudi/compat/gaudi_compat.h>
#include <ucs/debug/assert.h>
#include <ucs/sys/preprocessor.h>
#include <ucs/debug/log.h>

#include <stddef.h>


const char *uct_gaudi_backend_names[] = {
    [UCT_GAUDI_BACKEND_AUTO]    = "auto",
    [UCT_GAUDI_BACKEND_KERNEL]  = "kernel",
    [UCT_GAUDI_BACKEND_SYNAPSE] = "synapse",
    [UCT_GAUDI_BACKEND_LAST]    = NULL
};

const char *uct_gaudi_device_mem_names[] = {
    [UCT_GAUDI_DEVICE_MEM_AUTO]    = "auto",
    [UCT_GAUDI_DEVICE_MEM_DRIVER]  = "driver",
    [UCT_GAUDI_DEVICE_MEM_SYNAPSE] = "synapse",
    [UCT_GAUDI_DEVICE_MEM_LAST]    = NULL
};

static ucs_config_field_t uct_gaudi_global_config_table[] = {
    {"DEVICE", "auto",
     "Gaudi device this process uses:\n"
     " auto       - the launcher's local rank modulo the number of devices,\n"
     "              or, without a local rank, the first device that is free\n"
     " <n>        - the device with logical index n (see GAUDI_MAPPING_TABLE)\n"
     " module:<m> - the device whose module id (OAM slot) is m",
     ucs_offsetof(uct_gaudi_global_config_t, device),
     UCS_CONFIG_TYPE_STRING},

    {"DEVICE_FD", "-1",
     "An already open Gaudi compute node fd to use instead of opening the\n"
     "device (-1: none). Its device is the selected device; the fd is not\n"
     "closed by UCX.",
     ucs_offsetof(uct_gaudi_global_config_t, device_fd),
     UCS_CONFIG_TYPE_INT},

    {"SYNAPSE", "try",
     "Reuse the device fd of SynapseAI (synDeviceGetInfo) when libSynapse is\n"
     "already loaded in the process: yes, no or try.",
     ucs_offsetof(uct_gaudi_global_config_t, synapse),
     UCS_CONFIG_TYPE_TERNARY},

    {"COPY_BACKEND", "auto",
     "Engine that copies for the device (gaudi_cpy, gaudi_ipc, public API):\n"
     " auto    - SynapseAI if the process has already loaded it, or if the\n"
     "           ASIC has no kernel command-submission queue (Gaudi3);\n"
     "           else kernel\n"
     " kernel  - command buffers submitted through the driver (Gaudi1/2)\n"
     " synapse - synMemCopyAsync on streams of SynapseAI (every Gaudi);\n"
     "           SynapseAI then owns the device and the module borrows it.\n"
     "The choice is made once per device and process.",
     ucs_offsetof(uct_gaudi_global_config_t, copy_backend),
     UCS_CONFIG_TYPE_ENUM(uct_gaudi_backend_names)},

    {"SYNAPSE_LIB", "libSynapse.so",
     "SynapseAI library loaded (dlopen) for the synapse copy backend: a name\n"
     "looked up like any library, or a path.",
     ucs_offsetof(uct_gaudi_global_config_t, synapse_lib),
     UCS_CONFIG_TYPE_STRING},

    {"DEVICE_MEM", "auto",
     "Where device memory allocated through UCX comes from:\n"
     " auto    - SynapseAI's allocator (synDeviceMalloc) on the synapse\n"
     "           copy backend (SynapseAI holds the DRAM), else the driver\n"
     " driver  - the driver's ALLOC + MAP on the device fd only; on\n"
     "           SynapseAI's fd of a Gaudi2/3 it finds no free DRAM\n"
     " synapse - SynapseAI's allocator only (synapse copy backend); its\n"
     "           memory exports through SynapseAI's pool mapping.",
     ucs_offsetof(uct_gaudi_global_config_t, device_mem),
     UCS_CONFIG_TYPE_ENUM(uct_gaudi_device_mem_names)},

    {"OPEN_TIMEOUT", "5s",
     "How long to keep retrying, with back-off, to open a device that is\n"
     "being reset or released by its previous user (EAGAIN).",
     ucs_offsetof(uct_gaudi_global_config_t, open_timeout),
     UCS_CONFIG_TYPE_TIME},

    {NULL}
};

UCS_CONFIG_REGISTER_TABLE(uct_gaudi_global_config_table, "Gaudi device",
                          "GAUDI_", uct_gaudi_global_config_t,
                          &ucs_config_global_list)


static void uct_gaudi_global_config_load(void)
{
    ucs_status_t status;

    status = UCT_GAUDI_CONFIG_FILL(&uct_gaudi_process.config.values,
                                   uct_gaudi_global_config_table,
                                   UCS_DEFAULT_ENV_PREFIX, 0);
    if (status == UCS_OK) {
        return;
    }

    /* a bad value was reported by the parser; fall back to the defaults */
    ucs_error("gaudi: invalid " UCS_DEFAULT_ENV_PREFIX "GAUDI_* settings, "
              "using the defaults");
    status = UCT_GAUDI_CONFIG_FILL(&uct_gaudi_process.config.values,
                                   uct_gaudi_global_config_table,
                                   "UCX_GAUDI_IGNORED_", 1);
    ucs_assert_always(status == UCS_OK);
}

const uct_gaudi_global_config_t *uct_gaudi_global_config(void)
{
    pthread_mutex_lock(&uct_gaudi_process.config.lock);
    if (!uct_gaudi_process.config.loaded) {
        uct_gaudi_global_config_load();
        uct_gaudi_process.config.loaded = 1;
    }
    pthread_mutex_unlock(&uct_gaudi_process.config.lock);

    return &uct_gaudi_process.config.values;
}

void uct_gaudi_global_config_reset(void)
{
    pthread_mutex_lock(&uct_gaudi_process.config.lock);
    if (uct_gaudi_process.config.loaded) {
        ucs_config_parser_release_opts(&uct_gaudi_process.config.values,
                                       uct_gaudi_global_config_table);
        uct_gaudi_process.config.loaded = 0;
    }
    pthread_mutex_unlock(&uct_gaudi_process.config.lock);
}
