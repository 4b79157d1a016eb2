/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * gaudi_copy memory domain: UCT MD ops, memory type detection and rkeys
 * over the memory layer (device memory: mem/gaudi_mem.c, registrations
 * and address resolution: mem/gaudi_reg.c).
 * Design: docs/md.md.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gaudi_copy_md.h"

#include <uct/gaudi/base/gaudi_uct_compat.h>
#include <uct/gaudi/dev/gaudi_device.h>
#include <uct/gaudi/base/gaudi_resource.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/memory/memtype_cache.h>
#include <ucs/sys/sys.h>
#include <ucs/type/class.h>
#include <string.h>


static ucs_config_field_t uct_gaudi_copy_md_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_gaudi_copy_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {"", "", NULL,
     ucs_offsetof(uct_gaudi_copy_md_config_t, reg),
     UCS_CONFIG_TYPE_TABLE(uct_gaudi_reg_config_table)},

    {"MEM_REG_OVERHEAD", "10us",
     "Cost of one host memory registration without the cache (pin + map)",
     ucs_offsetof(uct_gaudi_copy_md_config_t, uc_reg_cost.c),
     UCS_CONFIG_TYPE_TIME},

    {"MEM_REG_GROWTH", "0.06ns",
     "Per-byte cost of a host memory registration without the cache",
     ucs_offsetof(uct_gaudi_copy_md_config_t, uc_reg_cost.m),
     UCS_CONFIG_TYPE_TIME},

    {NULL}
};


#ifdef ENABLE_STATS
static ucs_stats_class_t uct_gaudi_copy_md_stats_class = {
    .name          = "gaudi_copy_md",
    .num_counters  = UCT_GAUDI_COPY_MD_STAT_LAST,
    .class_id      = UCS_STATS_CLASS_ID_INVALID,
    .counter_names = {
        [UCT_GAUDI_COPY_MD_STAT_ALLOC_BYTES] = "alloc_bytes"
    }
};
#endif


/* Memtype cache seeding (docs/ucx-loading.md section 4) */

static pthread_mutex_t uct_gaudi_copy_memtype_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned uct_gaudi_copy_memtype_users       = 0;

/*
 * UCP's memtype cache only learns device memory from UCM events, which
 * nobody dispatches for Gaudi: tell it the whole pointer window once.
 * The cache is created lazily by the first lookup, and an update before
 * that is dropped, so force it into existence first.
 */
static void uct_gaudi_copy_memtype_seed(uct_gaudi_heap_t *heap)
{
    ucs_memory_info_t mem_info;

    pthread_mutex_lock(&uct_gaudi_copy_memtype_lock);
    if (uct_gaudi_copy_memtype_users++ == 0) {
        (void)ucs_memtype_cache_lookup((void*)heap->win_start, 1, &mem_info);
        uct_gaudi_memtype_cache_update((void*)heap->win_start,
                                       heap->win_end - heap->win_start,
                                       UCT_GAUDI_MEMORY_TYPE,
                                       heap->info->sys_dev);
        ucs_debug("gaudi %s: memtype cache %s [0x%" PRIx64 ", 0x%" PRIx64 ")",
                  uct_gaudi_heap_name(heap),
                  (ucs_memtype_cache_global_instance != NULL) ?
                  "seeded with" : "disabled, not seeded with",
                  heap->win_start, heap->win_end);
    }
    pthread_mutex_unlock(&uct_gaudi_copy_memtype_lock);
}

static void uct_gaudi_copy_memtype_unseed(uct_gaudi_heap_t *heap)
{
    pthread_mutex_lock(&uct_gaudi_copy_memtype_lock);
    if ((--uct_gaudi_copy_memtype_users == 0) &&
        (ucs_memtype_cache_global_instance != NULL)) {
        ucs_memtype_cache_remove((void*)heap->win_start,
                                 heap->win_end - heap->win_start);
    }
    pthread_mutex_unlock(&uct_gaudi_copy_memtype_lock);
}


/* Capabilities */

static ucs_status_t
uct_gaudi_copy_md_query(uct_md_h tl_md, uct_md_attr_t *md_attr)
{
    uct_gaudi_copy_md_t *md = ucs_derived_of(tl_md, uct_gaudi_copy_md_t);
    uint64_t dram_size      = md->heap->info->hw_ip.u61.dram_size;

    /* No NEED_RKEY (as cuda_copy): gaudi_cpy reaches only its own process,
     * and UCP stages Gaudi memory through host fragments on memory-type
     * lanes only when their MD needs no rkey (ucp/rndv/rndv.c,
     * ucp_rndv_req_init_zcopy_lane_map). Packed keys still work for UCT
     * users that pass one; UCT_INVALID_RKEY is accepted. */
    md_attr->cap.flags            = UCT_MD_FLAG_ALLOC | UCT_MD_FLAG_REG;
    md_attr->cap.reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST) |
                                    UCS_BIT(UCT_GAUDI_MEMORY_TYPE);
    md_attr->cap.alloc_mem_types  = UCS_BIT(UCT_GAUDI_MEMORY_TYPE);
    if (!uct_gaudi_heap_can_alloc(md->heap)) {
        /* Gaudi1 with a borrowed fd: see uct_gaudi_heap_can_alloc */
        md_attr->cap.flags          &= ~UCT_MD_FLAG_ALLOC;
        md_attr->cap.alloc_mem_types = 0;
    }
    md_attr->cap.access_mem_types = UCS_BIT(UCT_GAUDI_MEMORY_TYPE);
    md_attr->cap.detect_mem_types = UCS_BIT(UCT_GAUDI_MEMORY_TYPE);
    /* the largest allocation the device could satisfy */
    md_attr->cap.max_alloc        = dram_size;
    /* host: what can be pinned; device: one allocation */
    md_attr->cap.max_reg          = ucs_max(ucs_get_phys_mem_size(),
                                            dram_size);
    md_attr->rkey_packed_size     = sizeof(uct_gaudi_copy_rkey_t);
    md_attr->reg_cost             = md->reg_cost;
    memset(&md_attr->local_cpus, 0xff, sizeof(md_attr->local_cpus));
    return UCS_OK;
}


/* Device memory */

static ucs_status_t
uct_gaudi_copy_mem_alloc(uct_md_h tl_md, size_t *length_p, void **address_p,
                         ucs_memory_type_t mem_type, unsigned flags,
                         const char *alloc_name, uct_mem_h *memh_p)
{
    uct_gaudi_copy_md_t *md = ucs_derived_of(tl_md, uct_gaudi_copy_md_t);
    uct_gaudi_buf_t *buf;
    ucs_status_t status;

    if (mem_type != UCT_GAUDI_MEMORY_TYPE) {
        ucs_error("gaudi %s: cannot allocate %s memory for '%s': only %s",
                  uct_gaudi_heap_name(md->heap),
                  ucs_memory_type_names[mem_type], alloc_name,
                  UCT_GAUDI_MEMORY_TYPE_NAME);
        return UCS_ERR_UNSUPPORTED;
    }
    if (flags & UCT_MD_MEM_FLAG_FIXED) {
        ucs_error("gaudi %s: fixed-address allocation of '%s' is not "
                  "supported", uct_gaudi_heap_name(md->heap),
                  alloc_name);
        return UCS_ERR_UNSUPPORTED;
    }

    status = uct_gaudi_heap_alloc(md->heap, length_p, &buf);
    if (status != UCS_OK) {
        return status;
    }

    UCS_STATS_UPDATE_COUNTER(md->stats, UCT_GAUDI_COPY_MD_STAT_ALLOC_BYTES,
                             *length_p);
    *address_p = (void*)buf->memh.address;
    *memh_p    = &buf->memh;
    return UCS_OK;
}

static ucs_status_t uct_gaudi_copy_mem_free(uct_md_h tl_md, uct_mem_h memh)
{
    uct_gaudi_copy_md_t *md = ucs_derived_of(tl_md, uct_gaudi_copy_md_t);
    uct_gaudi_heap_t *heap  = md->heap;
    uct_gaudi_memh_t *gmemh = memh;
    ucs_status_t status;

    pthread_mutex_lock(&heap->lock);
    if (!uct_gaudi_heap_memh_valid(heap, memh) ||
        (gmemh->kind != UCT_GAUDI_MEMH_ALLOC)) {
        pthread_mutex_unlock(&heap->lock);
        ucs_error("gaudi %s: mem_free of %p: not a live device allocation "
                  "(double free or wrong handle)",
                  uct_gaudi_heap_name(heap), memh);
        return UCS_ERR_INVALID_PARAM;
    }

    UCS_STATS_UPDATE_COUNTER(md->stats, UCT_GAUDI_COPY_MD_STAT_ALLOC_BYTES,
                             -gmemh->length);
    status = uct_gaudi_heap_free(heap, gmemh->buf);
    pthread_mutex_unlock(&heap->lock);
    return status;
}


/* Registration */

static ucs_status_t uct_gaudi_copy_mem_reg(uct_md_h tl_md, void *address,
                                           size_t length, unsigned flags,
                                           uct_mem_h *memh_p)
{
    uct_gaudi_copy_md_t *md = ucs_derived_of(tl_md, uct_gaudi_copy_md_t);
    uct_gaudi_memh_t *memh;
    ucs_status_t status;

    status = uct_gaudi_reg_mem(&md->reg, address, length, flags, &memh);
    if (status != UCS_OK) {
        return status;
    }

    UCT_GAUDI_MEM_COUNTER_ADD(md->heap, reg_count, 1);
    *memh_p = memh;
    return UCS_OK;
}

static ucs_status_t
uct_gaudi_copy_mem_dereg(uct_md_h tl_md,
                         const uct_md_mem_dereg_params_t *params)
{
    uct_gaudi_copy_md_t *md = ucs_derived_of(tl_md, uct_gaudi_copy_md_t);

    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 0);

    return uct_gaudi_reg_dereg(&md->reg, params->memh);
}


/* Memory type detection */

/* The range a mem_query asks a dma-buf of (uct_gaudi_mem_attr_dmabuf) */
typedef struct uct_gaudi_copy_dmabuf_arg {
    uct_gaudi_heap_t *heap;
    uint64_t         addr;
    size_t           length;
} uct_gaudi_copy_dmabuf_arg_t;

static ucs_status_t uct_gaudi_copy_dmabuf_get(void *arg, int *fd_p,
                                              uint64_t *offset_p)
{
    uct_gaudi_copy_dmabuf_arg_t *range = arg;

    return uct_gaudi_heap_dmabuf(range->heap, range->addr, range->length,
                                 fd_p, offset_p);
}

static ucs_status_t
uct_gaudi_copy_mem_query(uct_md_h tl_md, const void *address, size_t length,
                         uct_md_mem_attr_t *mem_attr)
{
    uct_gaudi_copy_md_t *md = ucs_derived_of(tl_md, uct_gaudi_copy_md_t);
    uint64_t addr           = (uintptr_t)address;
    uct_gaudi_copy_dmabuf_arg_t dmabuf;
    uct_gaudi_dev_range_t range;

    /* not ours: an error, so that the next detecting MD is asked */
    if (!uct_gaudi_heap_in_window(md->heap, addr, ucs_max(length, 1))) {
        return UCS_ERR_INVALID_ADDR;
    }

    if (uct_gaudi_heap_resolve(md->heap, addr, length, &range) !=
        UCS_OK) {
        /* device memory by its address, but not a live allocation */
        range.base   = addr;
        range.length = length;
    }

    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_MEM_TYPE) {
        mem_attr->mem_type = UCT_GAUDI_MEMORY_TYPE;
    }
    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_SYS_DEV) {
        mem_attr->sys_dev = md->heap->info->sys_dev;
    }
    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS) {
        mem_attr->base_address = (void*)range.base;
    }
    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH) {
        mem_attr->alloc_length = range.length;
    }
    dmabuf.heap   = md->heap;
    dmabuf.addr   = addr;
    dmabuf.length = length;
    uct_gaudi_mem_attr_dmabuf(mem_attr, uct_gaudi_copy_dmabuf_get, &dmabuf);
    return UCS_OK;
}

static ucs_status_t
uct_gaudi_copy_detect_memory_type(uct_md_h tl_md, const void *address,
                                  size_t length, ucs_memory_type_t *mem_type_p)
{
    uct_gaudi_copy_md_t *md = ucs_derived_of(tl_md, uct_gaudi_copy_md_t);
    uint64_t addr           = (uintptr_t)address;

    if (uct_gaudi_heap_in_window(md->heap, addr, ucs_max(length, 1))) {
        *mem_type_p = UCT_GAUDI_MEMORY_TYPE;
        return UCS_OK;
    }
    if (uct_gaudi_heap_touches_window(md->heap, addr, length)) {
        return UCS_ERR_INVALID_ADDR;   /* straddles the window */
    }

    *mem_type_p = UCS_MEMORY_TYPE_HOST;
    return UCS_OK;
}


/* Remote keys */

static ucs_status_t
uct_gaudi_copy_mkey_pack(uct_md_h tl_md, uct_mem_h memh,
                         const uct_md_mkey_pack_params_t *params,
                         void *rkey_buffer)
{
    uct_gaudi_copy_md_t *md    = ucs_derived_of(tl_md, uct_gaudi_copy_md_t);
    uct_gaudi_memh_t *gmemh    = memh;
    uct_gaudi_copy_rkey_t *key = rkey_buffer;
    int valid;

    pthread_mutex_lock(&md->heap->lock);
    valid = uct_gaudi_heap_memh_valid(md->heap, memh);
    if (valid) {
        key->version   = UCT_GAUDI_COPY_RKEY_VERSION;
        key->flags     = ((gmemh->kind == UCT_GAUDI_MEMH_ALLOC) ||
                          (gmemh->kind == UCT_GAUDI_MEMH_DEVICE_REG)) ?
                         UCT_GAUDI_COPY_RKEY_FLAG_DEVICE : 0;
        key->reserved  = 0;
        key->module_id = md->heap->info->module_id;
        key->ctx_uuid  = md->heap->uuid;
        key->base      = gmemh->address;
        key->length    = gmemh->length;
        key->dma_base  = gmemh->dma_base;
    }
    pthread_mutex_unlock(&md->heap->lock);

    if (!valid) {
        ucs_error("gaudi %s: mkey_pack of %p: not a live memory handle",
                  uct_gaudi_heap_name(md->heap), memh);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

static ucs_status_t
uct_gaudi_copy_rkey_unpack(uct_component_t *component,
                           const void *rkey_buffer, uct_rkey_t *rkey_p,
                           void **handle_p)
{
    const uct_gaudi_copy_rkey_t *packed = rkey_buffer;
    uct_gaudi_copy_rkey_t *key;

    /* UCX 1.13 releases the key of every MD in the packed key when one
     * fails to unpack, this one included: leave nothing to release (else
     * the slot's stale key, already freed, is freed again) */
    *rkey_p   = UCT_INVALID_RKEY;
    *handle_p = NULL;

    if ((packed->version != UCT_GAUDI_COPY_RKEY_VERSION) ||
        (packed->reserved != 0) ||
        (packed->flags & ~UCT_GAUDI_COPY_RKEY_FLAG_DEVICE) ||
        (packed->length > UINT64_MAX - packed->base)) {
        ucs_error("gaudi_copy: cannot unpack remote key: version %u "
                  "(expected %u), flags 0x%x, base 0x%" PRIx64 " length %"
                  PRIu64, packed->version, UCT_GAUDI_COPY_RKEY_VERSION,
                  packed->flags, packed->base, packed->length);
        return UCS_ERR_INVALID_PARAM;
    }

    key = ucs_malloc(sizeof(*key), "gaudi_copy_rkey");
    if (key == NULL) {
        ucs_error("gaudi_copy: failed to allocate a remote key");
        return UCS_ERR_NO_MEMORY;
    }

    *key      = *packed;
    *handle_p = NULL;
    *rkey_p   = (uintptr_t)key;
    return UCS_OK;
}

static ucs_status_t uct_gaudi_copy_rkey_release(uct_component_t *component,
                                                uct_rkey_t rkey, void *handle)
{
    if (rkey != UCT_INVALID_RKEY) {    /* a key that did not unpack */
        ucs_free((void*)rkey);
    }
    return UCS_OK;
}

ucs_status_t uct_gaudi_copy_rkey_check(uct_gaudi_copy_md_t *md,
                                       uct_rkey_t rkey, uint64_t remote_addr,
                                       size_t length)
{
    const uct_gaudi_copy_rkey_t *key = (const uct_gaudi_copy_rkey_t*)rkey;
    const uct_gaudi_dev_info_t *info = md->heap->info;

    if ((key->module_id != info->module_id) ||
        (key->ctx_uuid != md->heap->uuid)) {
        ucs_error("gaudi %s (module %u): remote key of %s (module %u, "
                  "context 0x%" PRIx64 ", this one 0x%" PRIx64 ") cannot be "
                  "used here: its DMA addresses belong to another device "
                  "context", info->name, info->module_id,
                  (key->module_id != info->module_id) ? "another device" :
                  "another process", key->module_id, key->ctx_uuid,
                  md->heap->uuid);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((remote_addr < key->base) || (length > key->length) ||
        (remote_addr - key->base > key->length - length)) {
        ucs_error("gaudi %s: remote range [0x%" PRIx64 ", +%zu) is outside "
                  "the registration [0x%" PRIx64 ", +%" PRIu64 ")",
                  info->name, remote_addr, length, key->base, key->length);
        return UCS_ERR_INVALID_ADDR;
    }
    return UCS_OK;
}


/* MD lifetime */

static void uct_gaudi_copy_md_close(uct_md_h tl_md)
{
    uct_gaudi_copy_md_t *md = ucs_derived_of(tl_md, uct_gaudi_copy_md_t);

    uct_gaudi_reg_cleanup(&md->reg);
    uct_gaudi_copy_memtype_unseed(md->heap);
    UCS_STATS_NODE_FREE(md->stats);
    uct_gaudi_heap_put(md->heap);
    ucs_free(md);
}

/* Attributes only the v2 query reports */
static void uct_gaudi_copy_md_query_ext(uct_md_h tl_md,
                                        uct_gaudi_md_ext_attr_t *ext)
{
    uct_gaudi_copy_md_t *md = ucs_derived_of(tl_md, uct_gaudi_copy_md_t);

    /* gaudi_cpy moves host buffers it was not given a memh of: short and
     * bcopy through the bounce buffer, zcopy registers them on the fly */
    ext->access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    /* host registrations go through the rcache when there is one */
    ext->cache_mem_types  = (md->reg.rcache != NULL) ?
                            UCS_BIT(UCS_MEMORY_TYPE_HOST) : 0;
    /* mem_query gives a dma-buf of device memory, for network MDs */
    ext->dmabuf_mem_types = UCS_BIT(UCT_GAUDI_MEMORY_TYPE);
    ext->reg_alignment    = 1;
}

static ucs_sys_device_t uct_gaudi_copy_md_sys_dev(uct_md_h tl_md)
{
    return ucs_derived_of(tl_md, uct_gaudi_copy_md_t)->heap->info->sys_dev;
}

UCT_GAUDI_MD_QUERY_ADAPTER(uct_gaudi_compat_copy_md_query,
                           uct_gaudi_copy_md_query,
                           uct_gaudi_copy_md_query_ext)
UCT_GAUDI_MEM_ALLOC_ADAPTER(uct_gaudi_compat_copy_mem_alloc,
                            uct_gaudi_copy_mem_alloc,
                            uct_gaudi_copy_md_sys_dev)
UCT_GAUDI_MEM_REG_ADAPTER(uct_gaudi_compat_copy_mem_reg,
                          uct_gaudi_copy_mem_reg)
UCT_GAUDI_MEM_QUERY_ADAPTER(uct_gaudi_compat_copy_mem_query,
                            uct_gaudi_copy_mem_query)
UCT_GAUDI_MKEY_PACK_ADAPTER(uct_gaudi_compat_copy_mkey_pack,
                            uct_gaudi_copy_mkey_pack)
UCT_GAUDI_RKEY_UNPACK_ADAPTER(uct_gaudi_compat_copy_rkey_unpack,
                              uct_gaudi_copy_rkey_unpack)
UCT_GAUDI_RKEY_COMPARE_ADAPTER(uct_gaudi_compat_copy_rkey_compare,
                               uct_gaudi_copy_rkey_t)

static uct_md_ops_t uct_gaudi_copy_md_ops = {
    .close                  = uct_gaudi_copy_md_close,
    .query                  = uct_gaudi_compat_copy_md_query,
    .mem_alloc              = uct_gaudi_compat_copy_mem_alloc,
    .mem_free               = uct_gaudi_copy_mem_free,
    .mem_advise             = (uct_md_mem_advise_func_t)
                                  ucs_empty_function_return_unsupported,
    .mem_reg                = uct_gaudi_compat_copy_mem_reg,
    .mem_dereg              = uct_gaudi_copy_mem_dereg,
    .mem_query              = uct_gaudi_compat_copy_mem_query,
    .mkey_pack              = uct_gaudi_compat_copy_mkey_pack,
    .detect_memory_type     = uct_gaudi_copy_detect_memory_type,
    UCT_GAUDI_MD_OPTIONAL_OPS
};

static ucs_status_t
uct_gaudi_copy_md_open(uct_component_t *component, const char *md_name,
                       const uct_md_config_t *uct_config, uct_md_h *md_p)
{
    const uct_gaudi_copy_md_config_t *config =
            ucs_derived_of(uct_config, uct_gaudi_copy_md_config_t);
    uct_gaudi_copy_md_t *md;
    ucs_status_t status;

    md = ucs_calloc(1, sizeof(*md), "uct_gaudi_copy_md");
    if (md == NULL) {
        ucs_error("gaudi_copy: failed to allocate the memory domain");
        return UCS_ERR_NO_MEMORY;
    }

    md->super.ops       = &uct_gaudi_copy_md_ops;
    md->super.component = &uct_gaudi_copy_component;

    /* The MD's one reference: on the memory layer, which takes the device
     * when Gaudi memory first needs it */
    status = uct_gaudi_heap_md_get(&md->heap);
    if (status != UCS_OK) {
        goto err_free;
    }

    status = UCS_STATS_NODE_ALLOC(&md->stats, &uct_gaudi_copy_md_stats_class,
                                  ucs_stats_get_root(), "%s",
                                  md->heap->info->name);
    if (status != UCS_OK) {
        goto err_heap_put;
    }

    status = uct_gaudi_reg_init(&md->reg, md->heap, &config->reg,
                                UCT_GAUDI_COPY_COMPONENT_NAME, "GAUDI_COPY_",
                                UCS_STATS_RVAL(md->stats));
    if (status != UCS_OK) {
        goto err_stats;
    }

    md->reg_cost = (md->reg.rcache != NULL) ?
                   ucs_linear_func_make(
                           uct_gaudi_rcache_overhead(&config->reg.rcache), 0) :
                   config->uc_reg_cost;

    uct_gaudi_copy_memtype_seed(md->heap);
    *md_p = &md->super;
    return UCS_OK;

err_stats:
    UCS_STATS_NODE_FREE(md->stats);
err_heap_put:
    uct_gaudi_heap_put(md->heap);
err_free:
    ucs_free(md);
    return status;
}

uct_component_t uct_gaudi_copy_component = {
    .query_md_resources = uct_gaudi_query_md_resources,
    .md_open            = uct_gaudi_copy_md_open,
    .cm_open            = (uct_component_cm_open_func_t)
                              ucs_empty_function_return_unsupported,
    .rkey_unpack        = uct_gaudi_compat_copy_rkey_unpack,
    .rkey_ptr           = (uct_component_rkey_ptr_func_t)
                              ucs_empty_function_return_unsupported,
    .rkey_release       = uct_gaudi_copy_rkey_release,
    UCT_GAUDI_RKEY_COMPARE_OP(uct_gaudi_compat_copy_rkey_compare)
    .name               = UCT_GAUDI_COPY_COMPONENT_NAME,
    .md_config          = {
        .name           = "Gaudi-copy memory domain",
        .prefix         = "GAUDI_COPY_",
        .table          = uct_gaudi_copy_md_config_table,
        .size           = sizeof(uct_gaudi_copy_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(
                              &uct_gaudi_copy_component),
    .flags              = 0,
    .md_vfs_init        = (uct_component_md_vfs_init_func_t)
                              ucs_empty_function
};
UCT_COMPONENT_REGISTER(&uct_gaudi_copy_component);
