/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * gaudi_copy host memory registration and its cache.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gaudi_copy_rcache.h"

#include <ucm/api/ucm.h>
#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/sys/sys.h>


/* Set by the mem_reg callback, which runs in the thread of ucs_rcache_get */
static __thread int uct_gaudi_copy_rcache_missed;


ucs_status_t uct_gaudi_copy_host_map(uct_gaudi_copy_heap_t *heap, void *addr,
                                     size_t len, unsigned flags,
                                     uct_gaudi_copy_memh_t *memh)
{
    uintptr_t start = ucs_align_down((uintptr_t)addr, heap->host_page);
    uintptr_t end   = ucs_align_up((uintptr_t)addr + len, heap->host_page);
    ucs_status_t status;
    uint64_t va;

    if (!uct_gaudi_copy_heap_owned(heap, "host memory registration")) {
        return UCS_ERR_NO_DEVICE;
    }

    /* The driver pins whole pages anyway (facts 3.3); mapping them keeps the
     * VA page-aligned, so the DMA address is va + (addr - start) */
    pthread_mutex_lock(&heap->ctx->lock);
    status = uct_gaudi_hl_mem_map_host(&heap->ctx->hl, (void*)start,
                                       end - start, 0, &va);
    pthread_mutex_unlock(&heap->ctx->lock);
    if (status != UCS_OK) {
        if (!(flags & UCT_MD_MEM_FLAG_HIDE_ERRORS)) {
            ucs_error("gaudi %s (%s): registration of host memory %p "
                      "length %zu failed: %s", heap->ctx->info->name,
                      heap->ctx->info->node_name, addr, len,
                      ucs_status_string(status));
        }
        return status;
    }

    memh->tag       = UCT_GAUDI_COPY_MEMH_TAG;
    memh->address   = (uintptr_t)addr;
    memh->length    = len;
    memh->map_va    = va;
    memh->dma_base  = va + ((uintptr_t)addr - start);
    memh->buf       = NULL;
    memh->user_refs = 0;
    UCT_GAUDI_COPY_COUNTER_ADD(heap, host_maps, 1);
    ucs_trace("gaudi %s: mapped host %p..%p at device 0x%" PRIx64,
              uct_gaudi_copy_heap_name(heap), (void*)start, (void*)end, va);
    return UCS_OK;
}

void uct_gaudi_copy_host_unmap(uct_gaudi_copy_heap_t *heap,
                               uct_gaudi_copy_memh_t *memh)
{
    ucs_status_t status;

    memh->tag = 0;
    if (getpid() != heap->pid) {
        /* fork child: the mapping is the parent's; never unmap it */
        ucs_debug("gaudi %s: fork child keeps the parent's mapping 0x%" PRIx64,
                  uct_gaudi_copy_heap_name(heap), memh->map_va);
        return;
    }

    pthread_mutex_lock(&heap->ctx->lock);
    status = uct_gaudi_hl_mem_unmap(&heap->ctx->hl, memh->map_va);
    pthread_mutex_unlock(&heap->ctx->lock);
    if (status == UCS_OK) {
        UCT_GAUDI_COPY_COUNTER_ADD(heap, host_unmaps, 1);
    }
    /* else the shim logged it; nothing else holds the mapping */
}


/* rcache callbacks */

static ucs_status_t
uct_gaudi_copy_rcache_mem_reg_cb(void *context, ucs_rcache_t *rcache,
                                 void *arg, ucs_rcache_region_t *rregion,
                                 uint16_t rcache_flags)
{
    uct_gaudi_copy_md_t *md = context;
    uct_gaudi_copy_rcache_region_t *region =
            ucs_derived_of(rregion, uct_gaudi_copy_rcache_region_t);
    unsigned flags = *(unsigned*)arg;
    ucs_status_t status;

    if (rcache_flags & UCS_RCACHE_MEM_REG_HIDE_ERRORS) {
        flags |= UCT_MD_MEM_FLAG_HIDE_ERRORS;
    }

    status = uct_gaudi_copy_host_map(md->heap, (void*)region->super.super.start,
                                     region->super.super.end -
                                     region->super.super.start, flags,
                                     &region->memh);
    if (status != UCS_OK) {
        return status;
    }

    region->memh.kind = UCT_GAUDI_COPY_MEMH_HOST_RCACHE;
    pthread_mutex_lock(&md->heap->lock);
    uct_gaudi_copy_heap_memh_add(md->heap, &region->memh);
    pthread_mutex_unlock(&md->heap->lock);
    uct_gaudi_copy_rcache_missed = 1;
    UCT_GAUDI_COPY_COUNTER_ADD(md->heap, rcache_misses, 1);
    UCS_STATS_UPDATE_COUNTER(md->stats, UCT_GAUDI_COPY_MD_STAT_RCACHE_MISS, 1);
    return UCS_OK;
}

static void uct_gaudi_copy_rcache_mem_dereg_cb(void *context,
                                               ucs_rcache_t *rcache,
                                               ucs_rcache_region_t *rregion)
{
    uct_gaudi_copy_md_t *md = context;
    uct_gaudi_copy_rcache_region_t *region =
            ucs_derived_of(rregion, uct_gaudi_copy_rcache_region_t);

    pthread_mutex_lock(&md->heap->lock);
    uct_gaudi_copy_heap_memh_del(md->heap, &region->memh);
    pthread_mutex_unlock(&md->heap->lock);
    uct_gaudi_copy_host_unmap(md->heap, &region->memh);
}

static void uct_gaudi_copy_rcache_dump_region_cb(void *context,
                                                 ucs_rcache_t *rcache,
                                                 ucs_rcache_region_t *rregion,
                                                 char *buf, size_t max)
{
    uct_gaudi_copy_rcache_region_t *region =
            ucs_derived_of(rregion, uct_gaudi_copy_rcache_region_t);

    snprintf(buf, max, "device va 0x%" PRIx64 " users %u",
             region->memh.map_va, region->memh.user_refs);
}

static ucs_rcache_ops_t uct_gaudi_copy_rcache_ops = {
    .mem_reg     = uct_gaudi_copy_rcache_mem_reg_cb,
    .mem_dereg   = uct_gaudi_copy_rcache_mem_dereg_cb,
    .dump_region = uct_gaudi_copy_rcache_dump_region_cb
};


ucs_status_t
uct_gaudi_copy_rcache_init(uct_gaudi_copy_md_t *md,
                           const uct_gaudi_copy_md_config_t *config)
{
    ucs_rcache_params_t params;
    ucs_status_t status;

    md->rcache = NULL;
    if (config->enable_rcache == UCS_NO) {
        return UCS_OK;
    }

    uct_md_set_rcache_params(&params, &config->rcache);
    /* the driver pins whole pages: cache whole pages */
    params.alignment          = ucs_max(params.alignment, md->heap->host_page);
    params.max_alignment      = params.alignment;
    params.region_struct_size = sizeof(uct_gaudi_copy_rcache_region_t);
    /* munmap (and brk/madvise shrink) of host memory invalidates */
    params.ucm_events         = UCM_EVENT_VM_UNMAPPED;
    params.context            = md;
    params.ops                = &uct_gaudi_copy_rcache_ops;

    status = ucs_rcache_create(&params, "gaudi_copy",
                               UCS_STATS_RVAL(md->stats), &md->rcache);
    if (status == UCS_OK) {
        return UCS_OK;
    }

    md->rcache = NULL;
    if (config->enable_rcache == UCS_YES) {
        ucs_error("gaudi %s: UCX_GAUDI_COPY_RCACHE=yes but the registration "
                  "cache could not be created: %s",
                  uct_gaudi_copy_heap_name(md->heap),
                  ucs_status_string(status));
        return status;
    }

    ucs_debug("gaudi %s: no registration cache (%s): registering directly",
              uct_gaudi_copy_heap_name(md->heap), ucs_status_string(status));
    return UCS_OK;
}

void uct_gaudi_copy_rcache_cleanup(uct_gaudi_copy_md_t *md)
{
    if (md->rcache != NULL) {
        ucs_rcache_destroy(md->rcache);
        md->rcache = NULL;
    }
}

ucs_status_t uct_gaudi_copy_rcache_reg(uct_gaudi_copy_md_t *md, void *addr,
                                       size_t len, unsigned flags,
                                       uct_gaudi_copy_memh_t **memh_p)
{
    ucs_rcache_region_t *rregion;
    uct_gaudi_copy_memh_t *memh;
    ucs_status_t status;

    uct_gaudi_copy_rcache_missed = 0;
    status = ucs_rcache_get(md->rcache, addr, len, PROT_READ | PROT_WRITE,
                            &flags, &rregion);
    if (status != UCS_OK) {
        return status;
    }

    if (!uct_gaudi_copy_rcache_missed) {
        UCT_GAUDI_COPY_COUNTER_ADD(md->heap, rcache_hits, 1);
        UCS_STATS_UPDATE_COUNTER(md->stats, UCT_GAUDI_COPY_MD_STAT_RCACHE_HIT,
                                 1);
    }

    memh = &ucs_derived_of(rregion, uct_gaudi_copy_rcache_region_t)->memh;
    pthread_mutex_lock(&md->heap->lock);
    memh->user_refs++;
    pthread_mutex_unlock(&md->heap->lock);
    *memh_p = memh;
    return UCS_OK;
}

void uct_gaudi_copy_rcache_put(uct_gaudi_copy_md_t *md,
                               uct_gaudi_copy_memh_t *memh)
{
    ucs_rcache_region_put(md->rcache,
                          &ucs_container_of(memh,
                                            uct_gaudi_copy_rcache_region_t,
                                            memh)->super);
}
