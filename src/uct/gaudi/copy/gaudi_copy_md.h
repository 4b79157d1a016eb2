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
#include <uct/gaudi/base/gaudi_base.h>

#define UCT_GAUDI_COPY_COMPONENT_NAME "gaudi_copy"
#define UCT_GAUDI_COPY_TL_NAME        "gaudi_cpy"


extern uct_component_t uct_gaudi_copy_component;


typedef struct uct_gaudi_copy_md_config {
    uct_md_config_t super;
} uct_gaudi_copy_md_config_t;


typedef struct uct_gaudi_copy_md {
    uct_md_t        super;
    uct_gaudi_ctx_t *ctx;   /* the process's device */
} uct_gaudi_copy_md_t;


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
