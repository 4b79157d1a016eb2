/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The adapters declared in gaudi_uct_compat.h: each one turns the
 * UCX-version specific form of a UCT op into the one form the MDs and
 * transports implement.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/base/gaudi_uct_compat.h>

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#include <string.h>


/* Components of other Gaudi providers: Intel's module (UCX >= 1.21 built
 * with the SynapseAI SDK) also names its file libuct_gaudi.so.0 */
static const char *uct_gaudi_foreign_components[] = {"gaudi_gdr"};

/* Components owning the borrowed memory type slot */
static const char *uct_gaudi_slot_owners[] = {"rocm_cpy", "rocm_ipc"};

static const char *uct_gaudi_component_find(const char **names,
                                            unsigned count)
{
    uct_component_t *component;
    unsigned i;

    ucs_list_for_each(component, &uct_components_list, list) {
        for (i = 0; i < count; ++i) {
            if (!strcmp(component->name, names[i])) {
                return names[i];
            }
        }
    }
    return NULL;
}

/* The first registered component of this name: another copy's when this
 * module is loaded twice (preloaded, and found by UCX's module loader
 * under another path) */
static const uct_component_t *
uct_gaudi_component_first(const uct_component_t *self)
{
    uct_component_t *component;

    ucs_list_for_each(component, &uct_components_list, list) {
        if (!strcmp(component->name, self->name)) {
            return component;
        }
    }
    return self;
}

int uct_gaudi_memory_type_available(const uct_component_t *component)
{
    static int warned_foreign = 0, warned_copy = 0;
    const char *owner;

    owner = uct_gaudi_component_find(uct_gaudi_foreign_components,
                                     ucs_static_array_size(
                                             uct_gaudi_foreign_components));
    if (owner != NULL) {
        /* both would detect and register the same Gaudi memory */
        if (!warned_foreign) {
            ucs_diag("gaudi: %s disabled because component '%s' (another "
                     "Gaudi provider) is loaded; UCX loads the first "
                     "libuct_gaudi.so.0 it finds (UCX_PLUGIN_PATH first), "
                     "UCX_MODULES=^gaudi loads neither",
                     component->name, owner);
            warned_foreign = 1;
        }
        return 0;
    }

    if (uct_gaudi_component_first(component) != component) {
        if (!warned_copy) {
            ucs_diag("gaudi: a second copy of libuct_gaudi is loaded "
                     "(preloaded and found by UCX's module loader); the "
                     "first one serves Gaudi memory");
            warned_copy = 1;
        }
        return 0;
    }

#if UCT_GAUDI_MEMORY_TYPE_BORROWED
    owner = uct_gaudi_component_find(uct_gaudi_slot_owners,
                                     ucs_static_array_size(
                                             uct_gaudi_slot_owners));
    if (owner != NULL) {
        ucs_warn("gaudi: disabled because component '%s' is loaded:"
                 " this UCX (%s) has no Gaudi memory type and Gaudi memory"
                 " would share the '%s' memory type with it"
                 " (use UCX >= 1.21, or exclude the ROCm module)",
                 owner, UCT_VERNO_STRING, UCT_GAUDI_MEMORY_TYPE_NAME);
        return 0;
    }
#else
    (void)uct_gaudi_slot_owners;
#endif
    return 1;
}


#if UCT_GAUDI_HAVE_MD_QUERY_V2
ucs_status_t uct_gaudi_md_query_v2(uct_md_h md, uct_md_attr_v2_t *md_attr,
                                   uct_gaudi_md_query_v1_func_t query,
                                   uct_gaudi_md_query_ext_func_t query_ext)
{
    uct_gaudi_md_ext_attr_t ext;
    uct_md_attr_t v1;
    ucs_status_t status;

    memset(&v1, 0, sizeof(v1));
    status = query(md, &v1);
    if (status != UCS_OK) {
        return status;
    }
    query_ext(md, &ext);

    /* UCX asks for every field (uct_md_attr_v2_init): all are filled */
    md_attr->max_alloc                 = v1.cap.max_alloc;
    md_attr->max_reg                   = v1.cap.max_reg;
    md_attr->flags                     = v1.cap.flags;
    md_attr->reg_mem_types             = v1.cap.reg_mem_types;
    /* registration maps synchronously: nothing is non-blocking */
    md_attr->reg_nonblock_mem_types    = 0;
    md_attr->cache_mem_types           = ext.cache_mem_types;
    md_attr->detect_mem_types          = v1.cap.detect_mem_types;
    md_attr->alloc_mem_types           = v1.cap.alloc_mem_types;
    md_attr->access_mem_types          = v1.cap.access_mem_types |
                                         ext.access_mem_types;
    md_attr->dmabuf_mem_types          = ext.dmabuf_mem_types;
    md_attr->reg_cost                  = v1.reg_cost;
    md_attr->rkey_packed_size          = v1.rkey_packed_size;
    md_attr->local_cpus                = v1.local_cpus;
    /* no exported memory keys (UCT_MD_FLAG_EXPORTED_MKEY is not set) */
    md_attr->exported_mkey_packed_size = 0;
    md_attr->reg_alignment             = ext.reg_alignment;
    memset(md_attr->global_id, 0, sizeof(md_attr->global_id));
    ucs_strncpy_zero(md_attr->component_name, md->component->name,
                     sizeof(md_attr->component_name));
#if UCT_GAUDI_HAVE_MD_ATTR_GVA_MEM_TYPES
    /* no global virtual addresses */
    md_attr->gva_mem_types             = 0;
#endif
#if UCT_GAUDI_HAVE_MD_ATTR_REQUIRED_MEM_FLAGS
    /* Gaudi memory needs nothing beyond being registrable */
    md_attr->required_mem_flags        = 0;
#endif
    return UCS_OK;
}
#endif


#if UCT_GAUDI_HAVE_COMPONENT_RKEY_COMPARE
ucs_status_t uct_gaudi_rkey_compare(uct_rkey_t rkey1, uct_rkey_t rkey2,
                                    size_t key_size,
                                    const uct_rkey_compare_params_t *params,
                                    int *result)
{
    int cmp;

    if ((params->field_mask != 0) || (result == NULL)) {
        return UCS_ERR_INVALID_PARAM;
    }

    cmp     = memcmp((const void*)rkey1, (const void*)rkey2, key_size);
    *result = (cmp > 0) - (cmp < 0);
    return UCS_OK;
}
#endif


#if UCT_GAUDI_HAVE_MEM_REG_PARAMS
ucs_status_t
uct_gaudi_mem_reg_params_flags(const uct_md_mem_reg_params_t *params,
                               unsigned *flags_p)
{
    int fd = UCS_PARAM_VALUE(UCT_MD_MEM_REG_FIELD, params, dmabuf_fd,
                             DMABUF_FD, UCT_DMABUF_FD_INVALID);

    if (fd != UCT_DMABUF_FD_INVALID) {
        /* dmabuf_mem_types is about exporting; importing is not offered */
        ucs_debug("gaudi: registration of a dma-buf (fd %d) is not supported",
                  fd);
        return UCS_ERR_UNSUPPORTED;
    }

    *flags_p = UCS_PARAM_VALUE(UCT_MD_MEM_REG_FIELD, params, flags, FLAGS, 0);
    return UCS_OK;
}
#endif


#if UCT_GAUDI_HAVE_MKEY_PACK_ADDRESS
ucs_status_t
uct_gaudi_mkey_pack_params_check(const uct_md_mkey_pack_params_t *params)
{
    unsigned flags = UCS_PARAM_VALUE(UCT_MD_MKEY_PACK_FIELD, params, flags,
                                     FLAGS, 0);

    if (flags & UCT_MD_MKEY_PACK_FLAG_EXPORT) {
        /* UCT_MD_FLAG_EXPORTED_MKEY is not offered */
        return UCS_ERR_UNSUPPORTED;
    }
    return UCS_OK;
}
#endif


void uct_gaudi_mem_attr_dmabuf(uct_md_mem_attr_t *mem_attr,
                               uct_gaudi_dmabuf_get_func_t get_fd, void *arg)
{
#if UCT_GAUDI_HAVE_MEM_ATTR_DMABUF
    uint64_t offset;

    if (!(mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_DMABUF_FD)) {
        return;
    }

    if (get_fd(arg, &mem_attr->dmabuf_fd, &offset) != UCS_OK) {
        mem_attr->dmabuf_fd = UCT_DMABUF_FD_INVALID;
        offset              = 0;
    }
    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET) {
        mem_attr->dmabuf_offset = offset;
    }
#endif
}

#if UCT_GAUDI_HAVE_MEM_QUERY_V2
ucs_status_t uct_gaudi_mem_query_v2(uct_md_h md, const void *address,
                                    size_t length,
                                    uct_md_mem_attr_v2_t *mem_attr,
                                    uct_gaudi_mem_query_v1_func_t query)
{
    /* the v1 fields have the same bits as the first v2 fields */
    const uint64_t v1_fields = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE |
                               UCT_MD_MEM_ATTR_FIELD_SYS_DEV |
                               UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS |
                               UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH |
                               UCT_MD_MEM_ATTR_FIELD_DMABUF_FD |
                               UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET;
    uct_md_mem_attr_t v1;
    ucs_status_t status;

    UCS_STATIC_ASSERT((uint64_t)UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET ==
                      (uint64_t)UCT_MD_MEM_ATTR_V2_FIELD_DMABUF_OFFSET);

    v1.field_mask = mem_attr->field_mask & v1_fields;
    status        = query(md, address, length, &v1);
    if (status != UCS_OK) {
        return status;
    }

    if (v1.field_mask & UCT_MD_MEM_ATTR_FIELD_MEM_TYPE) {
        mem_attr->mem_type = v1.mem_type;
    }
    if (v1.field_mask & UCT_MD_MEM_ATTR_FIELD_SYS_DEV) {
        mem_attr->sys_dev = v1.sys_dev;
    }
    if (v1.field_mask & UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS) {
        mem_attr->base_address = v1.base_address;
    }
    if (v1.field_mask & UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH) {
        mem_attr->alloc_length = v1.alloc_length;
    }
    if (v1.field_mask & UCT_MD_MEM_ATTR_FIELD_DMABUF_FD) {
        mem_attr->dmabuf_fd = v1.dmabuf_fd;
    }
    if (v1.field_mask & UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET) {
        mem_attr->dmabuf_offset = v1.dmabuf_offset;
    }
    if (mem_attr->field_mask & UCT_MD_MEM_ATTR_V2_FIELD_MEM_FLAGS) {
        /* the MD owns it: Gaudi memory, which MDs register (this one, and
         * network MDs through its dma-buf) */
        mem_attr->mem_flags = UCS_MEM_FLAG_REGISTRABLE;
    }
    return UCS_OK;
}
#endif


void uct_gaudi_perf_attr_fill_ext(uct_perf_attr_t *perf_attr,
                                  const uct_ppn_bandwidth_t *path_bandwidth)
{
#if UCT_GAUDI_HAVE_PERF_MAX_INFLIGHT_EPS
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS) {
        perf_attr->max_inflight_eps = SIZE_MAX;
    }
#endif
#if UCT_GAUDI_HAVE_PERF_PATH_BANDWIDTH
    /* UCP divides by it (ucp/proto/proto_common.c): never zero */
    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_PATH_BANDWIDTH) {
        perf_attr->path_bandwidth = *path_bandwidth;
    }
#else
    (void)path_bandwidth;
#endif
}


#if UCT_GAUDI_HAVE_IS_REACHABLE_V2
static void
uct_gaudi_reachable_info(const uct_iface_is_reachable_params_t *params,
                         const char *why)
{
    char *buf  = UCS_PARAM_VALUE(UCT_IFACE_IS_REACHABLE_FIELD, params,
                                 info_string, INFO_STRING, NULL);
    size_t len = UCS_PARAM_VALUE(UCT_IFACE_IS_REACHABLE_FIELD, params,
                                 info_string_length, INFO_STRING_LENGTH,
                                 0);

    if ((buf != NULL) && (len > 0)) {
        ucs_strncpy_zero(buf, why, len);
    }
}

int uct_gaudi_iface_is_reachable_v2(const uct_iface_h tl_iface,
                                    const uct_iface_is_reachable_params_t
                                    *params,
                                    uct_gaudi_is_reachable_v1_func_t check)
{
    const uint64_t addrs = UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR |
                           UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR;

    if (!ucs_test_all_flags(params->field_mask, addrs)) {
        uct_gaudi_reachable_info(params, "no device or iface address");
        return 0;
    }

    if (!check(tl_iface, params->device_addr, params->iface_addr)) {
        uct_gaudi_reachable_info(params, "peer not reachable by gaudi");
        return 0;
    }

    /* network scope: reachable is enough; device scope: the same device */
    return uct_iface_scope_is_reachable(tl_iface, params);
}
#endif
