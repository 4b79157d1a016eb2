/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * gaudi_cpy transport: copies host<->device and device<->device on the
 * process's Gaudi through the DMA engine (dma/gaudi_dma.h). Design and
 * performance model: docs/performance.md.
 */

#ifndef UCT_GAUDI_COPY_IFACE_H_
#define UCT_GAUDI_COPY_IFACE_H_

#include "gaudi_copy_md.h"

#include <ucs/sys/math.h>
#include <uct/gaudi/base/gaudi_iface.h>

/* iov entries of one zcopy (each may be split further by the engine); one
 * more ref of the descriptor holds the remote range */
#define UCT_GAUDI_COPY_MAX_IOV (UCT_GAUDI_IFACE_MAX_REFS - 1)


/* Only the process's own iface is reachable: an in-process memtype EP */
typedef uint64_t uct_gaudi_copy_iface_addr_t;


/* Copy directions of the performance model */
typedef enum {
    UCT_GAUDI_COPY_DIR_H2D,
    UCT_GAUDI_COPY_DIR_D2H,
    UCT_GAUDI_COPY_DIR_D2D,
    UCT_GAUDI_COPY_DIR_LAST
} uct_gaudi_copy_dir_t;


typedef struct uct_gaudi_copy_iface_config {
    uct_iface_config_t super;
    double             bw[UCT_GAUDI_COPY_DIR_LAST]; /* BW_H2D/D2H/D2D */
    ucs_time_t         latency;      /* LAT */
    ucs_time_t         overhead;     /* OVERHEAD */
    unsigned long      max_inflight; /* MAX_INFLIGHT */
    size_t             split_min;    /* SPLIT_MIN */
    size_t             bounce_size;  /* BOUNCE_SIZE */
    size_t             cb_size;      /* CB_SIZE */
    double             sync_timeout; /* SYNC_TIMEOUT */
    unsigned           max_poll;     /* MAX_POLL */
    uct_gaudi_iface_dma_config_t dma; /* MAX_BATCH, BATCH_BYTES,
                                         DMA_QUEUES, POLL_INTERVAL */
} uct_gaudi_copy_iface_config_t;


typedef struct uct_gaudi_copy_iface {
    uct_gaudi_iface_t           super;
    uct_gaudi_copy_iface_addr_t id;
    uct_gaudi_copy_md_t         *md;
    struct {
        double                  bw[UCT_GAUDI_COPY_DIR_LAST]; /* bytes/s */
        double                  latency;    /* seconds */
        double                  overhead;   /* seconds */
        size_t                  max_zcopy;
        unsigned                max_iov;
    } config;
} uct_gaudi_copy_iface_t;

#endif
