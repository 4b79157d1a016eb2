/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * gaudi_copy memory domain. Besides the UCT MD ops, this header is the
 * contract between the MD (allocation, registration, rkeys) and the
 * gaudi_cpy transport (which turns buffers into DMA-engine addresses).
 */

#ifndef UCT_GAUDI_COPY_MD_H_
#define UCT_GAUDI_COPY_MD_H_

#include <uct/base/uct_md.h>
#include <uct/gaudi/dev/gaudi_dev.h>
#include <uct/gaudi/mem/gaudi_reg.h>
#include <ucs/stats/stats.h>

#define UCT_GAUDI_COPY_COMPONENT_NAME "gaudi_copy"
#define UCT_GAUDI_COPY_TL_NAME        "gaudi_cpy"


extern uct_component_t uct_gaudi_copy_component;


typedef struct uct_gaudi_copy_md_config {
    uct_md_config_t          super;
    uct_gaudi_reg_config_t   reg;           /* UCX_GAUDI_COPY_RCACHE* */
    ucs_linear_func_t        uc_reg_cost;   /* cost without the rcache */
} uct_gaudi_copy_md_config_t;


#ifdef ENABLE_STATS
enum {
    UCT_GAUDI_COPY_MD_STAT_ALLOC_BYTES,
    UCT_GAUDI_COPY_MD_STAT_LAST
};
#endif


typedef struct uct_gaudi_copy_md {
    uct_md_t              super;
    uct_gaudi_heap_t      *heap;     /* its memory, shared by all MDs */
    uct_gaudi_reg_t       reg;       /* registrations, address resolution */
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


/**
 * Check that an unpacked rkey may be used for [remote_addr, +length) by
 * this MD: same device (an rkey of another device is refused with a clear
 * error), range inside the packed registration. Never touches memory.
 */
ucs_status_t uct_gaudi_copy_rkey_check(uct_gaudi_copy_md_t *md,
                                       uct_rkey_t rkey, uint64_t remote_addr,
                                       size_t length);

#endif
