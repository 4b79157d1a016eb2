/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * gaudi_copy memory domain. Besides the UCT MD ops, this header is the
 * contract between the MD (allocation, registration, rkeys) and the
 * gaudi_cpy transport (which turns buffers into DMA-engine addresses).
 */

#ifndef UCT_GAUDI_COPY_MD_H_
#define UCT_GAUDI_COPY_MD_H_

#include "gaudi_copy_mem.h"

#include <uct/base/uct_md.h>
#include <uct/gaudi/base/gaudi_base.h>
#include <ucs/memory/rcache.h>
#include <ucs/stats/stats.h>

#define UCT_GAUDI_COPY_COMPONENT_NAME "gaudi_copy"
#define UCT_GAUDI_COPY_TL_NAME        "gaudi_cpy"


extern uct_component_t uct_gaudi_copy_component;


typedef struct uct_gaudi_copy_md_config {
    uct_md_config_t          super;
    ucs_ternary_auto_value_t enable_rcache; /* UCX_GAUDI_COPY_RCACHE */
    uct_md_rcache_config_t   rcache;        /* UCX_GAUDI_COPY_RCACHE_* */
    ucs_linear_func_t        uc_reg_cost;   /* cost without the rcache */
} uct_gaudi_copy_md_config_t;


#ifdef ENABLE_STATS
enum {
    UCT_GAUDI_COPY_MD_STAT_RCACHE_HIT,
    UCT_GAUDI_COPY_MD_STAT_RCACHE_MISS,
    UCT_GAUDI_COPY_MD_STAT_DMABUF_EXPORT,
    UCT_GAUDI_COPY_MD_STAT_ALLOC_BYTES,
    UCT_GAUDI_COPY_MD_STAT_LAST
};
#endif


typedef struct uct_gaudi_copy_md {
    uct_md_t              super;
    uct_gaudi_ctx_t       *ctx;      /* the process's device */
    uct_gaudi_copy_heap_t *heap;     /* its memory, shared by all MDs */
    ucs_rcache_t          *rcache;   /* host registrations, or NULL */
    ucs_linear_func_t     reg_cost;
    UCS_STATS_NODE_DECLARE(stats)
} uct_gaudi_copy_md_t;


/*
 * Packed rkey (mkey_pack / rkey_unpack), little-endian, version 1.
 * The unpacked rkey (uct_rkey_t) points to a copy of it.
 */
#define UCT_GAUDI_COPY_RKEY_VERSION 1

enum {
    UCT_GAUDI_COPY_RKEY_FLAG_DEVICE = UCS_BIT(0) /* device memory, else host */
};

typedef struct UCS_S_PACKED uct_gaudi_copy_rkey {
    uint8_t  version;    /* UCT_GAUDI_COPY_RKEY_VERSION */
    uint8_t  flags;      /* UCT_GAUDI_COPY_RKEY_FLAG_* */
    uint16_t reserved;   /* 0 */
    uint32_t module_id;  /* hw_ip.module_id of the device */
    uint64_t ctx_uuid;   /* identity of the process's device context */
    uint64_t base;       /* first byte of the registration (user address) */
    uint64_t length;
    uint64_t dma_base;   /* DMA address of base */
} uct_gaudi_copy_rkey_t;

/* DMA address of @a remote_addr in a key passed by uct_gaudi_copy_rkey_check */
static inline uint64_t uct_gaudi_copy_rkey_dma_addr(uct_rkey_t rkey,
                                                    uint64_t remote_addr)
{
    const uct_gaudi_copy_rkey_t *key = (const uct_gaudi_copy_rkey_t*)rkey;

    return key->dma_base + (remote_addr - key->base);
}


/*
 * Addresses.
 * - A "Gaudi pointer" is what the MD hands out for device memory
 *   (mem_alloc) and what applications pass to UCX: a device address that is
 *   never dereferenced by the CPU. On Gaudi2/3 it is the DRAM VA returned by
 *   MAP (facts 3.3); on Gaudi1, whose DRAM is not virtualized (facts 3.2),
 *   it is a synthetic non-canonical window over the physical user range, so
 *   it can never alias a host address.
 * - A "DMA address" is what a LIN_DMA packet takes (facts 5.3, 5.4): the
 *   DRAM VA (Gaudi2), the physical DRAM address (Gaudi1), or the device VA of
 *   a host mapping (MAP USERPTR).
 */

/* A resolved buffer: its DMA address, and what keeps it mapped */
typedef struct uct_gaudi_copy_dma_ref {
    uint64_t dma_addr;   /* DMA address of the first byte */
    void     *region;    /* registration held for the transfer, or NULL */
} uct_gaudi_copy_dma_ref_t;

/* Whether [addr, addr+length) is Gaudi memory owned by this MD's device */
int uct_gaudi_copy_md_is_device_mem(uct_gaudi_copy_md_t *md,
                                    const void *addr, size_t length);

/**
 * Resolve [addr, addr+length) for the DMA engine.
 * Device memory: translated, no registration (UCS_ERR_INVALID_ADDR if the
 * range is not wholly inside one allocation).
 * Host memory: if @a memh is a registration covering the range it is used,
 * else the range is registered through the registration cache and held in
 * ref->region until uct_gaudi_copy_md_dma_release().
 */
ucs_status_t uct_gaudi_copy_md_dma_resolve(uct_gaudi_copy_md_t *md,
                                           const void *addr, size_t length,
                                           uct_mem_h memh,
                                           uct_gaudi_copy_dma_ref_t *ref);

void uct_gaudi_copy_md_dma_release(uct_gaudi_copy_md_t *md,
                                   uct_gaudi_copy_dma_ref_t *ref);

/**
 * Check that an unpacked rkey may be used for [remote_addr, +length) by
 * this MD: same device (an rkey of another device is refused with a clear
 * error), range inside the packed registration. Never touches memory.
 */
ucs_status_t uct_gaudi_copy_rkey_check(uct_gaudi_copy_md_t *md,
                                       uct_rkey_t rkey, uint64_t remote_addr,
                                       size_t length);

#endif
