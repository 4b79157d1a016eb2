/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * UCX-version differences of UCS (and of the registration cache) that
 * every layer may use; those of UCT's component, MD and iface internals
 * are in base/gaudi_uct_compat.h. Nothing else tests versions.
 * Differences are decided by configure-time probes of the UCX source tree
 * (config/m4/ucx_probes.m4, results in uct_gaudi_ucx_features.h), never by
 * version numbers: UCX's internal API is not monotonic across releases.
 */

#ifndef UCT_GAUDI_COMPAT_H_
#define UCT_GAUDI_COMPAT_H_

#include <uct_gaudi_ucx_features.h>

#if !UCT_GAUDI_HAVE_UCS_RCACHE_CONFIG
/* the registration cache's configuration is UCT's on these releases */
#  include <uct/base/uct_md.h>
#endif
#include <ucs/config/parser.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/datastruct/queue.h>
#include <ucs/memory/memory_type.h>
#include <ucs/memory/rcache.h>
#include <ucs/sys/math.h>
#include <ucs/sys/stubs.h>
#include <ucs/time/time.h>
#include UCT_GAUDI_UCS_TOPO_H /* where this UCX has it */
#if UCT_GAUDI_HAVE_UCS_PTR_ARITH_H
#  include <ucs/sys/ptr_arith.h>
#endif


/* Memory type */

#if UCT_GAUDI_HAVE_MEMORY_TYPE_GAUDI
/* UCX has a memory type of its own for Gaudi */
#  define UCT_GAUDI_MEMORY_TYPE          UCS_MEMORY_TYPE_GAUDI
#  define UCT_GAUDI_MEMORY_TYPE_BORROWED 0
#else
/*
 * No Gaudi memory type: Gaudi memory is presented in the ROCM slot, which
 * stock distribution UCX never uses (no rocm module is built). ROCM, not
 * ROCM_MANAGED: UCP must never access it with the CPU
 * (UCS_MEMORY_TYPES_CPU_ACCESSIBLE, ucs/memory/memory_type.h).
 */
#  define UCT_GAUDI_MEMORY_TYPE          UCS_MEMORY_TYPE_ROCM
#  define UCT_GAUDI_MEMORY_TYPE_BORROWED 1
#endif

/* "rocm" where the slot is borrowed: what users pass to ucx_perftest -m */
#define UCT_GAUDI_MEMORY_TYPE_NAME ucs_memory_type_names[UCT_GAUDI_MEMORY_TYPE]


/* UCS utilities */

/* Fill a configuration registered with UCS_CONFIG_REGISTER_TABLE from the
 * environment (<env prefix><table prefix>*) */
#if UCT_GAUDI_HAVE_CONFIG_FILL_ENTRY
#  define UCT_GAUDI_CONFIG_FILL(_opts, _table, _env_prefix, _ignore) \
        ucs_config_parser_fill_opts(_opts, &_table##_config_entry, \
                                    _env_prefix, _ignore)
#else
#  define UCT_GAUDI_CONFIG_FILL(_opts, _table, _env_prefix, _ignore) \
        ucs_config_parser_fill_opts(_opts, _table, _env_prefix, \
                                    (_table##_config_entry).prefix, _ignore)
#endif

/* Name a system device in ucx_info's topology output */
#if UCT_GAUDI_HAVE_TOPO_NAME_PRIORITY
#  define uct_gaudi_topo_set_name(_sys_dev, _name) \
        ucs_topo_sys_device_set_name(_sys_dev, _name, 10)
#else
#  define uct_gaudi_topo_set_name(_sys_dev, _name) \
        ucs_topo_sys_device_set_name(_sys_dev, _name)
#endif

/* "auto" of a UCS_CONFIG_TYPE_BW value */
#ifdef UCS_CONFIG_BW_IS_AUTO
#  define UCT_GAUDI_CONFIG_BW_IS_AUTO(_v) UCS_CONFIG_BW_IS_AUTO(_v)
#else
#  define UCT_GAUDI_CONFIG_BW_IS_AUTO(_v) UCS_CONFIG_DBL_IS_AUTO(_v)
#endif


/* A memory pool of fixed-size elements, grown by chunks of 128 */
ucs_status_t uct_gaudi_mpool_init(ucs_mpool_t *mp, size_t elem_size,
                                  ucs_mpool_ops_t *ops, const char *name);

/* Tell UCS's memory type cache that [address, +size) is Gaudi memory */
#if UCT_GAUDI_HAVE_MEMTYPE_CACHE_MEM_FLAGS
#  define uct_gaudi_memtype_cache_update(_addr, _size, _mem_type, _sys_dev) \
        ucs_memtype_cache_update(_addr, _size, _mem_type, _sys_dev, \
                                 UCS_MEM_FLAG_REGISTRABLE)
#else
#  define uct_gaudi_memtype_cache_update(_addr, _size, _mem_type, _sys_dev) \
        ucs_memtype_cache_update(_addr, _size, _mem_type, _sys_dev)
#endif


/* Registration cache */

#if UCT_GAUDI_HAVE_UCS_RCACHE_CONFIG
typedef ucs_rcache_config_t uct_gaudi_rcache_config_t;
#  define UCT_GAUDI_RCACHE_CONFIG_TABLE ucs_config_rcache_table
#  define uct_gaudi_rcache_set_params   ucs_rcache_set_params
#else
typedef uct_md_rcache_config_t uct_gaudi_rcache_config_t;
#  define UCT_GAUDI_RCACHE_CONFIG_TABLE uct_md_config_rcache_table
#  define uct_gaudi_rcache_set_params   uct_md_set_rcache_params
#endif

/* Lookup overhead of the cache, seconds ("auto": UCX's x86 figure) */
static UCS_F_ALWAYS_INLINE double
uct_gaudi_rcache_overhead(const uct_gaudi_rcache_config_t *config)
{
    return (config->overhead == UCS_TIME_AUTO) ? 180e-9 :
           ucs_time_to_sec(config->overhead);
}

/*
 * Region alignment: set in the parameters (and configurable, as
 * RCACHE_ADDR_ALIGN) where the cache has one alignment, passed to every
 * lookup where each lookup has its own.
 */
#if UCT_GAUDI_HAVE_RCACHE_PARAMS_ALIGNMENT
#  define UCT_GAUDI_RCACHE_CONFIG_DEFAULTS "RCACHE_ADDR_ALIGN=4096"
#else
#  define UCT_GAUDI_RCACHE_CONFIG_DEFAULTS ""
#endif

static UCS_F_ALWAYS_INLINE void
uct_gaudi_rcache_params_align(ucs_rcache_params_t *params, size_t alignment)
{
#if UCT_GAUDI_HAVE_RCACHE_PARAMS_ALIGNMENT
    params->alignment     = ucs_max(params->alignment, alignment);
    params->max_alignment = params->alignment;
#endif
}

#if UCT_GAUDI_HAVE_RCACHE_GET_ALIGNMENT
#  define uct_gaudi_rcache_get(_rcache, _addr, _len, _align, _prot, _arg, \
                               _region_p) \
        ucs_rcache_get(_rcache, _addr, _len, _align, _prot, _arg, _region_p)
#else
#  define uct_gaudi_rcache_get(_rcache, _addr, _len, _align, _prot, _arg, \
                               _region_p) \
        ucs_rcache_get(_rcache, _addr, _len, _prot, _arg, _region_p)
#endif

/* The merge op, where the cache merges overlapping regions */
#if UCT_GAUDI_HAVE_RCACHE_MERGE
#  define UCT_GAUDI_RCACHE_MERGE_OP(_func) .merge = _func,
#else
#  define UCT_GAUDI_RCACHE_MERGE_OP(_func)
#endif

#endif
