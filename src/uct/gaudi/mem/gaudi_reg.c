/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Registrations of the memory layer: host memory and its cache, device
 * memory, address resolution.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/mem/gaudi_reg.h>
#include <uct/gaudi/mem/gaudi_mem_int.h>
#include <uct/gaudi/syn/gaudi_syn.h>

#include <ucm/api/ucm.h>
#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/sys/sys.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/type/class.h>


ucs_config_field_t uct_gaudi_reg_config_table[] = {
    {"RCACHE", "try",
     "Enable the registration cache of host memory (pin + device MMU map):\n"
     "try - use it if it can be created, yes - fail if not, no - map on\n"
     "every registration.",
     ucs_offsetof(uct_gaudi_reg_config_t, enable_rcache),
     UCS_CONFIG_TYPE_TERNARY},

    /* the driver pins whole pages (facts 3.3): page-aligned regions */
    {"", UCT_GAUDI_RCACHE_CONFIG_DEFAULTS, NULL,
     ucs_offsetof(uct_gaudi_reg_config_t, rcache),
     UCS_CONFIG_TYPE_TABLE(UCT_GAUDI_RCACHE_CONFIG_TABLE)},

    {NULL}
};


#ifdef ENABLE_STATS
static ucs_stats_class_t uct_gaudi_reg_stats_class = {
    .name          = "gaudi_reg",
    .num_counters  = UCT_GAUDI_REG_STAT_LAST,
    .class_id      = UCS_STATS_CLASS_ID_INVALID,
    .counter_names = {
        [UCT_GAUDI_REG_STAT_RCACHE_HIT]  = "rcache_hit",
        [UCT_GAUDI_REG_STAT_RCACHE_MISS] = "rcache_miss"
    }
};
#endif


/* Set by the mem_reg callback, which runs in the thread of ucs_rcache_get */
static __thread int uct_gaudi_reg_rcache_missed;


ucs_status_t uct_gaudi_mem_host_map(uct_gaudi_heap_t *heap, void *addr,
                                    size_t len, unsigned flags,
                                    uct_gaudi_memh_t *memh)
{
    uintptr_t start = ucs_align_down((uintptr_t)addr, heap->host_page);
    uintptr_t end   = ucs_align_up((uintptr_t)addr + len, heap->host_page);
    ucs_status_t status;
    uint64_t va;

    status = uct_gaudi_heap_take(heap, 0,
                                 flags & UCT_MD_MEM_FLAG_HIDE_ERRORS,
                                 "host memory registration");
    if (status != UCS_OK) {
        return status;
    }

    if (!uct_gaudi_heap_owned(heap, "host memory registration")) {
        return UCS_ERR_NO_DEVICE;
    }

    /* SynapseAI: nothing enters its host-address table, which the
     * application shares (docs/synapse.md, "Host maps"); a copy goes
     * direct through the application's entry, else is staged, and host
     * DMA addresses are host addresses. The kernel driver pins whole
     * pages anyway (facts 3.3): mapping them keeps the VA page-aligned,
     * so the DMA address is va + (addr - start). */
    if (heap->ctx->syn != NULL) {
        va = 0;
    } else {
        status = uct_gaudi_hl_mem_map_host(&heap->ctx->hl, (void*)start,
                                           end - start, 0, &va);
        if (status != UCS_OK) {
            if (!(flags & UCT_MD_MEM_FLAG_HIDE_ERRORS)) {
                ucs_error("gaudi %s (%s): registration of host memory %p "
                          "length %zu failed: %s", heap->info->name,
                          heap->info->node_name, addr, len,
                          ucs_status_string(status));
            }
            return status;
        }
    }

    memh->tag       = UCT_GAUDI_MEMH_TAG;
    memh->address   = (uintptr_t)addr;
    memh->length    = len;
    memh->map_va    = va;
    /* SynapseAI: host DMA addresses are host addresses */
    memh->dma_base  = (heap->ctx->syn != NULL) ? (uintptr_t)addr :
                      va + ((uintptr_t)addr - start);
    memh->buf       = NULL;
    memh->user_refs = 0;
    memh->deferred  = 0;
    UCT_GAUDI_MEM_COUNTER_ADD(heap, host_maps, 1);
    ucs_trace("gaudi %s: mapped host %p..%p at device 0x%" PRIx64,
              uct_gaudi_heap_name(heap), (void*)start, (void*)end, va);
    return UCS_OK;
}

void uct_gaudi_mem_host_unmap(uct_gaudi_heap_t *heap,
                              uct_gaudi_memh_t *memh)
{
    ucs_status_t status;

    memh->tag = 0;
    if (memh->deferred) {
        return;   /* never mapped */
    }

    if (!uct_gaudi_ctx_owned(heap->ctx)) {
        /* fork child: the mapping is the parent's; never unmap it */
        ucs_debug("gaudi %s: fork child keeps the parent's mapping 0x%" PRIx64,
                  uct_gaudi_heap_name(heap), memh->map_va);
        return;
    }

    /* SynapseAI: no entry was made */
    status = (heap->ctx->syn != NULL) ? UCS_OK :
             uct_gaudi_hl_mem_unmap(&heap->ctx->hl, memh->map_va);
    if (status == UCS_OK) {
        UCT_GAUDI_MEM_COUNTER_ADD(heap, host_unmaps, 1);
    }
    /* else the shim logged it; nothing else holds the mapping */
}


/* rcache callbacks */

static ucs_status_t
uct_gaudi_reg_rcache_mem_reg_cb(void *context, ucs_rcache_t *rcache,
                                void *arg, ucs_rcache_region_t *rregion,
                                uint16_t rcache_flags)
{
    uct_gaudi_reg_t *reg = context;
    uct_gaudi_reg_region_t *region =
            ucs_derived_of(rregion, uct_gaudi_reg_region_t);
    unsigned flags = *(unsigned*)arg;
    ucs_status_t status;

    if (rcache_flags & UCS_RCACHE_MEM_REG_HIDE_ERRORS) {
        flags |= UCT_MD_MEM_FLAG_HIDE_ERRORS;
    }

    status = uct_gaudi_mem_host_map(reg->heap, (void*)region->super.super.start,
                                    region->super.super.end -
                                    region->super.super.start, flags,
                                    &region->memh);
    if (status != UCS_OK) {
        return status;
    }

    region->memh.kind = UCT_GAUDI_MEMH_HOST_RCACHE;
    pthread_mutex_lock(&reg->heap->lock);
    uct_gaudi_heap_memh_add(reg->heap, &region->memh);
    pthread_mutex_unlock(&reg->heap->lock);
    uct_gaudi_reg_rcache_missed = 1;
    UCT_GAUDI_MEM_COUNTER_ADD(reg->heap, rcache_misses, 1);
    UCS_STATS_UPDATE_COUNTER(reg->stats, UCT_GAUDI_REG_STAT_RCACHE_MISS, 1);
    return UCS_OK;
}

static void uct_gaudi_reg_rcache_mem_dereg_cb(void *context,
                                              ucs_rcache_t *rcache,
                                              ucs_rcache_region_t *rregion)
{
    uct_gaudi_reg_t *reg = context;
    uct_gaudi_reg_region_t *region =
            ucs_derived_of(rregion, uct_gaudi_reg_region_t);

    pthread_mutex_lock(&reg->heap->lock);
    uct_gaudi_heap_memh_del(reg->heap, &region->memh);
    pthread_mutex_unlock(&reg->heap->lock);
    uct_gaudi_mem_host_unmap(reg->heap, &region->memh);
}

static void uct_gaudi_reg_rcache_dump_region_cb(void *context,
                                                ucs_rcache_t *rcache,
                                                ucs_rcache_region_t *rregion,
                                                char *buf, size_t max)
{
    uct_gaudi_reg_region_t *region =
            ucs_derived_of(rregion, uct_gaudi_reg_region_t);

    snprintf(buf, max, "device va 0x%" PRIx64 " users %u",
             region->memh.map_va, region->memh.user_refs);
}

/* The cache merges an overlapping region into a new, larger one, which the
 * mem_reg callback maps anew; the old region keeps its mapping until its
 * last user puts it: no state moves between them. Only caches that merge
 * (gaudi_compat.h) take it. */
static UCS_F_MAYBE_UNUSED void
uct_gaudi_reg_rcache_merge_cb(void *context, ucs_rcache_t *rcache, void *arg,
                              ucs_rcache_region_t *rregion)
{
    uct_gaudi_reg_t *reg = context;

    ucs_trace("gaudi %s: rcache merges region [0x%lx, 0x%lx)",
              uct_gaudi_heap_name(reg->heap), rregion->super.start,
              rregion->super.end);
}

static ucs_rcache_ops_t uct_gaudi_reg_rcache_ops = {
    .mem_reg     = uct_gaudi_reg_rcache_mem_reg_cb,
    .mem_dereg   = uct_gaudi_reg_rcache_mem_dereg_cb,
    UCT_GAUDI_RCACHE_MERGE_OP(uct_gaudi_reg_rcache_merge_cb)
    .dump_region = uct_gaudi_reg_rcache_dump_region_cb
};


static ucs_status_t
uct_gaudi_reg_rcache_init(uct_gaudi_reg_t *reg,
                          const uct_gaudi_reg_config_t *config,
                          const char *name, const char *prefix)
{
    ucs_rcache_params_t params;
    ucs_status_t status;

    reg->rcache = NULL;
    if (config->enable_rcache == UCS_NO) {
        return UCS_OK;
    }

    uct_gaudi_rcache_set_params(&params, &config->rcache);
    /* the driver pins whole pages: cache whole pages */
    uct_gaudi_rcache_params_align(&params, reg->heap->host_page);
    params.region_struct_size = sizeof(uct_gaudi_reg_region_t);
    /* munmap (and brk/madvise shrink) of host memory invalidates */
    params.ucm_events         = UCM_EVENT_VM_UNMAPPED;
    params.context            = reg;
    params.ops                = &uct_gaudi_reg_rcache_ops;

    status = ucs_rcache_create(&params, name,
                               UCS_STATS_RVAL(reg->stats), &reg->rcache);
    if (status == UCS_OK) {
        return UCS_OK;
    }

    reg->rcache = NULL;
    if (config->enable_rcache == UCS_YES) {
        ucs_error("gaudi %s: UCX_%sRCACHE=yes but the registration "
                  "cache could not be created: %s",
                  uct_gaudi_heap_name(reg->heap), prefix,
                  ucs_status_string(status));
        return status;
    }

    ucs_debug("gaudi %s: no registration cache (%s): registering directly",
              uct_gaudi_heap_name(reg->heap), ucs_status_string(status));
    return UCS_OK;
}

ucs_status_t uct_gaudi_reg_init(uct_gaudi_reg_t *reg, uct_gaudi_heap_t *heap,
                                const uct_gaudi_reg_config_t *config,
                                const char *name, const char *prefix,
                                ucs_stats_node_t *stats_parent)
{
    ucs_status_t status;

    reg->heap   = heap;
    reg->rcache = NULL;

    status = UCS_STATS_NODE_ALLOC(&reg->stats, &uct_gaudi_reg_stats_class,
                                  stats_parent, "%s", name);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gaudi_reg_rcache_init(reg, config, name, prefix);
    if (status != UCS_OK) {
        UCS_STATS_NODE_FREE(reg->stats);
    }
    return status;
}

void uct_gaudi_reg_cleanup(uct_gaudi_reg_t *reg)
{
    if (reg->rcache != NULL) {
        ucs_rcache_destroy(reg->rcache);
        reg->rcache = NULL;
    }
    UCS_STATS_NODE_FREE(reg->stats);
}

/* Registration of host memory through the cache */
static ucs_status_t
uct_gaudi_reg_rcache_reg(uct_gaudi_reg_t *reg, void *addr, size_t len,
                         unsigned flags, uct_gaudi_memh_t **memh_p)
{
    ucs_rcache_region_t *rregion;
    uct_gaudi_memh_t *memh;
    ucs_status_t status;

    uct_gaudi_reg_rcache_missed = 0;
    status = uct_gaudi_rcache_get(reg->rcache, addr, len,
                                  reg->heap->host_page, PROT_READ | PROT_WRITE,
                                  &flags, &rregion);
    if (status != UCS_OK) {
        return status;
    }

    if (!uct_gaudi_reg_rcache_missed) {
        UCT_GAUDI_MEM_COUNTER_ADD(reg->heap, rcache_hits, 1);
        UCS_STATS_UPDATE_COUNTER(reg->stats, UCT_GAUDI_REG_STAT_RCACHE_HIT,
                                 1);
    }

    memh = &ucs_derived_of(rregion, uct_gaudi_reg_region_t)->memh;
    pthread_mutex_lock(&reg->heap->lock);
    memh->user_refs++;
    pthread_mutex_unlock(&reg->heap->lock);
    *memh_p = memh;
    return UCS_OK;
}

/* Drop one reference; @a memh must be a valid HOST_RCACHE memh whose
 * user_refs the caller already decremented under heap->lock */
static void uct_gaudi_reg_rcache_put(uct_gaudi_reg_t *reg,
                                     uct_gaudi_memh_t *memh)
{
    ucs_rcache_region_put(reg->rcache,
                          &ucs_container_of(memh,
                                            uct_gaudi_reg_region_t,
                                            memh)->super);
}


/* Registration */

static ucs_status_t
uct_gaudi_reg_device(uct_gaudi_reg_t *reg, void *address, size_t length,
                     unsigned flags, uct_gaudi_memh_t **memh_p)
{
    uct_gaudi_dev_range_t range;
    uct_gaudi_memh_t *memh;
    ucs_status_t status;

    /* no ioctl: device memory is always mapped in the context */
    status = uct_gaudi_heap_resolve(reg->heap, (uintptr_t)address, length,
                                    &range);
    if (status != UCS_OK) {
        if (!(flags & UCT_MD_MEM_FLAG_HIDE_ERRORS)) {
            ucs_error("gaudi %s: registration of device memory %p length "
                      "%zu: not inside one live allocation",
                      uct_gaudi_heap_name(reg->heap), address, length);
        }
        return status;
    }

    memh = ucs_calloc(1, sizeof(*memh), "gaudi_memh");
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    memh->tag      = UCT_GAUDI_MEMH_TAG;
    memh->kind     = UCT_GAUDI_MEMH_DEVICE_REG;
    memh->address  = (uintptr_t)address;
    memh->length   = length;
    memh->dma_base = range.dma_base + ((uintptr_t)address - range.base);
    pthread_mutex_lock(&reg->heap->lock);
    uct_gaudi_heap_memh_add(reg->heap, memh);
    pthread_mutex_unlock(&reg->heap->lock);
    *memh_p = memh;
    return UCS_OK;
}

static ucs_status_t
uct_gaudi_reg_host(uct_gaudi_reg_t *reg, void *address, size_t length,
                   unsigned flags, uct_gaudi_memh_t **memh_p)
{
    uct_gaudi_memh_t *memh;
    ucs_status_t status;
    int deferred;

    /* no device yet (the framework acquires its own later): remember the
     * range only; copies, which need the device anyway, map it then */
    deferred = (uct_gaudi_heap_take(reg->heap, 0, 1,
                                    "host memory registration") != UCS_OK);
    if (!deferred && (reg->rcache != NULL)) {
        return uct_gaudi_reg_rcache_reg(reg, address, length, flags, memh_p);
    }

    memh = ucs_calloc(1, sizeof(*memh), "gaudi_memh");
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    if (deferred) {
        memh->tag      = UCT_GAUDI_MEMH_TAG;
        memh->address  = (uintptr_t)address;
        memh->length   = length;
        memh->deferred = 1;
        ucs_trace("gaudi %s: host %p+%zu registered before the device is "
                  "taken: mapped by its copies", uct_gaudi_heap_name(reg->heap),
                  address, length);
    } else {
        status = uct_gaudi_mem_host_map(reg->heap, address, length, flags,
                                        memh);
        if (status != UCS_OK) {
            ucs_free(memh);
            return status;
        }
    }

    memh->kind = UCT_GAUDI_MEMH_HOST_REG;
    pthread_mutex_lock(&reg->heap->lock);
    uct_gaudi_heap_memh_add(reg->heap, memh);
    pthread_mutex_unlock(&reg->heap->lock);
    *memh_p = memh;
    return UCS_OK;
}

ucs_status_t uct_gaudi_reg_mem(uct_gaudi_reg_t *reg, void *address,
                               size_t length, unsigned flags,
                               uct_gaudi_memh_t **memh_p)
{
    uct_gaudi_heap_t *heap = reg->heap;
    uint64_t addr          = (uintptr_t)address;

    if (uct_gaudi_heap_in_window(heap, addr, length)) {
        return uct_gaudi_reg_device(reg, address, length, flags, memh_p);
    }

    if (uct_gaudi_heap_touches_window(heap, addr, length) ||
        (length > UINT64_MAX - addr)) {
        ucs_error("gaudi %s: registration of %p length %zu: the range "
                  "straddles device memory", uct_gaudi_heap_name(heap),
                  address, length);
        return UCS_ERR_INVALID_ADDR;
    }

    return uct_gaudi_reg_host(reg, address, length, flags, memh_p);
}

ucs_status_t uct_gaudi_reg_dereg(uct_gaudi_reg_t *reg,
                                 uct_gaudi_memh_t *memh)
{
    uct_gaudi_heap_t *heap = reg->heap;
    uint32_t kind;

    pthread_mutex_lock(&heap->lock);
    if (!uct_gaudi_heap_memh_valid(heap, memh) ||
        (memh->kind == UCT_GAUDI_MEMH_ALLOC) ||
        ((memh->kind == UCT_GAUDI_MEMH_HOST_RCACHE) &&
         ((reg->rcache == NULL) || (memh->user_refs == 0)))) {
        pthread_mutex_unlock(&heap->lock);
        ucs_error("gaudi %s: mem_dereg of %p: not a live registration of "
                  "this memory domain (double dereg or wrong handle)",
                  uct_gaudi_heap_name(heap), memh);
        return UCS_ERR_INVALID_PARAM;
    }

    kind = memh->kind;
    if (kind == UCT_GAUDI_MEMH_HOST_RCACHE) {
        memh->user_refs--;
    } else {
        uct_gaudi_heap_memh_del(heap, memh);
    }
    pthread_mutex_unlock(&heap->lock);

    switch (kind) {
    case UCT_GAUDI_MEMH_HOST_RCACHE:
        uct_gaudi_reg_rcache_put(reg, memh);
        break;
    case UCT_GAUDI_MEMH_HOST_REG:
        uct_gaudi_mem_host_unmap(heap, memh);
        ucs_free(memh);
        break;
    default:
        memh->tag = 0;
        ucs_free(memh);
        break;
    }

    UCT_GAUDI_MEM_COUNTER_ADD(heap, dereg_count, 1);
    return UCS_OK;
}


/* Address resolution for the transports */

static int uct_gaudi_reg_memh_covers(const uct_gaudi_memh_t *memh,
                                     uint64_t addr, size_t length)
{
    return (addr >= memh->address) && (length <= memh->length) &&
           (addr - memh->address <= memh->length - length);
}

ucs_status_t uct_gaudi_reg_dma_resolve(uct_gaudi_reg_t *reg,
                                       const void *addr, size_t length,
                                       uct_mem_h memh,
                                       uct_gaudi_dma_ref_t *ref)
{
    uint64_t address        = (uintptr_t)addr;
    uct_gaudi_memh_t *gmemh = memh;
    ucs_status_t status;

    ref->region  = NULL;
    ref->host    = 0;
    if (uct_gaudi_heap_in_window(reg->heap, address, ucs_max(length, 1))) {
        return uct_gaudi_heap_dma_addr(reg->heap, addr, length,
                                       &ref->dma_addr);
    }

    /* the caller's registration (trusted: the transport passes UCT's memh) */
    if ((gmemh != UCT_MEM_HANDLE_NULL) &&
        (gmemh->tag == UCT_GAUDI_MEMH_TAG) && !gmemh->deferred &&
        uct_gaudi_reg_memh_covers(gmemh, address, length)) {
        ref->dma_addr = gmemh->dma_base + (address - gmemh->address);
        ref->host     = (gmemh->kind == UCT_GAUDI_MEMH_HOST_REG) ||
                        (gmemh->kind == UCT_GAUDI_MEMH_HOST_RCACHE);
        return UCS_OK;
    }

    /* held until dma_release, through the cache when there is one */
    status = uct_gaudi_reg_mem(reg, (void*)addr, length, 0, &gmemh);
    if (status != UCS_OK) {
        return status;
    }

    ref->dma_addr = gmemh->dma_base + (address - gmemh->address);
    ref->region   = gmemh;
    ref->host     = (gmemh->kind == UCT_GAUDI_MEMH_HOST_REG) ||
                    (gmemh->kind == UCT_GAUDI_MEMH_HOST_RCACHE);
    return UCS_OK;
}

void uct_gaudi_reg_dma_release(uct_gaudi_reg_t *reg, uct_gaudi_dma_ref_t *ref)
{
    if (ref->region != NULL) {
        (void)uct_gaudi_reg_dereg(reg, ref->region);
        ref->region = NULL;
    }
}
