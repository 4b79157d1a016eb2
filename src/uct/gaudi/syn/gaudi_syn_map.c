/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Host maps of the SynapseAI backend (docs/synapse.md, "Host maps").
 * SynapseAI keeps one table of host entries per process, shared with the
 * application: no reference count, an entry is keyed by its start, a map
 * inside the entry that holds its start succeeds and creates nothing, and
 * every lookup (map, unmap, copy translation) looks only at the entry with
 * the greatest start <= the address. The module cannot read that table,
 * so it asks it: a one-byte copy from an address is translated by the
 * same rule ("is the address inside its entry?"), and once it is, a map
 * of a range starting there can no longer create anything ("does that
 * entry hold the whole range?"). A map of a start that no entry holds
 * creates an entry when it succeeds: only such starts are the module's,
 * and only those it ever unmaps.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/syn/gaudi_syn.h>

#include <sched.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <inttypes.h>


/* Bytes of device memory the probe copies land in */
#define UCT_GAUDI_SYN_PROBE_SIZE 128


/*
 * An entry the module created: [start, end). The registrations it serves
 * hold its address as their key. Once the memory under it is unmapped
 * the entry leaves SynapseAI's table at once ("gone"): SynapseAI pinned
 * the pages, and an application's synHostMap or synHostMalloc of new
 * memory at that address would otherwise find it, succeed without making
 * an entry, and have its copies use the old pages (docs/synapse.md, "Host
 * maps"). The registrations still hold it until they are put.
 */
typedef struct uct_gaudi_syn_map {
    struct uct_gaudi_syn_map *next;
    uintptr_t                start;   /* SynapseAI's key */
    uintptr_t                end;
    unsigned                 refs;    /* registrations served by it */
    int                      gone;    /* unmapped: not in SynapseAI's table */
} uct_gaudi_syn_map_t;


/* The list's own lock, for the memory event handlers (which may run
 * inside malloc or inside SynapseAI): held for list walks only */
static void uct_gaudi_syn_maps_lock(uct_gaudi_syn_maps_t *maps)
{
    while (__sync_lock_test_and_set(&maps->spin, 1)) {
        while (maps->spin) {
            sched_yield();
        }
    }
}

static void uct_gaudi_syn_maps_unlock(uct_gaudi_syn_maps_t *maps)
{
    __sync_lock_release(&maps->spin);
}

/* The module's live entry with the greatest start <= @addr, or NULL */
static uct_gaudi_syn_map_t *
uct_gaudi_syn_map_nearest(uct_gaudi_syn_maps_t *maps, uintptr_t addr)
{
    uct_gaudi_syn_map_t *map, *best = NULL;

    uct_gaudi_syn_maps_lock(maps);
    for (map = maps->head; map != NULL; map = map->next) {
        if (!map->gone && (map->start <= addr) &&
            ((best == NULL) || (map->start > best->start))) {
            best = map;
        }
    }
    uct_gaudi_syn_maps_unlock(maps);
    return best;
}

/* Whether one of the module's entries starts in (from, to] */
static int uct_gaudi_syn_map_starts_in(uct_gaudi_syn_maps_t *maps,
                                       uintptr_t from, uintptr_t to)
{
    uct_gaudi_syn_map_t *map;
    int found = 0;

    uct_gaudi_syn_maps_lock(maps);
    for (map = maps->head; (map != NULL) && !found; map = map->next) {
        found = !map->gone && (map->start > from) && (map->start <= to);
    }
    uct_gaudi_syn_maps_unlock(maps);
    return found;
}

static ucs_status_t uct_gaudi_syn_probe_init(const uct_gaudi_syn_t *syn,
                                             uct_gaudi_syn_device_t device,
                                             uct_gaudi_syn_maps_t *maps)
{
    ucs_status_t status;

    if (maps->probe_stream != NULL) {
        return UCS_OK;
    }

    status = uct_gaudi_syn_device_malloc(syn, device,
                                         UCT_GAUDI_SYN_PROBE_SIZE,
                                         &maps->probe_dev);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gaudi_syn_stream_create(syn, device, &maps->probe_stream);
    if (status != UCS_OK) {
        (void)uct_gaudi_syn_device_free(syn, device, maps->probe_dev);
        maps->probe_dev = 0;
    }
    return status;
}

/*
 * Whether @addr lies inside the entry SynapseAI finds for it: a one-byte
 * copy from it is translated by exactly that lookup, and either fails at
 * the call (nothing queued) or reads one byte into the probe buffer
 */
static ucs_status_t uct_gaudi_syn_covered(const uct_gaudi_syn_t *syn,
                                          uct_gaudi_syn_device_t device,
                                          uct_gaudi_syn_maps_t *maps,
                                          uintptr_t addr, int *covered_p)
{
    ucs_status_t status;

    status = uct_gaudi_syn_probe_init(syn, device, maps);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gaudi_syn_memcpy_async(syn, maps->probe_stream,
                                        maps->probe_dev, addr, 1,
                                        UCT_GAUDI_SYN_HOST_TO_DRAM);
    if (status == UCS_ERR_INVALID_ADDR) {
        *covered_p = 0;
        return UCS_OK;
    }
    if (status != UCS_OK) {
        return status;
    }

    *covered_p = 1;
    return uct_gaudi_syn_stream_sync(syn, maps->probe_stream);
}

/*
 * With @addr inside its entry: whether that entry holds all of
 * [addr, +length). The map then finds the entry (success, nothing made)
 * or refuses a range that runs past it (synInvalidArgument); it cannot
 * create anything.
 */
static ucs_status_t uct_gaudi_syn_holds(const uct_gaudi_syn_t *syn,
                                        uct_gaudi_syn_device_t device,
                                        uintptr_t addr, size_t length,
                                        int *holds_p)
{
    uct_gaudi_syn_status_t ret;

    ret = syn->ops.host_map(device, length, (const void*)addr);
    if ((ret != UCT_GAUDI_SYN_SUCCESS) &&
        (ret != UCT_GAUDI_SYN_INVALID_ARGUMENT)) {
        return uct_gaudi_syn_status(ret);
    }

    *holds_p = (ret == UCT_GAUDI_SYN_SUCCESS);
    return UCS_OK;
}

/*
 * Create an entry [start, end) where no entry holds @start (the caller
 * probed it). UCS_ERR_ALREADY_EXISTS: an entry appeared there meanwhile
 * (synInvalidArgument); nothing of ours then.
 */
static ucs_status_t uct_gaudi_syn_map_create(const uct_gaudi_syn_t *syn,
                                             uct_gaudi_syn_device_t device,
                                             uct_gaudi_syn_maps_t *maps,
                                             uintptr_t start, uintptr_t end,
                                             uct_gaudi_syn_map_t **map_p)
{
    uct_gaudi_syn_map_t *map;
    uct_gaudi_syn_status_t ret;

    map = ucs_malloc(sizeof(*map), "gaudi syn map");
    if (map == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    ret = syn->ops.host_map(device, end - start, (const void*)start);
    if (ret != UCT_GAUDI_SYN_SUCCESS) {
        ucs_free(map);
        if (ret == UCT_GAUDI_SYN_INVALID_ARGUMENT) {
            return UCS_ERR_ALREADY_EXISTS;
        }
        ucs_error("gaudi: synHostMap of host 0x%" PRIxPTR "..0x%" PRIxPTR
                  " failed: %s (%s, %d)", start, end,
                  uct_gaudi_syn_status_str(ret),
                  uct_gaudi_syn_status_name(ret), ret);
        return uct_gaudi_syn_status(ret);
    }

    map->start = start;
    map->end   = end;
    map->refs  = 0;
    map->gone  = 0;
    uct_gaudi_syn_maps_lock(maps);
    map->next  = maps->head;
    maps->head = map;
    ++maps->live;
    uct_gaudi_syn_maps_unlock(maps);
    *map_p     = map;
    return UCS_OK;
}

static void uct_gaudi_syn_map_remove(const uct_gaudi_syn_t *syn,
                                     uct_gaudi_syn_device_t device,
                                     uct_gaudi_syn_maps_t *maps,
                                     uct_gaudi_syn_map_t *map)
{
    uct_gaudi_syn_map_t **mp;
    uct_gaudi_syn_status_t ret;
    int holds = 0;

    int gone;

    uct_gaudi_syn_maps_lock(maps);
    for (mp = &maps->head; *mp != map; mp = &(*mp)->next) {
    }
    *mp  = map->next;
    gone = map->gone;
    if (!gone) {
        --maps->live;
    }
    uct_gaudi_syn_maps_unlock(maps);
    if (gone) {
        ucs_free(map);   /* out of SynapseAI's table already */
        return;
    }

    /* the application may have unmapped our entry (its own map inside it
     * had made nothing) and mapped a smaller buffer at the same start:
     * that entry refuses our range, and is left alone */
    if ((uct_gaudi_syn_holds(syn, device, map->start, map->end - map->start,
                             &holds) == UCS_OK) && !holds) {
        ucs_debug("gaudi: host 0x%" PRIxPTR " is now another entry's start: "
                  "not unmapped", map->start);
    } else {
        /* quiet: also runs at exit, when the application may have
         * released the device already */
        ret = syn->ops.host_unmap(device, (void*)map->start);
        if (ret != UCT_GAUDI_SYN_SUCCESS) {
            ucs_debug("gaudi: synHostUnmap 0x%" PRIxPTR ": %s", map->start,
                      uct_gaudi_syn_status_name(ret));
        }
    }
    ucs_free(map);
}

/* Serve [addr, +length) by a new entry of ours: from its first page if
 * that makes the range translatable, else from @addr itself */
static ucs_status_t uct_gaudi_syn_map_new(const uct_gaudi_syn_t *syn,
                                          uct_gaudi_syn_device_t device,
                                          uct_gaudi_syn_maps_t *maps,
                                          uintptr_t addr, size_t length,
                                          uintptr_t page_start,
                                          uintptr_t page_end,
                                          uct_gaudi_syn_map_t **map_p)
{
    uct_gaudi_syn_map_t *map;
    ucs_status_t status;
    int covered = 0;

    if ((page_start < addr) &&
        !uct_gaudi_syn_map_starts_in(maps, page_start, addr)) {
        status = uct_gaudi_syn_covered(syn, device, maps, page_start,
                                       &covered);
        if (status != UCS_OK) {
            return status;
        }

        if (!covered) {
            status = uct_gaudi_syn_map_create(syn, device, maps, page_start,
                                              page_end, &map);
            if (status == UCS_OK) {
                /* an entry of someone else's may start in
                 * (page_start, addr] and still answer for addr */
                status = uct_gaudi_syn_covered(syn, device, maps, addr,
                                               &covered);
                if ((status == UCS_OK) && covered) {
                    *map_p = map;
                    return UCS_OK;
                }
                uct_gaudi_syn_map_remove(syn, device, maps, map);
            } else if (status != UCS_ERR_ALREADY_EXISTS) {
                return status;
            }
        }
    }

    /* an entry at addr itself answers for every address from there */
    return uct_gaudi_syn_map_create(syn, device, maps, addr, page_end,
                                    map_p);
}

/* The first live entry of the module over [start, end), marked gone;
 * its start, 0 if none */
static uintptr_t uct_gaudi_syn_maps_take(uct_gaudi_syn_maps_t *maps,
                                         uintptr_t start, uintptr_t end,
                                         unsigned *refs_p)
{
    uct_gaudi_syn_map_t *map;
    uintptr_t found = 0;

    uct_gaudi_syn_maps_lock(maps);
    for (map = maps->head; map != NULL; map = map->next) {
        if (!map->gone && (map->end > start) && (map->start < end)) {
            map->gone = 1;
            --maps->live;
            found     = map->start;
            *refs_p   = map->refs;
            break;
        }
    }
    uct_gaudi_syn_maps_unlock(maps);
    return found;
}

int uct_gaudi_syn_maps_overlap(uct_gaudi_syn_maps_t *maps, uintptr_t start,
                               uintptr_t end)
{
    uct_gaudi_syn_map_t *map;
    int found = 0;

    if (maps->live == 0) {
        return 0;
    }
    uct_gaudi_syn_maps_lock(maps);
    for (map = maps->head; (map != NULL) && !found; map = map->next) {
        found = !map->gone && (map->end > start) && (map->start < end);
    }
    uct_gaudi_syn_maps_unlock(maps);
    return found;
}

void uct_gaudi_syn_maps_unmapped(uct_gaudi_syn_maps_t *maps,
                                 uintptr_t start, uintptr_t end)
{
    unsigned n;

    uct_gaudi_syn_maps_lock(maps);
    n = maps->npending;
    if (n == UCT_GAUDI_SYN_MAPS_PENDING) {
        /* full: the last slot grows to cover this range too */
        --n;
        start = ucs_min(start, maps->pending[n].start);
        end   = ucs_max(end, maps->pending[n].end);
    }
    maps->pending[n].start = start;
    maps->pending[n].end   = end;
    maps->npending         = n + 1;
    uct_gaudi_syn_maps_unlock(maps);
}

void uct_gaudi_syn_maps_flush(const uct_gaudi_syn_t *syn,
                              uct_gaudi_syn_device_t device,
                              uct_gaudi_syn_maps_t *maps)
{
    uct_gaudi_syn_status_t ret;
    uintptr_t start, end, key;
    unsigned refs = 0;

    while (maps->npending > 0) {
        uct_gaudi_syn_maps_lock(maps);
        if (maps->npending == 0) {
            uct_gaudi_syn_maps_unlock(maps);
            break;
        }
        --maps->npending;
        start = maps->pending[maps->npending].start;
        end   = maps->pending[maps->npending].end;
        uct_gaudi_syn_maps_unlock(maps);
        while ((key = uct_gaudi_syn_maps_take(maps, start, end, &refs)) != 0) {
            ret = syn->ops.host_unmap(device, (void*)key);
            ucs_debug("gaudi: host 0x%" PRIxPTR " unmapped under %u "
                      "registration(s): synHostUnmap %s", key, refs,
                      uct_gaudi_syn_status_name(ret));
        }
    }
}

ucs_status_t uct_gaudi_syn_map_get(const uct_gaudi_syn_t *syn,
                                   uct_gaudi_syn_device_t device,
                                   uct_gaudi_syn_maps_t *maps,
                                   uintptr_t addr, size_t length,
                                   uintptr_t page_start, uintptr_t page_end,
                                   uct_gaudi_syn_map_kind_t *kind_p,
                                   uintptr_t *key_p)
{
    uct_gaudi_syn_map_t *map;
    ucs_status_t status;
    int covered = 0, holds = 0;

    *key_p = 0;
    uct_gaudi_syn_maps_flush(syn, device, maps);
    map = uct_gaudi_syn_map_nearest(maps, addr);

    if ((map != NULL) && (addr < map->end)) {
        if (addr + length <= map->end) {
            goto own;       /* our nearest entry holds it */
        }
        /* it starts inside our entry and runs past it: no entry can start
         * there, and growing ours would pull the pages from under copies
         * in flight; its copies are staged */
        *kind_p = UCT_GAUDI_SYN_MAP_NONE;
        return UCS_OK;
    }

    status = uct_gaudi_syn_covered(syn, device, maps, addr, &covered);
    if (status != UCS_OK) {
        return status;
    }

    if (!covered) {
        status = uct_gaudi_syn_map_new(syn, device, maps, addr, length,
                                       page_start, page_end, &map);
        if (status == UCS_OK) {
            goto own;
        }
        if (status != UCS_ERR_ALREADY_EXISTS) {
            return status;
        }
        /* an entry appeared at addr meanwhile: it answers now */
    }

    status = uct_gaudi_syn_holds(syn, device, addr, length, &holds);
    if (status != UCS_OK) {
        return status;
    }

    /* the application's entry serves it as it is; or it starts inside one
     * and runs past it, and no entry can be made there */
    *kind_p = holds ? UCT_GAUDI_SYN_MAP_APP : UCT_GAUDI_SYN_MAP_NONE;
    return UCS_OK;

own:
    ++map->refs;
    *kind_p = UCT_GAUDI_SYN_MAP_OWN;
    *key_p  = (uintptr_t)map;
    return UCS_OK;
}

uintptr_t uct_gaudi_syn_map_key_start(uintptr_t key)
{
    return ((const uct_gaudi_syn_map_t*)key)->start;
}

ucs_status_t uct_gaudi_syn_map_put(const uct_gaudi_syn_t *syn,
                                   uct_gaudi_syn_device_t device,
                                   uct_gaudi_syn_maps_t *maps, uintptr_t key)
{
    uct_gaudi_syn_map_t *map;

    uct_gaudi_syn_maps_flush(syn, device, maps);
    uct_gaudi_syn_maps_lock(maps);
    for (map = maps->head; (map != NULL) && ((uintptr_t)map != key);
         map = map->next) {
    }
    uct_gaudi_syn_maps_unlock(maps);
    if (map == NULL) {
        ucs_error("gaudi: no synHostMap entry of the module has key 0x%"
                  PRIxPTR, key);
        return UCS_ERR_INVALID_PARAM;
    }

    if (--map->refs == 0) {
        uct_gaudi_syn_map_remove(syn, device, maps, map);
    }
    return UCS_OK;
}

void uct_gaudi_syn_maps_cleanup(const uct_gaudi_syn_t *syn,
                                uct_gaudi_syn_device_t device,
                                uct_gaudi_syn_maps_t *maps)
{
    uct_gaudi_syn_map_t *map;

    maps->npending = 0;   /* every entry goes anyway */
    while ((map = maps->head) != NULL) {
        ucs_debug("gaudi: synHostMap 0x%" PRIxPTR "..0x%" PRIxPTR " still "
                  "held (%u) at release", map->start, map->end, map->refs);
        uct_gaudi_syn_map_remove(syn, device, maps, map);
    }
    if (maps->probe_stream != NULL) {
        /* quiet, as above: the device may be gone with its streams */
        (void)syn->ops.stream_destroy(maps->probe_stream);
        (void)syn->ops.device_free(device, maps->probe_dev, 0);
        maps->probe_stream = NULL;
        maps->probe_dev    = 0;
    }
}
