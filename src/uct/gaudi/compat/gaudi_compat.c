/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The UCS adapters declared in gaudi_compat.h.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/compat/gaudi_compat.h>

#include <ucs/sys/sys.h>
#include <limits.h>


ucs_status_t uct_gaudi_mpool_init(ucs_mpool_t *mp, size_t elem_size,
                                  ucs_mpool_ops_t *ops, const char *name)
{
#if UCT_GAUDI_HAVE_MPOOL_PARAMS
    ucs_mpool_params_t params;

    ucs_mpool_params_reset(&params);
    params.elem_size       = elem_size;
    params.alignment       = UCS_SYS_CACHE_LINE_SIZE;
    params.elems_per_chunk = 128;
    params.max_elems       = UINT_MAX;
    params.ops             = ops;
    params.name            = name;
    return ucs_mpool_init(&params, mp);
#else
    return ucs_mpool_init(mp, 0, elem_size, 0, UCS_SYS_CACHE_LINE_SIZE, 128,
                          UINT_MAX, ops, name);
#endif
}
