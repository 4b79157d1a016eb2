/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * UCX-version differences of UCT's internals (components, MDs, ifaces),
 * for the layers that implement UCT objects (base/, copy/, ipc/). The MDs
 * and transports implement each op in one form (UCX 1.13's) and reference
 * the adapters defined here in their op tables; ops that exist only in
 * some releases are added to the tables by the UCT_GAUDI_*_OPS macros
 * below. Decided by configure-time probes, as in compat/gaudi_compat.h.
 */

#ifndef UCT_GAUDI_UCT_COMPAT_H_
#define UCT_GAUDI_UCT_COMPAT_H_

#include <uct/gaudi/compat/gaudi_compat.h>

#include <uct/api/version.h>
#include <uct/base/uct_component.h>
#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>


#if !UCT_GAUDI_HAVE_COMPONENTS_LIST_DECL
/* exported by libuct, not declared by its headers */
extern ucs_list_link_t uct_components_list;
#endif

/*
 * Whether Gaudi memory is ours to serve in this process, for one of our
 * components: not when another Gaudi provider (Intel's gaudi_gdr) is
 * loaded, not for a second copy of this module (a preloaded one and one
 * found by UCX's loader: the first registered wins), and, where the ROCM
 * slot is borrowed, not when a real ROCm component owns it (UCP keeps one
 * memtype EP and one detect order per type). Call after UCX has loaded its
 * modules, i.e. from query_md_resources. Logs why when it is not.
 */
int uct_gaudi_memory_type_available(const uct_component_t *component);


/* Memory domain ops */

/* Attributes that only the v2 MD query has; every MD fills them */
typedef struct uct_gaudi_md_ext_attr {
    /* accessed without the user's registration, beyond access_mem_types:
     * UCX >= 1.22 picks lanes of an MD that needs no memory handle by
     * access_mem_types alone (ucp_wireup_memaccess_bitmap) */
    uint64_t access_mem_types;
    uint64_t cache_mem_types;  /* registrations cached by the MD */
    uint64_t dmabuf_mem_types; /* mem_query can give a dma-buf fd */
    size_t   reg_alignment;    /* required alignment of registrations */
} uct_gaudi_md_ext_attr_t;

typedef ucs_status_t (*uct_gaudi_md_query_v1_func_t)(uct_md_h md,
                                                     uct_md_attr_t *md_attr);
typedef void (*uct_gaudi_md_query_ext_func_t)(uct_md_h md,
                                              uct_gaudi_md_ext_attr_t *ext);

#if !UCT_GAUDI_HAVE_MKEY_PACK_PARAMS
/* the 1.13 form of mkey_pack takes these; older UCX passes none */
typedef struct uct_md_mkey_pack_params {
    uint64_t field_mask;
    unsigned flags;
} uct_md_mkey_pack_params_t;
#endif

/*
 * Memory invalidation as each UCX asks for it: UCT_MD_FLAG_INVALIDATE
 * (UCX <= 1.13, PEER-mode rendezvous lanes), UCT_MD_FLAG_INVALIDATE_RMA
 * (UCX >= 1.16, the same lanes). Not AMO: no transport here does atomics.
 */
#if UCT_GAUDI_HAVE_MD_FLAG_INVALIDATE_RMA
#  define UCT_GAUDI_MD_FLAGS_INVALIDATE \
    (UCT_MD_FLAG_INVALIDATE | UCT_MD_FLAG_INVALIDATE_RMA)
#else
#  define UCT_GAUDI_MD_FLAGS_INVALIDATE UCT_MD_FLAG_INVALIDATE
#endif

/*
 * Op adapters: each macro defines a static function under the full name it
 * is given (uct_gaudi_compat_<component>_<op>), wrapping the component's
 * functions it is given, so that the name is found where it is defined.
 */

#if UCT_GAUDI_HAVE_MD_QUERY_V2
ucs_status_t uct_gaudi_md_query_v2(uct_md_h md, uct_md_attr_v2_t *md_attr,
                                   uct_gaudi_md_query_v1_func_t query,
                                   uct_gaudi_md_query_ext_func_t query_ext);
#  define UCT_GAUDI_MD_QUERY_ADAPTER(_name, _query, _query_ext) \
    static ucs_status_t _name(uct_md_h md, uct_md_attr_v2_t *md_attr) \
    { \
        return uct_gaudi_md_query_v2(md, md_attr, _query, _query_ext); \
    }
#else
#  define UCT_GAUDI_MD_QUERY_ADAPTER(_name, _query, _query_ext) \
    static ucs_status_t _name(uct_md_h md, uct_md_attr_t *md_attr) \
    { \
        (void)_query_ext; /* nothing to report it in */ \
        return _query(md, md_attr); \
    }
#endif

#if UCT_GAUDI_HAVE_MEM_REG_PARAMS
/* The flags of a registration; a dma-buf to import is not supported */
ucs_status_t
uct_gaudi_mem_reg_params_flags(const uct_md_mem_reg_params_t *params,
                               unsigned *flags_p);
#  define UCT_GAUDI_MEM_REG_ADAPTER(_name, _mem_reg) \
    static ucs_status_t _name( \
            uct_md_h md, void *address, size_t length, \
            const uct_md_mem_reg_params_t *params, uct_mem_h *memh_p) \
    { \
        unsigned flags; \
        ucs_status_t status = uct_gaudi_mem_reg_params_flags(params, &flags); \
        return (status != UCS_OK) ? status : \
               _mem_reg(md, address, length, flags, memh_p); \
    }
#else
#  define UCT_GAUDI_MEM_REG_ADAPTER(_name, _mem_reg) \
    static ucs_status_t _name( \
            uct_md_h md, void *address, size_t length, unsigned flags, \
            uct_mem_h *memh_p) \
    { \
        return _mem_reg(md, address, length, flags, memh_p); \
    }
#endif

#if UCT_GAUDI_HAVE_MKEY_PACK_ADDRESS
/* Exported keys (UCT_MD_MKEY_PACK_FLAG_EXPORT) are not offered */
ucs_status_t
uct_gaudi_mkey_pack_params_check(const uct_md_mkey_pack_params_t *params);
#  define UCT_GAUDI_MKEY_PACK_ADAPTER(_name, _mkey_pack) \
    static ucs_status_t _name( \
            uct_md_h md, uct_mem_h memh, void *address, size_t length, \
            const uct_md_mkey_pack_params_t *params, void *buffer) \
    { \
        ucs_status_t status = uct_gaudi_mkey_pack_params_check(params); \
        return (status != UCS_OK) ? status : \
               _mkey_pack(md, memh, params, buffer); \
    }
#elif UCT_GAUDI_HAVE_MKEY_PACK_PARAMS
#  define UCT_GAUDI_MKEY_PACK_ADAPTER(_name, _mkey_pack) \
    static ucs_status_t _name( \
            uct_md_h md, uct_mem_h memh, \
            const uct_md_mkey_pack_params_t *params, void *buffer) \
    { \
        return _mkey_pack(md, memh, params, buffer); \
    }
#else
#  define UCT_GAUDI_MKEY_PACK_ADAPTER(_name, _mkey_pack) \
    static ucs_status_t _name(uct_md_h md, uct_mem_h memh, void *buffer) \
    { \
        uct_md_mkey_pack_params_t params = {.field_mask = 0}; \
        return _mkey_pack(md, memh, &params, buffer); \
    }
#endif

#if UCT_GAUDI_HAVE_MEM_QUERY_V2
typedef ucs_status_t (*uct_gaudi_mem_query_v1_func_t)(
        uct_md_h md, const void *address, size_t length,
        uct_md_mem_attr_t *mem_attr);
ucs_status_t uct_gaudi_mem_query_v2(uct_md_h md, const void *address,
                                    size_t length,
                                    uct_md_mem_attr_v2_t *mem_attr,
                                    uct_gaudi_mem_query_v1_func_t query);
#  define UCT_GAUDI_MEM_QUERY_ADAPTER(_name, _mem_query) \
    static ucs_status_t _name( \
            uct_md_h md, const void *address, size_t length, \
            uct_md_mem_attr_v2_t *mem_attr) \
    { \
        return uct_gaudi_mem_query_v2(md, address, length, mem_attr, \
                                      _mem_query); \
    }
#else
#  define UCT_GAUDI_MEM_QUERY_ADAPTER(_name, _mem_query) \
    static ucs_status_t _name( \
            uct_md_h md, const void *address, size_t length, \
            uct_md_mem_attr_t *mem_attr) \
    { \
        return _mem_query(md, address, length, mem_attr); \
    }
#endif

/*
 * The dma-buf fields of a mem_query answer, where this UCX has them: the
 * fd and offset that @a get_fd gives for the queried range, or
 * UCT_DMABUF_FD_INVALID when it fails; nothing where they do not exist.
 */
typedef ucs_status_t (*uct_gaudi_dmabuf_get_func_t)(void *arg, int *fd_p,
                                                    uint64_t *offset_p);
void uct_gaudi_mem_attr_dmabuf(uct_md_mem_attr_t *mem_attr,
                               uct_gaudi_dmabuf_get_func_t get_fd, void *arg);

#if UCT_GAUDI_HAVE_MEM_ALLOC_SYS_DEV
/*
 * One device per process: the MD allocates on its own device, which is
 * what it reports as the memory's sys_dev; a request for another device
 * is refused.
 */
#  define UCT_GAUDI_MEM_ALLOC_ADAPTER(_name, _mem_alloc, _md_sys_dev) \
    static ucs_status_t _name( \
            uct_md_h md, size_t *length_p, void **address_p, \
            ucs_memory_type_t mem_type, ucs_sys_device_t sys_dev, \
            unsigned flags, const char *alloc_name, uct_mem_h *memh_p) \
    { \
        if ((sys_dev != UCS_SYS_DEVICE_ID_UNKNOWN) && \
            (sys_dev != _md_sys_dev(md))) { \
            return UCS_ERR_UNSUPPORTED; \
        } \
        return _mem_alloc(md, length_p, address_p, mem_type, flags, \
                          alloc_name, memh_p); \
    }
#else
#  define UCT_GAUDI_MEM_ALLOC_ADAPTER(_name, _mem_alloc, _md_sys_dev) \
    static ucs_status_t _name( \
            uct_md_h md, size_t *length_p, void **address_p, \
            ucs_memory_type_t mem_type, unsigned flags, \
            const char *alloc_name, uct_mem_h *memh_p) \
    { \
        (void)_md_sys_dev; \
        return _mem_alloc(md, length_p, address_p, mem_type, flags, \
                          alloc_name, memh_p); \
    }
#endif

#if UCT_GAUDI_HAVE_RKEY_UNPACK_PARAMS
/* the parameters only hint at the remote device: the key says it all */
#  define UCT_GAUDI_RKEY_UNPACK_ADAPTER(_name, _rkey_unpack) \
    static ucs_status_t _name( \
            uct_component_t *component, const void *rkey_buffer, \
            const uct_rkey_unpack_params_t *params, uct_rkey_t *rkey_p, \
            void **handle_p) \
    { \
        return _rkey_unpack(component, rkey_buffer, rkey_p, handle_p); \
    }
#else
#  define UCT_GAUDI_RKEY_UNPACK_ADAPTER(_name, _rkey_unpack) \
    static ucs_status_t _name( \
            uct_component_t *component, const void *rkey_buffer, \
            uct_rkey_t *rkey_p, void **handle_p) \
    { \
        return _rkey_unpack(component, rkey_buffer, rkey_p, handle_p); \
    }
#endif

/*
 * Comparing remote keys (UCP orders and deduplicates them): the unpacked
 * key is a copy of the packed key, of type _key_t, so equal keys have
 * equal contents.
 */
#if UCT_GAUDI_HAVE_COMPONENT_RKEY_COMPARE
ucs_status_t uct_gaudi_rkey_compare(uct_rkey_t rkey1, uct_rkey_t rkey2,
                                    size_t key_size,
                                    const uct_rkey_compare_params_t *params,
                                    int *result);
#  define UCT_GAUDI_RKEY_COMPARE_ADAPTER(_name, _key_t) \
    static ucs_status_t _name( \
            uct_component_t *component, uct_rkey_t rkey1, uct_rkey_t rkey2, \
            const uct_rkey_compare_params_t *params, int *result) \
    { \
        return uct_gaudi_rkey_compare(rkey1, rkey2, sizeof(_key_t), params, \
                                      result); \
    }
#  define UCT_GAUDI_RKEY_COMPARE_OP(_name) .rkey_compare = _name,
#else
#  define UCT_GAUDI_RKEY_COMPARE_ADAPTER(_name, _key_t)
#  define UCT_GAUDI_RKEY_COMPARE_OP(_name)
#endif

/* MD op slots that exist only in some releases: none is offered */
#if UCT_GAUDI_HAVE_MD_IS_SOCKADDR_ACCESSIBLE
#  define UCT_GAUDI_MD_SOCKADDR_OP \
    .is_sockaddr_accessible = (uct_md_is_sockaddr_accessible_func_t) \
                                  ucs_empty_function_return_zero_int,
#else
#  define UCT_GAUDI_MD_SOCKADDR_OP
#endif
#if UCT_GAUDI_HAVE_MD_MEM_ATTACH
#  define UCT_GAUDI_MD_MEM_ATTACH_OP \
    .mem_attach             = (uct_md_mem_attach_func_t) \
                                  ucs_empty_function_return_unsupported,
#else
#  define UCT_GAUDI_MD_MEM_ATTACH_OP
#endif
#if UCT_GAUDI_HAVE_MD_MEM_ELEM_PACK
#  define UCT_GAUDI_MD_MEM_ELEM_PACK_OP \
    .mem_elem_pack          = (uct_md_mem_elem_pack_func_t) \
                                  ucs_empty_function_return_unsupported,
#else
#  define UCT_GAUDI_MD_MEM_ELEM_PACK_OP
#endif

#define UCT_GAUDI_MD_OPTIONAL_OPS \
    UCT_GAUDI_MD_SOCKADDR_OP \
    UCT_GAUDI_MD_MEM_ATTACH_OP \
    UCT_GAUDI_MD_MEM_ELEM_PACK_OP


/* Interface ops */

/* Fields of uct_perf_attr_t that only some releases have: the number of
 * endpoints that can transfer at once, and the bandwidth of the path */
void uct_gaudi_perf_attr_fill_ext(uct_perf_attr_t *perf_attr,
                                  const uct_ppn_bandwidth_t *path_bandwidth);

/*
 * Reachability in the v2 form: the transport's own check (the same iface
 * for gaudi_cpy, the same node and a peer device for gaudi_ipc), then the
 * requested scope.
 */
typedef int (*uct_gaudi_is_reachable_v1_func_t)(
        const uct_iface_h iface, const uct_device_addr_t *dev_addr,
        const uct_iface_addr_t *iface_addr);

#if UCT_GAUDI_HAVE_IS_REACHABLE_V2
int uct_gaudi_iface_is_reachable_v2(const uct_iface_h tl_iface,
                                    const uct_iface_is_reachable_params_t
                                    *params,
                                    uct_gaudi_is_reachable_v1_func_t check);
#  define UCT_GAUDI_IS_REACHABLE_ADAPTER(_name, _is_reachable) \
    static int _name( \
            const uct_iface_h tl_iface, \
            const uct_iface_is_reachable_params_t *params) \
    { \
        return uct_gaudi_iface_is_reachable_v2(tl_iface, params, \
                                               _is_reachable); \
    }
#  define UCT_GAUDI_IS_REACHABLE_V2_OP(_name) \
    .iface_is_reachable_v2 = _name,
#else
#  define UCT_GAUDI_IS_REACHABLE_ADAPTER(_name, _is_reachable)
#  define UCT_GAUDI_IS_REACHABLE_V2_OP(_name)
#endif

/*
 * Whether an endpoint is connected to the peer at the given addresses: an
 * endpoint of either transport reaches every peer its iface reaches (the
 * rkey tells the peer), so UCX's connect-to-iface answer holds.
 */
/* ep_check's parameter check; UCX 1.22 lets ep_check complete through
 * @a comp and no longer checks it */
#if UCT_GAUDI_HAVE_KEEPALIVE_CHECK_PARAM_COMP
#  define UCT_GAUDI_EP_CHECK_PARAM(_flags, _comp) \
    UCT_EP_KEEPALIVE_CHECK_PARAM(_flags, _comp)
#else
#  define UCT_GAUDI_EP_CHECK_PARAM(_flags, _comp) \
    UCT_EP_KEEPALIVE_CHECK_PARAM(_flags)
#endif

#if UCT_GAUDI_HAVE_EP_IS_CONNECTED
#  define UCT_GAUDI_EP_IS_CONNECTED_OP \
    .ep_is_connected       = uct_base_ep_is_connected,
#else
#  define UCT_GAUDI_EP_IS_CONNECTED_OP
#endif

#if UCT_GAUDI_HAVE_EP_INVALIDATE
#  define UCT_GAUDI_EP_INVALIDATE_OP \
    .ep_invalidate         = (uct_ep_invalidate_func_t) \
                                 ucs_empty_function_return_unsupported,
#else
#  define UCT_GAUDI_EP_INVALIDATE_OP
#endif

#if UCT_GAUDI_HAVE_EP_CONNECT_TO_EP_V2
#  define UCT_GAUDI_EP_CONNECT_TO_EP_V2_OP \
    .ep_connect_to_ep_v2   = (uct_ep_connect_to_ep_v2_func_t) \
                                 ucs_empty_function_return_unsupported,
#else
#  define UCT_GAUDI_EP_CONNECT_TO_EP_V2_OP
#endif

#if UCT_GAUDI_HAVE_IFACE_QUERY_V2
#  define UCT_GAUDI_IFACE_QUERY_V2_OP .iface_query_v2 = uct_iface_base_query_v2,
#else
#  define UCT_GAUDI_IFACE_QUERY_V2_OP
#endif

#if UCT_GAUDI_HAVE_EP_GET_DEVICE_EP
#  define UCT_GAUDI_EP_GET_DEVICE_EP_OP \
    .ep_get_device_ep      = (uct_ep_get_device_ep_func_t) \
                                 ucs_empty_function_return_unsupported,
#else
#  define UCT_GAUDI_EP_GET_DEVICE_EP_OP
#endif

#if UCT_GAUDI_HAVE_EP_PUT_SGL_ZCOPY
#  define UCT_GAUDI_EP_PUT_SGL_ZCOPY_OP \
    .ep_put_sgl_zcopy      = (uct_ep_put_sgl_zcopy_func_t) \
                                 ucs_empty_function_return_unsupported,
#else
#  define UCT_GAUDI_EP_PUT_SGL_ZCOPY_OP
#endif

/* The internal ops every transport fills alike, after its own; _is_v2 is
 * its UCT_GAUDI_IS_REACHABLE_ADAPTER */
#define UCT_GAUDI_IFACE_INTERNAL_OPS(_is_v2) \
    UCT_GAUDI_IFACE_QUERY_V2_OP \
    UCT_GAUDI_EP_INVALIDATE_OP \
    UCT_GAUDI_EP_CONNECT_TO_EP_V2_OP \
    UCT_GAUDI_IS_REACHABLE_V2_OP(_is_v2) \
    UCT_GAUDI_EP_IS_CONNECTED_OP \
    UCT_GAUDI_EP_GET_DEVICE_EP_OP \
    UCT_GAUDI_EP_PUT_SGL_ZCOPY_OP

#endif
