/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * gaudi_ipc transport: put/get zcopy between a local buffer and a buffer
 * of another process on the node, imported into the local device (op 99,
 * facts 4.3) and copied by the local DMA engine (dma/gaudi_dma.h).
 * Design: docs/ipc.md.
 */

#ifndef UCT_GAUDI_IPC_IFACE_H_
#define UCT_GAUDI_IPC_IFACE_H_

#include "gaudi_ipc_cache.h"
#include "gaudi_ipc_md.h"

#include <ucs/sys/math.h>
#include <uct/gaudi/base/gaudi_iface.h>


/* Device address: the node (boot id) */
typedef struct UCS_S_PACKED uct_gaudi_ipc_device_addr {
    uint64_t system_id;   /* ucs_get_system_id(): from the boot id */
} uct_gaudi_ipc_device_addr_t;

/* What the process of an iface address can do (caps) */
enum {
    UCT_GAUDI_IPC_ADDR_IMPORT = UCS_BIT(0), /* its device imports (op 99) */
    UCT_GAUDI_IPC_ADDR_EXPORT = UCS_BIT(1)  /* its MD exports (registers) */
};

/* Interface address: the process, and whether it can import and export:
 * reachability must be the same seen from both sides, or UCP's two ends
 * would select different lanes (UCX 1.13 aborts at wireup: "endpoint
 * reconfiguration not supported yet") */
typedef struct UCS_S_PACKED uct_gaudi_ipc_iface_addr {
    uint64_t pidns;
    int32_t  pid;
    uint8_t  caps;      /* UCT_GAUDI_IPC_ADDR_* */
} uct_gaudi_ipc_iface_addr_t;


typedef struct uct_gaudi_ipc_iface_config {
    uct_iface_config_t        super;
    uct_gaudi_reg_config_t    reg;               /* RCACHE* */
    unsigned                  cache_max_regions; /* CACHE_MAX_REGIONS */
    size_t                    cache_max_size;    /* CACHE_MAX_SIZE */
    uct_gaudi_ipc_fd_method_t fd_method;         /* FD_METHOD */
    double                    fd_timeout;        /* FD_TIMEOUT */
    double                    bw;                /* BW */
    double                    latency;           /* LAT */
    unsigned                  max_poll;          /* MAX_POLL */
    uct_gaudi_iface_dma_config_t dma;            /* MAX_BATCH, BATCH_BYTES,
                                                    DMA_QUEUES,
                                                    POLL_INTERVAL */
    double                    peer_check;        /* PEER_CHECK_INTERVAL */
    int                       syn_import;        /* SYNAPSE_IMPORT */
} uct_gaudi_ipc_iface_config_t;


/* An asynchronous zcopy: the local buffer is super.refs[0] */
typedef struct uct_gaudi_ipc_desc {
    uct_gaudi_iface_desc_t     super;
    uct_gaudi_ipc_region_t     *region;   /* the peer's, imported */
    const char                 *name;
    size_t                     length;
} uct_gaudi_ipc_desc_t;


typedef struct uct_gaudi_ipc_iface {
    uct_gaudi_iface_t     super;
    uct_gaudi_reg_t       reg;       /* local buffers -> DMA addresses */
    int                   import_ok; /* op 99 available on our device
                                        (expected until probed) */
    int                   probed;    /* import_ok is the probe's */
    int                   syn_import; /* SynapseAI may copy imported VAs */
    int                   export_ok; /* our MD registers (exports) */
    const char            *reason;   /* why not, for the log */
    int                   refused;   /* an op was refused for it (logged
                                        once, then at debug level) */
    uint64_t              pidns;
    uct_gaudi_ipc_cache_t cache;
    ucs_time_t            next_check; /* next sweep of exited peers */
    struct {
        double            bw;
        double            latency;
        ucs_time_t        peer_check;
    } config;
} uct_gaudi_ipc_iface_t;

/**
 * The iface can copy for @a op: the device taken (borrowed from the
 * application if it holds one), import probed, the engine created. An
 * error, said once, otherwise.
 */
ucs_status_t uct_gaudi_ipc_iface_ready(uct_gaudi_ipc_iface_t *iface,
                                       const char *op);

#endif
