/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Registrations of the memory layer, for both components: device memory
 * (a translation, no ioctl), host memory (pin + map into the device MMU,
 * MAP USERPTR, facts 3.3, directly or through a ucs_rcache that is
 * invalidated by UCM VM_UNMAPPED events), and the address resolution the
 * transports use to turn buffers into DMA addresses. Design: docs/md.md.
 */

#ifndef UCT_GAUDI_REG_H_
#define UCT_GAUDI_REG_H_

#include <uct/gaudi/mem/gaudi_mem.h>

#include <uct/api/uct.h>
#include <uct/gaudi/compat/gaudi_compat.h>
#include <ucs/config/parser.h>
#include <ucs/memory/rcache.h>
#include <ucs/stats/stats.h>


/* Host registration settings of an MD (its config table embeds them) */
typedef struct uct_gaudi_reg_config {
    ucs_ternary_auto_value_t enable_rcache; /* RCACHE */
    uct_gaudi_rcache_config_t rcache;       /* RCACHE_* */
} uct_gaudi_reg_config_t;

extern ucs_config_field_t uct_gaudi_reg_config_table[];


#ifdef ENABLE_STATS
enum {
    UCT_GAUDI_REG_STAT_RCACHE_HIT,
    UCT_GAUDI_REG_STAT_RCACHE_MISS,
    UCT_GAUDI_REG_STAT_LAST
};
#endif


/* The registrations of one MD on the process heap */
typedef struct uct_gaudi_reg {
    uct_gaudi_heap_t *heap;      /* the MD's reference */
    ucs_rcache_t     *rcache;    /* host registrations, or NULL */
    UCS_STATS_NODE_DECLARE(stats)
} uct_gaudi_reg_t;


/* A host registration in the cache; its memh is what UCT users get */
typedef struct uct_gaudi_reg_region {
    ucs_rcache_region_t   super;
    uct_gaudi_memh_t      memh;
} uct_gaudi_reg_region_t;


/* A resolved buffer: its DMA address, and what keeps it mapped */
typedef struct uct_gaudi_dma_ref {
    uint64_t dma_addr;   /* DMA address of the first byte */
    void     *region;    /* registration held for the transfer, or NULL */
    int      host;       /* host memory (a host registration) */
    int      app_map;    /* host, in an entry of the application's
                            SynapseAI (memh->app_map) */
} uct_gaudi_dma_ref_t;


/* A device-memory ref (imported or translated elsewhere) */
static UCS_F_ALWAYS_INLINE void
uct_gaudi_reg_dev_ref(uct_gaudi_dma_ref_t *ref, uint64_t dma_addr)
{
    ref->dma_addr = dma_addr;
    ref->region   = NULL;
    ref->host     = 0;
    ref->app_map  = 0;
}

/* The transfer of @a length bytes from @a src + @a src_off to @a dst +
 * @a dst_off: the one place the memory kind of each side reaches the
 * engine */
static UCS_F_ALWAYS_INLINE void
uct_gaudi_reg_xfer(uct_gaudi_dma_xfer_t *xfer, const uct_gaudi_dma_ref_t *dst,
                   uint64_t dst_off, const uct_gaudi_dma_ref_t *src,
                   uint64_t src_off, size_t length)
{
    xfer->dst    = dst->dma_addr + dst_off;
    xfer->src    = src->dma_addr + src_off;
    xfer->length = length;
    xfer->flags  = (src->host ? UCT_GAUDI_DMA_XFER_SRC_HOST : 0) |
                   (dst->host ? UCT_GAUDI_DMA_XFER_DST_HOST : 0) |
                   ((src->app_map || dst->app_map) ?
                    UCT_GAUDI_DMA_XFER_APP_MAP : 0);
}


/* MAP USERPTR of the pages of [addr, addr+len); fills memh (no registry) */
ucs_status_t uct_gaudi_mem_host_map(uct_gaudi_heap_t *heap, void *addr,
                                    size_t len, unsigned flags,
                                    uct_gaudi_memh_t *memh);

/* UNMAP of a host memh (skipped in a fork child: the parent's mapping) */
void uct_gaudi_mem_host_unmap(uct_gaudi_heap_t *heap,
                              uct_gaudi_memh_t *memh);

/**
 * Set up the registrations of an MD on @a heap (the caller keeps its heap
 * reference meanwhile): the registration cache per @a config (try/yes/no;
 * reg->rcache NULL if off). @a name ("gaudi_copy") names the cache,
 * @a prefix ("GAUDI_COPY_") the config in messages.
 */
ucs_status_t uct_gaudi_reg_init(uct_gaudi_reg_t *reg, uct_gaudi_heap_t *heap,
                                const uct_gaudi_reg_config_t *config,
                                const char *name, const char *prefix,
                                ucs_stats_node_t *stats_parent);

void uct_gaudi_reg_cleanup(uct_gaudi_reg_t *reg);

/* Register [address, +length): device memory, or host memory (cached) */
ucs_status_t uct_gaudi_reg_mem(uct_gaudi_reg_t *reg, void *address,
                               size_t length, unsigned flags,
                               uct_gaudi_memh_t **memh_p);

/* Deregister; UCS_ERR_INVALID_PARAM (logged) if not a live registration */
ucs_status_t uct_gaudi_reg_dereg(uct_gaudi_reg_t *reg,
                                 uct_gaudi_memh_t *memh);

/**
 * Resolve [addr, addr+length) for the DMA engine.
 * Device memory: translated, no registration (UCS_ERR_INVALID_ADDR if the
 * range is not wholly inside one allocation).
 * Host memory: if @a memh is a registration covering the range it is used,
 * else the range is registered (through the cache if there is one) and
 * held in ref->region until uct_gaudi_reg_dma_release().
 */
ucs_status_t uct_gaudi_reg_dma_resolve(uct_gaudi_reg_t *reg,
                                       const void *addr, size_t length,
                                       uct_mem_h memh,
                                       uct_gaudi_dma_ref_t *ref);

void uct_gaudi_reg_dma_release(uct_gaudi_reg_t *reg,
                               uct_gaudi_dma_ref_t *ref);

#endif
