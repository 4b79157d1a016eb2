/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Host maps of the SynapseAI backend (docs/synapse.md, "Host maps").
 * SynapseAI keys a synHostMap by the buffer's start address: mapping a
 * buffer that starts where a live map starts only takes a reference, it
 * never grows the map. The module therefore keeps its own table of what it
 * mapped on the device: a range inside a live map reuses it, and a new map
 * never starts where one of the module's live maps starts.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/syn/gaudi_syn.h>

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <inttypes.h>


/* One synHostMap of the module */
typedef struct uct_gaudi_syn_map {
    struct uct_gaudi_syn_map *next;
    uintptr_t                start;   /* SynapseAI's key */
    uintptr_t                end;
    unsigned                 refs;
} uct_gaudi_syn_map_t;


static uct_gaudi_syn_map_t **
uct_gaudi_syn_map_find(uct_gaudi_syn_maps_t *maps, uintptr_t start)
{
    uct_gaudi_syn_map_t **mp;

    for (mp = &maps->head; (*mp != NULL) && ((*mp)->start != start);
         mp = &(*mp)->next) {
    }
    return mp;
}

ucs_status_t uct_gaudi_syn_map_get(const uct_gaudi_syn_t *syn,
                                   uct_gaudi_syn_device_t device,
                                   uct_gaudi_syn_maps_t *maps,
                                   uintptr_t addr, size_t length,
                                   uintptr_t page_start, uintptr_t page_end,
                                   uintptr_t *key_p)
{
    uintptr_t cand[2] = {page_start, addr};
    uintptr_t end[2]  = {page_end, addr + length};
    uct_gaudi_syn_map_t *map;
    ucs_status_t status;
    int i;

    /* inside a live map: the same translation serves it */
    for (map = maps->head; map != NULL; map = map->next) {
        if ((map->start <= addr) && (addr + length <= map->end)) {
            ++map->refs;
            *key_p = map->start;
            return UCS_OK;
        }
    }

    /* a start no live map of ours has: the whole pages, else the exact
     * range (a buffer re-allocated larger at the same address) */
    for (i = 0; i < 2; i++) {
        if (*uct_gaudi_syn_map_find(maps, cand[i]) != NULL) {
            continue;
        }

        map = ucs_malloc(sizeof(*map), "gaudi syn map");
        if (map == NULL) {
            return UCS_ERR_NO_MEMORY;
        }

        status = uct_gaudi_syn_host_map(syn, device, (void*)cand[i],
                                        end[i] - cand[i]);
        if (status != UCS_OK) {
            ucs_free(map);
            return status;
        }

        map->start = cand[i];
        map->end   = end[i];
        map->refs  = 1;
        map->next  = maps->head;
        maps->head = map;
        *key_p     = map->start;
        return UCS_OK;
    }

    ucs_error("gaudi: host range 0x%" PRIxPTR "+%zu cannot be mapped with "
              "synHostMap: a smaller live map already starts at 0x%" PRIxPTR
              " (and at 0x%" PRIxPTR "), and SynapseAI keys maps by their "
              "start address; release that registration first", addr,
              length, page_start, addr);
    return UCS_ERR_ALREADY_EXISTS;
}

ucs_status_t uct_gaudi_syn_map_put(const uct_gaudi_syn_t *syn,
                                   uct_gaudi_syn_device_t device,
                                   uct_gaudi_syn_maps_t *maps, uintptr_t key)
{
    uct_gaudi_syn_map_t **mp = uct_gaudi_syn_map_find(maps, key);
    uct_gaudi_syn_map_t *map = *mp;

    if (map == NULL) {
        ucs_error("gaudi: no synHostMap of the module starts at 0x%" PRIxPTR,
                  key);
        return UCS_ERR_INVALID_PARAM;
    }

    if (--map->refs > 0) {
        return UCS_OK;
    }

    *mp = map->next;
    ucs_free(map);
    return uct_gaudi_syn_host_unmap(syn, device, (void*)key);
}

void uct_gaudi_syn_maps_cleanup(const uct_gaudi_syn_t *syn,
                                uct_gaudi_syn_device_t device,
                                uct_gaudi_syn_maps_t *maps)
{
    uct_gaudi_syn_map_t *map;

    while ((map = maps->head) != NULL) {
        ucs_debug("gaudi: synHostMap 0x%" PRIxPTR "..0x%" PRIxPTR " still "
                  "held (%u) at release", map->start, map->end, map->refs);
        maps->head = map->next;
        (void)uct_gaudi_syn_host_unmap(syn, device, (void*)map->start);
        ucs_free(map);
    }
}
