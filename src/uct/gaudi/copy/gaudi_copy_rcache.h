/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * gaudi_copy host memory registration: pin + map into the device MMU
 * (MAP USERPTR, facts 3.3), directly or through a ucs_rcache that is
 * invalidated by UCM VM_UNMAPPED events. Design: docs/md.md.
 */

#ifndef UCT_GAUDI_COPY_RCACHE_H_
#define UCT_GAUDI_COPY_RCACHE_H_

#include "gaudi_copy_md.h"


/* A host registration in the cache; its memh is what UCT users get */
typedef struct uct_gaudi_copy_rcache_region {
    ucs_rcache_region_t   super;
    uct_gaudi_copy_memh_t memh;
} uct_gaudi_copy_rcache_region_t;


/* MAP USERPTR of the pages of [addr, addr+len); fills memh (no registry) */
ucs_status_t uct_gaudi_copy_host_map(uct_gaudi_copy_heap_t *heap, void *addr,
                                     size_t len, unsigned flags,
                                     uct_gaudi_copy_memh_t *memh);

/* UNMAP of a host memh (skipped in a fork child: the parent's mapping) */
void uct_gaudi_copy_host_unmap(uct_gaudi_copy_heap_t *heap,
                               uct_gaudi_copy_memh_t *memh);

/* Create md->rcache per config (try/yes/no); md->rcache NULL if off */
ucs_status_t
uct_gaudi_copy_rcache_init(uct_gaudi_copy_md_t *md,
                           const uct_gaudi_copy_md_config_t *config);

void uct_gaudi_copy_rcache_cleanup(uct_gaudi_copy_md_t *md);

/* Registration of host memory through the cache */
ucs_status_t uct_gaudi_copy_rcache_reg(uct_gaudi_copy_md_t *md, void *addr,
                                       size_t len, unsigned flags,
                                       uct_gaudi_copy_memh_t **memh_p);

/* Drop one reference; @a memh must be a valid HOST_RCACHE memh whose
 * user_refs the caller already decremented under heap->lock */
void uct_gaudi_copy_rcache_put(uct_gaudi_copy_md_t *md,
                               uct_gaudi_copy_memh_t *memh);

#endif
